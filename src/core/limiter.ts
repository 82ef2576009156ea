import type { Costs } from "./limit-spec.js";

/**
 * What the stream and the runner need from a bucket: its settings, a way to
 * wait for tokens, a way to wait only if the wait is short, and its level. A
 * private `TokenBucket`, a shared bucket from a store, a failover between
 * the two and a private set of limits (`LimitSetLimiter`) all fit, with every
 * method, so neither the stream nor the runner knows (or tests for) where
 * tokens come from.
 *
 * `n` is always in the limiter's main unit (a byte, a line, a launch). An
 * item that costs something in several units (a slice of lines: its bytes
 * and its lines) also passes `costs`, each unit's amount, `n` among them:
 * a set charges every limit its own unit's cost; a limiter of one unit
 * counts `n` and needs nothing more.
 */
export interface Limiter {
  /**
   * Tokens per second (for a set, the lowest long-run rate of its limits of
   * the main unit); Infinity for no limit, 0 while paused. May change while
   * running: a shared bucket learns of a change at its next round trip (a take
   * or a poll of the key's settings), so until then `rate` and `burst` are the
   * settings as last read.
   */
  readonly rate: number;
  /**
   * The most tokens one wait may ask for (for a set, the least any limit of
   * the main unit can take at once: a burst, a window's n). May change while
   * running, as `rate`.
   */
  readonly burst: number;
  /**
   * Resolves when `n` tokens (at most the burst) may be used; rejects with
   * ExceedsBurstError beyond the burst, and with the signal's reason when it
   * aborts (tokens not yet due are given back).
   */
  wait(n: number, signal?: AbortSignal, costs?: Costs): Promise<void>;
  /**
   * Like `wait`, but resolves false at once, taking nothing, when the wait
   * would be longer than `maxWaitMs` (x/time/rate's Reserve with a limit).
   * Rejects as `wait` does. Callers are served first come, first served: a
   * shared bucket sends the tryWaits made together in one round trip, and
   * once one has to wait its turn, those after it wait in line behind it.
   */
  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<boolean>;
  /**
   * The level, read without waiting and without a round trip: for pacing
   * decisions and the progress display. Exact for a private bucket; a shared
   * bucket answers with the store's level as its last round trip (a take or a
   * settings poll) reported it, so it may be stale by a lease or a poll, and
   * does not count the tokens this process holds leased but unused. Negative
   * while reservations owe tokens.
   */
  tokens(): number;
}
