import { LimitSetLimiter } from "../../core/limit-set-limiter.js";
import { type LimitReport, limitReports } from "../../core/limit-report.js";
import type { Limiter } from "../../core/limiter.js";
import type { ByteBucketSpec, Direction, LimiterFactory } from "../../proxy/bucket-pool.js";

/**
 * The waits each limit of one direction's set set, over every set of that
 * direction (the link's, or each client's and connection's): for --stats'
 * `limits` and `limitedBy`, as pipe and run give them. Private sets are read
 * while open and added up when closed; a store's sets tell each lease's wait.
 */
export class SetWaits {
  readonly spec: ByteBucketSpec;
  readonly #closedMs: number[];
  readonly #open = new Set<LimitSetLimiter>();

  constructor(spec: ByteBucketSpec) {
    this.spec = spec;
    this.#closedMs = spec.limits.map(() => 0);
  }

  /** A lease's wait on a store, and the limits (from 1) that set it. */
  add(limitedBy: readonly number[], waitMs: number): void {
    for (const number of limitedBy) if (this.#closedMs[number - 1] !== undefined) this.#closedMs[number - 1]! += waitMs;
  }

  /** Counts a private set's waits from now; its `close` adds them up for good. */
  track(limiter: Limiter): () => void {
    if (!(limiter instanceof LimitSetLimiter)) return () => {};
    this.#open.add(limiter);
    return () => {
      if (!this.#open.delete(limiter)) return;
      this.#closedMs.forEach((_, index) => (this.#closedMs[index]! += limiter.waitedMs(index)));
    };
  }

  waitedMs(index: number): number {
    let ms = this.#closedMs[index] ?? 0;
    for (const limiter of this.#open) ms += limiter.waitedMs(index);
    return ms;
  }

  reports(): LimitReport[] {
    return limitReports(this.spec.limits, (index) => this.waitedMs(index));
  }
}

/** Each limited direction's tally, when it is a set (one bucket alone has none, as in pipe and run). */
export type DirectionWaits = Partial<Record<Direction, SetWaits>>;

export function directionWaits(up: ByteBucketSpec | undefined, down: ByteBucketSpec | undefined): DirectionWaits {
  const isSet = (spec: ByteBucketSpec | undefined) => spec !== undefined && !(spec.limits.length === 1 && spec.limits[0]!.kind === "bucket");
  return { ...(isSet(up) && { up: new SetWaits(up!) }), ...(isSet(down) && { down: new SetWaits(down!) }) };
}

/** `open`, with each private set it opens counted in `waits` while it lives. */
export function countingWaits(open: LimiterFactory, waits: DirectionWaits): LimiterFactory {
  return async (key, direction, spec) => {
    const opened = await open(key, direction, spec);
    const untrack = waits[direction]?.track(opened.limiter) ?? (() => {});
    return {
      limiter: opened.limiter,
      close: async () => {
        untrack();
        await opened.close();
      },
    };
  };
}
