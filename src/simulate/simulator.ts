import { FakeClock } from "../core/clock.js";
import type { TokenKind } from "../core/format.js";
import { TokenBucket } from "../core/token-bucket.js";

export type Policy = "drop" | "queue";

/** What a token is: one event, or one byte (costs are sizes). */
export type CostUnit = TokenKind;

export interface SimulatorOptions {
  /** Tokens per second. */
  ratePerSecond: number;
  /** Bucket capacity in tokens. */
  burst: number;
  /** drop = Allow; queue = Reserve, first come first served. */
  policy: Policy;
  /** With queue: refuse a reservation that would wait longer (Reserve with a limit). */
  maxWaitMs: number;
  /** One bucket per key. */
  perKey: boolean;
  /** With perKey: at most this many buckets, the least recently used evicted. */
  maxKeys: number;
}

/**
 * The simulator's engine: the core TokenBucket, driven with explicit times,
 * one decision per arrival. There is no second implementation of the
 * algorithm here: drop is `allowAt` (x/time/rate's AllowN), queue is
 * `reserveAt` with the wait limit (ReserveN with maxFutureReserve), so the
 * boundary rule (a wait under 1 ns is no wait) and "a refused Allow changes
 * nothing" come from the core.
 *
 * The answer to the last `offer` is left in `admitted`, `waitMs` and `tokens`
 * rather than returned as an object, to keep a ten-million-event run free of
 * garbage.
 */
export class Simulator {
  readonly options: SimulatorOptions;
  /** Whether the last arrival was admitted. */
  admitted = false;
  /** How long the last admitted arrival waits (0 in drop mode). */
  waitMs = 0;
  /** The level of the last arrival's bucket after the decision (negative while a queue waits). */
  tokens = 0;
  /** Buckets evicted from the key table. */
  evictions = 0;
  /** The key whose bucket the last arrival evicted, if any. */
  evictedKey: string | undefined = undefined;

  /** Buckets are created at the arrival that first needs them: this clock says when. */
  readonly #clock = new FakeClock(0);
  readonly #single: TokenBucket | undefined;
  readonly #buckets = new Map<string, TokenBucket>();
  /**
   * Walks the table from its least recently used key. A Map keeps insertion
   * order, but the entries it deletes stay in its storage until it is rebuilt:
   * reading the oldest from a new iterator steps over all of them, so a full
   * table that kept evicting slowed down with its churn (--max-keys 100000 over
   * 400,000 keys: 34 s). One iterator kept across evictions steps over each once.
   */
  #oldest: Iterator<string> = this.#buckets.keys();
  #lastKey: string | undefined;
  #lastBucket: TokenBucket | undefined;

  constructor(options: SimulatorOptions) {
    this.options = options;
    this.#single = options.perKey ? undefined : this.#createBucket(0);
  }

  /** Decides one arrival of `cost` tokens at `timeMs`; arrivals must come in time order. */
  offer(timeMs: number, cost: number, key: string | undefined): boolean {
    this.evictedKey = undefined;
    const bucket = this.#single ?? this.#bucketFor(key ?? "", timeMs);
    if (this.options.policy === "drop") {
      this.admitted = bucket.allowAt(timeMs, cost);
      this.waitMs = 0;
    } else {
      const reservation = bucket.reserveAt(timeMs, cost, this.options.maxWaitMs);
      this.admitted = reservation.ok;
      this.waitMs = reservation.ok ? reservation.waitMs : 0;
    }
    this.tokens = bucket.tokensAt(timeMs);
    return this.admitted;
  }

  /** The number of buckets in the key table now. */
  get keyCount(): number {
    return this.#single ? 1 : this.#buckets.size;
  }

  #bucketFor(key: string, timeMs: number): TokenBucket {
    if (key === this.#lastKey && this.#lastBucket) return this.#lastBucket;
    let bucket = this.#buckets.get(key);
    if (bucket) {
      // A Map keeps insertion order: re-inserting makes this key the most recently used.
      this.#buckets.delete(key);
    } else {
      bucket = this.#createBucket(timeMs);
      if (this.#buckets.size >= this.options.maxKeys) {
        // Every entry before the iterator was evicted, or used again and so moved to the end.
        let next = this.#oldest.next();
        if (next.done) next = (this.#oldest = this.#buckets.keys()).next();
        const oldest = next.value as string;
        this.#buckets.delete(oldest);
        this.evictions++;
        this.evictedKey = oldest;
      }
    }
    this.#buckets.set(key, bucket);
    this.#lastKey = key;
    this.#lastBucket = bucket;
    return bucket;
  }

  /** A full bucket whose refill starts at `timeMs`. */
  #createBucket(timeMs: number): TokenBucket {
    this.#clock.set(timeMs);
    return new TokenBucket({ rate: this.options.ratePerSecond, burst: this.options.burst, clock: this.#clock });
  }
}
