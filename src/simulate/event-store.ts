import type { ArrivalSource, EventBatch } from "./event-batch.js";

/**
 * Arrivals held in memory, for `--suggest`, which replays them once per
 * candidate: 16 bytes an event (plus the key strings), so a million events
 * take about 16 MB.
 */
export class EventStore {
  #timesMs = new Float64Array(4096);
  #costs = new Float64Array(4096);
  #keys: Array<string | undefined> | undefined;
  #count = 0;
  maxCost = 0;
  totalCost = 0;

  get count(): number {
    return this.#count;
  }

  append(batch: EventBatch): void {
    const needed = this.#count + batch.count;
    if (needed > this.#timesMs.length) {
      let size = this.#timesMs.length;
      while (size < needed) size *= 2;
      const times = new Float64Array(size);
      times.set(this.#timesMs.subarray(0, this.#count));
      const costs = new Float64Array(size);
      costs.set(this.#costs.subarray(0, this.#count));
      this.#timesMs = times;
      this.#costs = costs;
    }
    this.#timesMs.set(batch.timesMs.subarray(0, batch.count), this.#count);
    this.#costs.set(batch.costs.subarray(0, batch.count), this.#count);
    if (batch.keys) {
      this.#keys ??= new Array<string | undefined>(this.#count).fill(undefined);
      for (let i = 0; i < batch.count; i++) this.#keys.push(batch.keys[i]);
    }
    for (let i = 0; i < batch.count; i++) {
      const cost = batch.costs[i]!;
      this.totalCost += cost;
      if (cost > this.maxCost) this.maxCost = cost;
    }
    this.#count = needed;
  }

  /** The time of the last arrival. */
  get lastMs(): number {
    return this.#count === 0 ? 0 : this.#timesMs[this.#count - 1]!;
  }

  /** Everything as one batch (a view, not a copy). */
  asBatch(): EventBatch {
    return { timesMs: this.#timesMs, costs: this.#costs, keys: this.#keys, count: this.#count };
  }

  static async collect(source: ArrivalSource): Promise<EventStore> {
    const store = new EventStore();
    for await (const batch of source) store.append(batch);
    return store;
  }
}

/** A stored batch as a source, for the ordinary simulation after a search. */
export async function* storedArrivals(store: EventStore): ArrivalSource {
  yield store.asBatch();
}
