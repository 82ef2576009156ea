/**
 * What the middleware needs of one key's bucket: to wait for a token unless
 * that takes too long, and the level, for the RateLimit fields and an honest
 * Retry-After. A private TokenBucket fits, and so does a store-backed limiter.
 */
export interface KeyLimiter {
  readonly rate: number;
  readonly burst: number;
  /** Waits for `n` tokens unless that would take longer than `maxWaitMs`: then false at once, having taken nothing. */
  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
  /** The level now, as far as it is known without a round trip. */
  tokens(): number;
}

/** Where the key's buckets come from when they are not private ones (a shared store). */
export interface KeyLimiterSource {
  /** The bucket of a key met for the first time (or again after it left the table). */
  open(key: string): KeyLimiter | Promise<KeyLimiter>;
  /** Called when the key leaves the table, to release what its bucket holds. */
  close(limiter: KeyLimiter): void;
  /** Called when the middleware closes: stops what the source runs (watching a lost store). */
  dispose?(): void;
}
