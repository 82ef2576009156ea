import { FakeClock } from "../core/clock.js";
import type { TokenKind } from "../core/format.js";
import { KeyTable } from "../core/key-table.js";
import { LimitSet } from "../core/limit-set.js";
import type { ClassSpec } from "../core/class-spec.js";
import type { LimitSpec } from "../core/limit-spec.js";

export type Policy = "drop" | "queue";

/** What a token is: one event, or one byte (costs are sizes). */
export type CostUnit = TokenKind;

export interface SimulatorOptions {
  /** Tokens per second of the bucket under test (the first --rate). */
  ratePerSecond: number;
  /** Its capacity in tokens. */
  burst: number;
  /**
   * The whole set, limits numbered from 1 in this order, every one counting
   * the event's cost; it holds the bucket under test. Absent: that bucket alone.
   */
  limits?: readonly LimitSpec[];
  /** drop = Allow; queue = Reserve, first come first served. */
  policy: Policy;
  /** With queue: refuse a reservation that would wait longer (Reserve with a limit). */
  maxWaitMs: number;
  /** One set of limits per key. */
  perKey: boolean;
  /** With perKey: at most this many sets, the least recently used evicted. */
  maxKeys: number;
  /** Classes sharing the set (class-simulator.ts runs them); an event's key names its class. */
  classes?: readonly ClassSpec[];
  /** With classes: the class of an event that names none. */
  defaultClass?: string;
}

/**
 * What the recorder and the renderers read of the last decision: the
 * simulator of one set (or one set per key), or of classes sharing one set.
 */
export interface DecisionView {
  readonly options: SimulatorOptions;
  readonly limits: readonly LimitSpec[];
  readonly capacity: number;
  readonly admitted: boolean;
  readonly waitMs: number;
  readonly tokens: number;
  readonly limitedByMask: number;
  readonly evictedKey: string | undefined;
  readonly evictions: number;
  readonly keyCount: number;
  /** With classes: the class of the last decided event. */
  readonly className?: string;
  levelAt(timeMs: number, index: number): number;
}

/**
 * The simulator's engine: the core LimitSet, driven with explicit times, one
 * decision per arrival. There is no second implementation of the algorithm
 * here: drop is `allowAt` (x/time/rate's AllowN for a bucket alone), queue is
 * `admitAt` with the wait limit (ReserveN with maxFutureReserve), so the
 * boundary rule (a wait under 1 ns is no wait), "a refused Allow changes
 * nothing" and the earliest instant of a set come from the core. A set of
 * one bucket decides exactly as TokenBucket does.
 *
 * The answer to the last `offer` is left in `admitted`, `waitMs`, `tokens`
 * and `limitedByMask` rather than returned as an object, to keep a
 * ten-million-event run free of garbage.
 */
export class Simulator implements DecisionView {
  readonly options: SimulatorOptions;
  /** The limits of every set, in order. */
  readonly limits: readonly LimitSpec[];
  /** Where the bucket under test is in `limits`: its level is `tokens`. */
  readonly bucketIndex: number;
  /** The largest cost the set can ever admit at once: the least burst or window n. */
  readonly capacity: number;
  /** Whether the last arrival was admitted. */
  admitted = false;
  /** How long the last admitted arrival waits (0 in drop mode). */
  waitMs = 0;
  /** The level of the last arrival's bucket under test after the decision (negative while a queue waits). */
  tokens = 0;
  /** Bit i - 1 set when limit i refused the last arrival or set its wait. */
  limitedByMask = 0;
  /** The key whose set the last arrival evicted, if any. */
  evictedKey: string | undefined = undefined;

  /** Sets are created at the arrival that first needs them: this clock says when. */
  readonly #clock = new FakeClock(0);
  readonly #single: LimitSet | undefined;
  readonly #table: KeyTable<LimitSet> | undefined;
  /** The event's cost, in the one unit every limit counts (reused: no object per event). */
  readonly #costs: Record<string, number> = {};
  readonly #units: string[];
  #lastKey: string | undefined;
  #lastSet: LimitSet | undefined;

  constructor(options: SimulatorOptions) {
    this.options = options;
    this.limits = options.limits ?? [{ kind: "bucket", unit: "count", rate: options.ratePerSecond, burst: options.burst }];
    this.bucketIndex = this.limits.findIndex((limit) => limit.kind === "bucket");
    this.capacity = Math.min(...this.limits.map((limit) => (limit.kind === "bucket" ? limit.burst : limit.n)));
    this.#units = [...new Set(this.limits.flatMap((limit) => (limit.kind === "concurrency" ? [] : [limit.unit])))];
    for (const unit of this.#units) this.#costs[unit] = 0;
    if (options.perKey) {
      // No set is ever "spent" here: the table evicts strictly the least recently used, as the proxy's does when full.
      const maxKeys = Number.isFinite(options.maxKeys) ? options.maxKeys : Number.MAX_SAFE_INTEGER;
      this.#table = new KeyTable<LimitSet>({ maxKeys, isSpent: () => false, onRemove: (key) => (this.evictedKey = key) });
    } else {
      this.#single = this.#createSet(0);
    }
  }

  /** Sets evicted from the key table. */
  get evictions(): number {
    return this.#table?.evictions ?? 0;
  }

  /** Decides one arrival of `cost` tokens at `timeMs`; arrivals must come in time order. */
  offer(timeMs: number, cost: number, key: string | undefined): boolean {
    this.evictedKey = undefined;
    const set = this.#single ?? this.#setFor(key ?? "", timeMs);
    const costs = this.#costs;
    for (let i = 0; i < this.#units.length; i++) costs[this.#units[i]!] = cost;
    if (this.options.policy === "drop") {
      this.admitted = set.allowAt(timeMs, costs);
      this.waitMs = 0;
    } else {
      this.admitted = set.admitAt(timeMs, costs, this.options.maxWaitMs);
      this.waitMs = this.admitted ? set.lastWaitMs : 0;
    }
    this.limitedByMask = set.limitedByMask;
    this.tokens = this.bucketIndex < 0 ? 0 : set.levelAt(timeMs, this.bucketIndex);
    this.#lastSet = set;
    return this.admitted;
  }

  /** The level of limit `index` (from 0) of the last arrival's set at `timeMs`. */
  levelAt(timeMs: number, index: number): number {
    return this.#lastSet?.levelAt(timeMs, index) ?? NaN;
  }

  /** The number of sets in the key table now. */
  get keyCount(): number {
    return this.#single ? 1 : this.#table!.size;
  }

  #setFor(key: string, timeMs: number): LimitSet {
    // The same key again is still the most recently used: nothing to move.
    if (key === this.#lastKey && this.#lastSet) return this.#lastSet;
    const table = this.#table!;
    let set = table.get(key);
    if (set === undefined) {
      set = this.#createSet(timeMs);
      table.set(key, set);
    }
    this.#lastKey = key;
    return set;
  }

  /** A full set whose refill starts at `timeMs`. */
  #createSet(timeMs: number): LimitSet {
    this.#clock.set(timeMs);
    return new LimitSet(this.limits, { clock: this.#clock });
  }
}
