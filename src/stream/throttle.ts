import { type Clock, systemClock } from "../core/clock.js";
import type { Costs } from "../core/limit-spec.js";
import { LimitSetLimiter } from "../core/limit-set-limiter.js";
import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";
import { RecordScanner } from "./record-scanner.js";

/**
 * What one token pays for:
 * - `bytes`: a byte; chunks are sliced anywhere.
 * - `records`: a record (a line, or a NUL-terminated record), whatever its length.
 * - `record-bytes`: a byte, but slices end on record boundaries where they can.
 */
export type CostMode = "bytes" | "records" | "record-bytes";

export interface ThrottleOptions {
  limiter: Limiter;
  cost?: CostMode;
  /** The byte that ends a record: `\n` (10) by default, 0 for NUL. */
  delimiter?: number;
  /** How much time one write represents at the full rate; smaller is smoother, larger is cheaper. */
  sliceMs?: number;
  /** In `bytes` mode, count records too (for statistics); record modes always count. */
  countRecords?: boolean;
  /**
   * The clock the limiter runs on: `settle` sleeps on it and `waitedMs` is
   * measured on it. By default a TokenBucket's own clock, else the system's.
   */
  clock?: Clock;
  /**
   * In `bytes` mode, the most one read of the source gives (a pipe's buffer):
   * a slice no larger is already whole after one read and needs no settling.
   * By default 0: `settle` always waits for half a slice.
   */
  oneReadBytes?: number;
  /**
   * In `record-bytes` mode, when lines are limited as well as bytes (a
   * `LimitSetLimiter` with limits of both units): the most records one slice
   * may hold (`mostAtOnce("count")`). Each slice then pays its records too,
   * as `costs.count`. Undefined: only bytes are paid.
   */
  recordsAtOnce?: number;
}

export interface ThrottleStats {
  bytes: number;
  records: number;
  /** Time spent waiting for tokens, the wait under way included. */
  waitedMs: number;
}

/** Receives each paid slice; a returned promise holds the next take until the slice is consumed. */
export type Emit = (segment: Buffer) => void | Promise<void>;

const DEFAULT_SLICE_MS = 10;
/**
 * How late a timer may wake on a busy machine: a pacer sleeps for its tokens,
 * and tokens the bucket would hold beyond its burst meanwhile are lost (the
 * pacer may never take more than the bucket holds, or a window could exceed
 * burst + rate x T). A burst smaller than the slice plus this much of the rate
 * cannot keep the rate.
 */
export const TIMER_TICK_MS = 4;

/**
 * Throttle cuts chunks into slices and pays for each from a limiter before
 * handing it on; in the record modes a RecordScanner says where slices may end. It is the one pacing engine: `ThrottleStream` wraps it in a
 * Node Transform, and the CLI drives it straight from file descriptors.
 *
 * Slices are at most the burst and about `sliceMs` of the rate, so output is
 * smooth; a record costlier than the burst (record-bytes mode) waits for a
 * full bucket, goes out whole, and its remaining cost is paid as debt before
 * anything else goes out.
 */
export class Throttle {
  readonly limiter: Limiter;
  readonly cost: CostMode;
  readonly #records: RecordScanner;
  readonly #sliceMs: number;
  readonly #countRecords: boolean;
  readonly #clock: Clock;
  readonly #oneReadBytes: number;
  readonly #recordsAtOnce: number | undefined;
  #stats: ThrottleStats = { bytes: 0, records: 0, waitedMs: 0 };
  /** When the take under way began; undefined between takes. */
  #takingSinceMs: number | undefined;
  #lastTakeWaited = false;

  constructor(options: ThrottleOptions) {
    this.limiter = options.limiter;
    this.cost = options.cost ?? "bytes";
    this.#records = new RecordScanner(options.delimiter ?? 10);
    this.#sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
    this.#countRecords = options.countRecords ?? false;
    this.#oneReadBytes = options.oneReadBytes ?? 0;
    this.#recordsAtOnce = this.cost === "record-bytes" ? options.recordsAtOnce : undefined;
    this.#clock = options.clock ?? (options.limiter instanceof TokenBucket ? options.limiter.clock : systemClock);
  }

  /**
   * Whether the last take found too few tokens and slept for them (a timer, so
   * the event loop had a turn); false for a take the bucket covered at once.
   */
  get lastTakeWaited(): boolean {
    return this.#lastTakeWaited;
  }

  /** The byte that ends a record. */
  get delimiter(): number {
    return this.#records.delimiter;
  }

  /**
   * What has gone through so far. The wait under way counts too: stats asked
   * while the bucket is drained or its shared key paused (a signal, a progress
   * line) say how long it has been waiting, not only the waits that ended.
   */
  get stats(): Readonly<ThrottleStats> {
    if (this.#takingSinceMs === undefined) return this.#stats;
    return { ...this.#stats, waitedMs: this.#stats.waitedMs + (this.#clock.now() - this.#takingSinceMs) };
  }

  /**
   * For a consumer that reads ahead in the background: waits until the bucket
   * holds half a slice, so that what is read meanwhile goes out in one write
   * instead of one sleep and one write per small read. Half, not whole: the
   * rest is reserved while the bucket still has room, so tokens that come in
   * while a timer wakes late are kept instead of spilling over the burst. A
   * slice no larger than one read (`oneReadBytes`) needs no settling: one read
   * already holds it, and settling would only add a sleep.
   */
  async settle(signal?: AbortSignal): Promise<void> {
    const { limiter } = this;
    if (limiter.rate === Infinity || limiter.rate === 0) return;
    const sliceTokens = this.#sliceTokens();
    if (this.cost === "bytes" && sliceTokens <= this.#oneReadBytes) return;
    const missing = sliceTokens / 2 - limiter.tokens();
    if (missing > 0) await this.#clock.sleep((missing / limiter.rate) * 1000, signal);
  }

  /** Pays for `chunk` slice by slice and hands each slice to `emit`. */
  async pass(chunk: Buffer, emit: Emit, signal?: AbortSignal): Promise<void> {
    let position = 0;
    while (position < chunk.length) {
      signal?.throwIfAborted();
      const { end, cost, records } = this.#planSegment(chunk, position);
      const segment = chunk.subarray(position, end);
      const burst = this.limiter.burst;
      if (cost <= burst) {
        await this.#take(cost, signal, this.#costsOf(cost, records));
        await this.#emit(segment, emit);
      } else if (this.limiter instanceof LimitSetLimiter) {
        // A set's windows must count the whole record before it goes out (a window has no debt);
        // its buckets wait to be full and run into debt for the rest, in one reservation.
        const limiter = this.limiter;
        const costs = this.#costsOf(cost, records) ?? { [limiter.unit]: cost };
        // It waits for full buckets (and room for all of it in the windows) unless they are already.
        this.#lastTakeWaited = limiter.tokens() < burst;
        await this.#timed(() => limiter.waitInDebt(costs, signal));
        await this.#emit(segment, emit);
      } else {
        // Too costly for the bucket: wait for a full bucket, send, then pay off the debt
        // before anything else goes out, so the long-run rate still holds.
        await this.#take(burst, signal, this.#costsOf(burst, records));
        await this.#emit(segment, emit);
        for (let owed = cost - burst; owed > 0; owed -= burst) await this.#take(Math.min(owed, burst), signal);
      }
      position = end;
    }
  }

  /**
   * For a copy that never sees the bytes (splice(2) in the kernel): pays for
   * the next slice, at most `most` bytes, and returns its size, to be moved
   * whole and then told with `sent`. Bytes mode only; unlimited, it is `most`.
   */
  async grant(most: number, signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    const tokens = Math.min(most, this.#sliceTokens());
    await this.#take(tokens, signal);
    return tokens;
  }

  /** Counts bytes that went out after a `grant`. */
  sent(bytes: number): void {
    this.#stats.bytes += bytes;
  }

  /**
   * The smallest burst that can keep the rate when timers wake TIMER_TICK_MS
   * late: a slice (10 ms of the rate) and a tick of the rate beyond it.
   * Undefined when unlimited or counting records.
   */
  smallestSteadyBurst(): number | undefined {
    const { rate } = this.limiter;
    if (rate === Infinity || this.cost === "records") return undefined;
    return Math.ceil((rate * (this.#sliceMs + TIMER_TICK_MS)) / 1000);
  }

  async #emit(segment: Buffer, emit: Emit): Promise<void> {
    this.#stats.bytes += segment.length;
    if (this.cost === "bytes" && this.#countRecords) this.#stats.records += this.#records.countStarts(segment);
    const pending = emit(segment);
    if (pending) await pending;
  }

  /**
   * Takes `n` tokens for a slice that goes out when this resolves. A bucket
   * debits a reservation when it is due; a pacer whose timer wakes late sends
   * it later, when the bucket may have refilled up to its burst meanwhile.
   * Sent then on top of a full bucket, the slice could make a window exceed
   * burst + rate x T: so whatever the bucket holds beyond what it would hold
   * had the slice been taken now is taken too, and the late pacer gets no
   * more than the bucket holds.
   */
  async #take(n: number, signal: AbortSignal | undefined, costs?: Costs): Promise<void> {
    // A slice with costs in several units pays its lines even where its bytes are free.
    if (costs === undefined && (n <= 0 || this.limiter.rate === Infinity)) return;
    const { limiter } = this;
    // A shared bucket's level is as last read: the guess may be off for the rest of one lease.
    this.#lastTakeWaited = limiter.tokens() < n;
    await this.#timed(async () => {
      await limiter.wait(n, signal, costs);
      const spilled = Math.min(n, limiter.tokens() + n - limiter.burst);
      if (spilled > 0) await limiter.wait(spilled, signal);
    });
  }

  /** Runs a wait for tokens, counting its time in the stats (the wait under way too, see `stats`). */
  async #timed(wait: () => Promise<void>): Promise<void> {
    const startedMs = this.#clock.now();
    this.#takingSinceMs = startedMs;
    try {
      await wait();
    } finally {
      this.#takingSinceMs = undefined;
      this.#stats.waitedMs += this.#clock.now() - startedMs;
    }
  }

  /** A slice's costs in every unit, when lines are paid as well as bytes. */
  #costsOf(bytes: number, records: number): Costs | undefined {
    return this.#recordsAtOnce === undefined ? undefined : { bytes, count: records };
  }

  /** Where the next write ends, what it costs in the main unit, and the records that start in it. */
  #planSegment(chunk: Buffer, start: number): { end: number; cost: number; records: number } {
    const unlimited = this.limiter.rate === Infinity;
    const sliceTokens = this.#sliceTokens();
    switch (this.cost) {
      case "bytes": {
        const end = unlimited ? chunk.length : Math.min(chunk.length, start + sliceTokens);
        return { end, cost: end - start, records: 0 };
      }
      case "records": {
        const { end, records } = this.#records.recordsFrom(chunk, start, sliceTokens);
        this.#stats.records += records;
        return { end, cost: records, records };
      }
      case "record-bytes": {
        const { end, records } = this.#records.wholeRecordsFrom(chunk, start, sliceTokens, this.#recordsAtOnce);
        this.#stats.records += records;
        return { end, cost: end - start, records };
      }
    }
  }

  /**
   * The tokens one write pays for: about `sliceMs` of the rate, at most the
   * burst. Paused (rate 0), nothing refills and so nothing is there to smooth:
   * what the bucket holds goes at once, and an empty bucket is waited on for
   * one token (the least debt to repay once a rate resumes it).
   */
  #sliceTokens(): number {
    const { rate, burst } = this.limiter;
    if (rate === Infinity) return Infinity;
    const tokens = rate === 0 ? this.limiter.tokens() : (rate * this.#sliceMs) / 1000;
    return Math.max(1, Math.min(burst, Math.floor(tokens)));
  }
}
