/**
 * Arrivals travel in batches of parallel arrays rather than one object per
 * event: a trace of ten million lines then costs a few reused buffers, not
 * ten million objects.
 */
export interface EventBatch {
  /** Arrival times in milliseconds from the start of the timeline, non-decreasing. */
  readonly timesMs: Float64Array;
  /** Tokens each event asks for. */
  readonly costs: Float64Array;
  /** Each event's key (client, API key), when the source has keys. */
  readonly keys: Array<string | undefined> | undefined;
  /** How many entries of the arrays are filled. */
  readonly count: number;
}

/** Where arrivals come from: a pattern or a trace, read in order, batch by batch. */
export type ArrivalSource = AsyncIterable<EventBatch>;

/** A reusable batch being filled. */
export class BatchBuilder {
  readonly timesMs: Float64Array;
  readonly costs: Float64Array;
  readonly keys: Array<string | undefined> | undefined;
  count = 0;

  constructor(
    readonly capacity: number,
    withKeys: boolean,
  ) {
    this.timesMs = new Float64Array(capacity);
    this.costs = new Float64Array(capacity);
    this.keys = withKeys ? new Array<string | undefined>(capacity) : undefined;
  }

  get full(): boolean {
    return this.count >= this.capacity;
  }

  push(timeMs: number, cost: number, key: string | undefined): void {
    const i = this.count++;
    this.timesMs[i] = timeMs;
    this.costs[i] = cost;
    if (this.keys) this.keys[i] = key;
  }

  /** A view of what was filled so far; the builder may be reused once the view is consumed. */
  take(): EventBatch {
    const batch: EventBatch = { timesMs: this.timesMs, costs: this.costs, keys: this.keys, count: this.count };
    this.count = 0;
    return batch;
  }
}
