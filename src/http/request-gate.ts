import { type Clock, systemClock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import { type TurnDecision, TurnQueue } from "../core/turn-queue.js";
import type { KeyLimiter, KeyLimiterSource } from "./key-limiter.js";
import { KeyTable } from "../core/key-table.js";
import { retryAfterSeconds } from "./rate-limit-fields.js";

/**
 * What became of a request: let through at once, let through after waiting
 * its turn, refused (429), or given up by its client while it waited.
 */
export type GateDecision = TurnDecision;

export interface GateResult {
  decision: GateDecision;
  /** How long the request waited for its turn, in ms (0 unless queued or cancelled). */
  waitMs: number;
  /** Refused: whole seconds after which the same request would be let through (or queued within the wait limit). */
  retryAfterSeconds: number;
  /** The bucket's level after the decision, and its settings (which a shared store may change live). */
  level: number;
  rate: number;
  burst: number;
}

export interface RequestGateOptions {
  rate: number;
  burst: number;
  /** How long a request may wait for its turn: 0 refuses at once (the drop policy). */
  maxWaitMs: number;
  maxKeys: number;
  /** Buckets from elsewhere (a shared store) instead of private ones. */
  source?: KeyLimiterSource;
  clock?: Clock;
}

interface Entry {
  limiter: KeyLimiter | undefined;
  /** A private bucket's turns; undefined for a bucket from a source. */
  turns: TurnQueue | undefined;
  /** While a shared bucket is being opened, requests for the key wait on it. */
  opening: Promise<KeyLimiter> | undefined;
  /** Requests waiting for their turn: the entry is not spent while any does. */
  waiting: number;
}

/**
 * RequestGate keeps one token bucket per key and decides, for each request,
 * whether it goes now, after a wait, or not at all. Private buckets are
 * decided synchronously (no promise when no wait is needed); buckets from a
 * source are asked through their `tryWait`. A request that waits and is given
 * up (its signal aborts) gives its token back.
 */
export class RequestGate {
  readonly #options: RequestGateOptions;
  readonly #clock: Clock;
  readonly #table: KeyTable<Entry>;

  constructor(options: RequestGateOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    const source = options.source;
    this.#table = new KeyTable<Entry>({
      maxKeys: options.maxKeys,
      isSpent: (entry) => entry.waiting === 0 && entry.limiter !== undefined && entry.limiter.tokens() >= entry.limiter.burst,
      onRemove: source ? (_key, entry) => entry.limiter && source.close(entry.limiter) : undefined,
    });
  }

  /** Keys held now. */
  get liveKeys(): number {
    return this.#table.size;
  }

  /** Keys evicted before their bucket was full (their clients started afresh). */
  get evictions(): number {
    return this.#table.evictions;
  }

  /** Drops buckets that are full, at most `budget` of them from the least recently used end. */
  sweep(budget?: number): number {
    return this.#table.sweep(budget);
  }

  /** Decides for one request of `key`; aborting `signal` gives up a wait (decision "cancelled", token given back). */
  admit(key: string, signal?: AbortSignal): GateResult | Promise<GateResult> {
    const { rate, burst } = this.#options;
    if (rate === Infinity && !this.#options.source) return { decision: "admitted", waitMs: 0, retryAfterSeconds: 0, level: burst, rate, burst };
    let entry = this.#table.get(key);
    if (!entry) {
      entry = { limiter: undefined, turns: undefined, opening: undefined, waiting: 0 };
      if (!this.#options.source) {
        const bucket = new TokenBucket({ rate, burst, clock: this.#clock });
        entry.limiter = bucket;
        entry.turns = new TurnQueue({ bucket, maxWaitMs: this.#options.maxWaitMs, clock: this.#clock });
      }
      this.#table.set(key, entry);
    }
    if (entry.turns) return this.#admitPrivate(entry, entry.turns, signal);
    return this.#admitShared(key, entry, signal);
  }

  /** Forgets every key, releasing shared buckets' leases. */
  close(): void {
    this.#table.clear();
  }

  #admitPrivate(entry: Entry, turns: TurnQueue, signal: AbortSignal | undefined): GateResult | Promise<GateResult> {
    const bucket = turns.bucket;
    const turn = turns.take(signal);
    if (turn === "refused") return this.#refused(bucket, bucket.tokensAt(this.#clock.now()));
    if (turn === "admitted") return this.#result("admitted", 0, bucket, bucket.tokensAt(this.#clock.now()));
    entry.waiting++;
    return turn.then(({ decision, waitMs }) => {
      entry.waiting--;
      return this.#result(decision, waitMs, bucket, bucket.tokensAt(this.#clock.now()));
    });
  }

  async #admitShared(key: string, entry: Entry, signal: AbortSignal | undefined): Promise<GateResult> {
    entry.waiting++;
    const startMs = this.#clock.now();
    try {
      const limiter = entry.limiter ?? (await this.#open(key, entry));
      let granted: boolean;
      try {
        granted = await limiter.tryWait(1, this.#options.maxWaitMs, signal);
      } catch (error) {
        if (signal?.aborted) return this.#result("cancelled", this.#clock.now() - startMs, limiter, limiter.tokens());
        // A bucket whose store failed is opened afresh by the key's next request.
        if (this.#table.peek(key) === entry) this.#table.delete(key);
        throw error;
      }
      if (!granted) return this.#refused(limiter, limiter.tokens());
      const waitedMs = this.#clock.now() - startMs;
      return this.#result(this.#options.maxWaitMs > 0 && waitedMs >= 1 ? "queued" : "admitted", waitedMs, limiter, limiter.tokens());
    } finally {
      entry.waiting--;
    }
  }

  #open(key: string, entry: Entry): Promise<KeyLimiter> {
    entry.opening ??= (async () => {
      try {
        const limiter = await this.#options.source!.open(key);
        entry.limiter = limiter;
        return limiter;
      } catch (error) {
        if (this.#table.peek(key) === entry) this.#table.delete(key);
        throw error;
      } finally {
        entry.opening = undefined;
      }
    })();
    return entry.opening;
  }

  /**
   * A refusal, with the whole seconds after which the same request would be
   * let through: once the level reaches 1 (dropping), or the level from which
   * a token comes within the wait limit (queueing).
   */
  #refused(limiter: KeyLimiter, level: number): GateResult {
    const { rate } = limiter;
    const neededTokens = 1 - (rate * this.#options.maxWaitMs) / 1000 - level;
    const waitMs = rate > 0 && limiter.burst >= 1 ? Math.max(0, (neededTokens * 1000) / rate) : Infinity;
    return { ...this.#result("refused", 0, limiter, level), retryAfterSeconds: retryAfterSeconds(waitMs) };
  }

  #result(decision: GateDecision, waitMs: number, limiter: KeyLimiter, level: number): GateResult {
    return { decision, waitMs, retryAfterSeconds: 0, level, rate: limiter.rate, burst: limiter.burst };
  }
}
