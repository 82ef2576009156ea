import type { Clock } from "../core/clock.js";
import type { BucketConfig, BucketStore, StoreError } from "../store/bucket-store.js";
import { type KeyBucket, KeyBuckets, keyName } from "../store/key-buckets.js";
import type { KeyLimiter, KeyLimiterSource } from "./key-limiter.js";

/** What requests get while the store is lost: 503 (`fail`), private buckets (`local`), or let through (`open`). */
export type OnStoreError = "fail" | "local" | "open";

/** Per-client buckets in a shared store, so that several servers hold each client to one limit together. */
export interface StoreBuckets {
  /** An open store; it stays the caller's to close. */
  store: BucketStore;
  /** The keys' prefix: a client's bucket is `NAME:<client>`. */
  name: string;
  /**
   * While the store is lost (it is asked again, at most a second apart, and
   * used again as soon as it answers): `fail` (default) answers 503 with a
   * Retry-After; `local` goes on with private buckets of the same settings;
   * `open` lets every request through, unlimited.
   */
  onStoreError?: OnStoreError;
  /** Told when the store is lost, once per outage. */
  onError?: (error: StoreError) => void;
  /** Told when the store answers again after an outage: how long it was gone. */
  onBack?: (lostForMs: number) => void;
}

/**
 * Limiters for keys in a store. A key met for the first time is created at
 * the middleware's rate and burst; a key already in the store keeps its own
 * settings, so `tbucket key set NAME:<client>` gives one client another
 * limit, live. Made here, a client's key is forgotten by the store once full
 * again (a full bucket is a new one), so the store does not grow with every
 * client ever seen; one set with `tbucket key set` stays.
 *
 * The store is watched (StoreWatch): once it fails, no key asks it again
 * until a probe finds it back, and then every key goes back to it.
 */
export function storeLimiters(buckets: StoreBuckets, settings: { rate: number; burst: number; clock?: Clock }): KeyLimiterSource {
  const keys = new KeyBuckets({
    store: buckets.store,
    clock: settings.clock,
    onLost: buckets.onError,
    onBack: buckets.onBack,
    whileLost: { mode: buckets.onStoreError ?? "fail" },
  });
  const wanted: BucketConfig = { rate: settings.rate, burst: settings.burst, kind: "count" };
  return {
    open: (client: string): Promise<KeyLimiter> => keys.open(keyName(buckets.name, client), { settings: wanted, expireWhenFull: true }),
    close(limiter: KeyLimiter): void {
      // Gives back a lease not yet due, so that the other servers do not pay for it.
      void (limiter as KeyBucket).close().catch(() => {});
    },
    dispose(): void {
      keys.stop();
    },
  };
}
