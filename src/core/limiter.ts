/**
 * What the stream and the runner need from a bucket: its settings and a way
 * to wait for tokens. A private `TokenBucket` and a shared bucket from a store
 * both fit, so neither the stream nor the runner knows where tokens come from.
 */
export interface Limiter {
  /** Tokens per second; Infinity for no limit. May change while running. */
  readonly rate: number;
  /** The most tokens one `wait` may ask for. May change while running. */
  readonly burst: number;
  /** Resolves when `n` tokens (at most the burst) may be used; rejects when the signal aborts. */
  wait(n: number, signal?: AbortSignal): Promise<void>;
  /**
   * Like `wait`, but resolves false at once, taking nothing, when the wait
   * would be longer than `maxWaitMs` (x/time/rate's Reserve with a limit).
   * Optional: callers without it fall back to aborting `wait` after `maxWaitMs`.
   */
  tryWait?(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
  /** The current level, where it is known without a round trip (progress display). */
  tokens?(): number;
}
