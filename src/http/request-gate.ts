import { type Clock, systemClock } from "../core/clock.js";
import { durationMsFromTokens, type Reservation, TokenBucket } from "../core/token-bucket.js";
import type { KeyLimiter, KeyLimiterSource } from "./key-limiter.js";
import { KeyTable } from "../core/key-table.js";
import { retryAfterSeconds } from "./rate-limit-fields.js";

/**
 * What became of a request: let through at once, let through after waiting
 * its turn, refused (429), or given up by its client while it waited.
 */
export type GateDecision = "admitted" | "queued" | "refused" | "cancelled";

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
  /** While a shared bucket is being opened, requests for the key wait on it. */
  opening: Promise<KeyLimiter> | undefined;
  /** Requests waiting for their turn: the entry is not spent while any does. */
  waiting: number;
  /** A private bucket's waiting requests, in the order of their turns (the last holds the bucket's latest reservation). */
  queue: Waiter[];
  /** The latest turn given out on a private bucket (the bucket's last event), to give it back exactly. */
  lastTurnMs: number;
}

/** A request waiting for its turn on a private bucket. */
interface Waiter {
  reservation: Reservation;
  /** When it came, on the gate's clock. */
  startMs: number;
  /** Aborted to end its sleep: its client left, or it was moved to an earlier turn. */
  wake: AbortController;
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
      entry = { limiter: undefined, opening: undefined, waiting: 0, queue: [], lastTurnMs: -Infinity };
      if (!this.#options.source) entry.limiter = new TokenBucket({ rate, burst, clock: this.#clock });
      this.#table.set(key, entry);
    }
    const limiter = entry.limiter;
    if (limiter instanceof TokenBucket) return this.#admitPrivate(entry, limiter, signal);
    return this.#admitShared(key, entry, signal);
  }

  /** Forgets every key, releasing shared buckets' leases. */
  close(): void {
    this.#table.clear();
  }

  #admitPrivate(entry: Entry, bucket: TokenBucket, signal: AbortSignal | undefined): GateResult | Promise<GateResult> {
    const nowMs = this.#clock.now();
    const reservation = bucket.reserveAt(nowMs, 1, this.#options.maxWaitMs);
    if (!reservation.ok) return this.#refused(bucket, bucket.tokensAt(nowMs));
    entry.lastTurnMs = reservation.timeToActMs;
    if (reservation.waitMs === 0) return this.#result("admitted", 0, bucket, bucket.tokensAt(nowMs));
    const waiter: Waiter = { reservation, startMs: nowMs, wake: new AbortController() };
    entry.queue.push(waiter);
    entry.waiting++;
    const hangUp = (): void => waiter.wake.abort();
    signal?.addEventListener("abort", hangUp, { once: true });
    return (async () => {
      try {
        for (;;) {
          if (signal?.aborted) {
            this.#giveBack(entry, bucket, waiter);
            const now = this.#clock.now();
            return this.#result("cancelled", now - nowMs, bucket, bucket.tokensAt(now));
          }
          try {
            await this.#clock.sleep(Math.max(0, waiter.reservation.timeToActMs - this.#clock.now()), waiter.wake.signal);
            break;
          } catch {
            // Moved to an earlier turn (or its client left: seen above): sleep again.
            if (!signal?.aborted) waiter.wake = new AbortController();
          }
        }
      } finally {
        entry.waiting--;
        signal?.removeEventListener("abort", hangUp);
      }
      const index = entry.queue.indexOf(waiter);
      if (index !== -1) entry.queue.splice(index, 1);
      return this.#result("queued", Math.max(0, waiter.reservation.timeToActMs - waiter.startMs), bucket, bucket.tokensAt(this.#clock.now()));
    })();
  }

  /**
   * Gives a waiting request's token back whole, whatever its place in line.
   * The bucket gives back only what no later reservation has spoken for (as
   * x/time/rate), so when others wait behind it, the last of them takes its
   * turn and the last turn, now no one's, is given back.
   */
  #giveBack(entry: Entry, bucket: TokenBucket, waiter: Waiter): void {
    const queue = entry.queue;
    const index = queue.indexOf(waiter);
    if (index === -1) return;
    queue.splice(index, 1);
    if (index < queue.length) {
      const last = queue.pop()!;
      queue.splice(index, 0, last);
      last.reservation = waiter.reservation;
      last.wake.abort();
    }
    // The latest turn as the bucket holds it (turns computed one by one differ from it in the last nanosecond).
    const nowMs = this.#clock.now();
    const rate = bucket.rate;
    bucket.cancelAt(nowMs, { ok: true, tokens: 1, timeToActMs: entry.lastTurnMs, rate });
    const previousTurnMs = entry.lastTurnMs - durationMsFromTokens(1, rate);
    if (previousTurnMs >= nowMs) entry.lastTurnMs = previousTurnMs;
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
