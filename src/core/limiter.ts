/**
 * What the stream and the runner need from a bucket: its settings, a way to
 * wait for tokens, a way to wait only if the wait is short, and its level. A
 * private `TokenBucket`, a shared bucket from a store and a failover between
 * the two all fit, with every method, so neither the stream nor the runner
 * knows (or tests for) where tokens come from.
 */
export interface Limiter {
  /**
   * Tokens per second; Infinity for no limit, 0 while paused. May change while
   * running: a shared bucket learns of a change at its next round trip (a take
   * or a poll of the key's settings), so until then `rate` and `burst` are the
   * settings as last read.
   */
  readonly rate: number;
  /** The most tokens one wait may ask for. May change while running, as `rate`. */
  readonly burst: number;
  /**
   * Resolves when `n` tokens (at most the burst) may be used; rejects with
   * ExceedsBurstError beyond the burst, and with the signal's reason when it
   * aborts (tokens not yet due are given back).
   */
  wait(n: number, signal?: AbortSignal): Promise<void>;
  /**
   * Like `wait`, but resolves false at once, taking nothing, when the wait
   * would be longer than `maxWaitMs` (x/time/rate's Reserve with a limit).
   * Rejects as `wait` does. A shared bucket serves its callers one at a time:
   * a tryWait made while another wait on the same limiter is under way is
   * answered once that wait is done.
   */
  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
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
