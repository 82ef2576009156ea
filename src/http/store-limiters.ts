import type { Clock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import { type BucketConfig, type BucketStore, StoreError } from "../store/bucket-store.js";
import { FailoverLimiter } from "../store/failover-limiter.js";
import { SharedLimiter } from "../store/shared-limiter.js";
import type { KeyLimiter, KeyLimiterSource } from "./key-limiter.js";

/** Per-client buckets in a shared store, so that several servers hold each client to one limit together. */
export interface StoreBuckets {
  /** An open store; it stays the caller's to close. */
  store: BucketStore;
  /** The keys' prefix: a client's bucket is `NAME:<client>`. */
  name: string;
  /**
   * `fail` (default): a request whose store fails gets the StoreError (next(error));
   * `local`: go on with private buckets, empty at first, for good.
   */
  onStoreError?: "fail" | "local";
  /** Told of each store failure once. */
  onError?: (error: StoreError) => void;
}

/**
 * Limiters for keys in a store. A key met for the first time is created at
 * the middleware's rate and burst; a key already in the store keeps its own
 * settings, so `tbucket key set NAME:<client>` gives one client another
 * limit, live. With `onStoreError: "local"`, the first failure switches every
 * key, present and future, to a private bucket, and the store is not asked
 * again: a key that was in use starts empty (its shared bucket may just have
 * been drained), a key met afterwards starts full, as a new bucket does.
 */
export function storeLimiters(buckets: StoreBuckets, settings: { rate: number; burst: number; clock?: Clock }): KeyLimiterSource {
  const local = buckets.onStoreError === "local";
  let failed = false;
  const failure = (error: StoreError): void => {
    if (failed) return;
    failed = true;
    buckets.onError?.(error);
  };
  /** A key met after the failure starts full, as a new bucket does; one that was in use starts empty. */
  const privateBucket = (config: { rate: number; burst: number }, wasInUse: boolean): TokenBucket =>
    new TokenBucket({ rate: config.rate, burst: config.burst, tokens: wasInUse ? 0 : config.burst, clock: settings.clock });

  const sharedOf = new WeakMap<KeyLimiter, SharedLimiter>();
  return {
    async open(client: string): Promise<KeyLimiter> {
      if (failed && local) return privateBucket(settings, false);
      const key = `${buckets.name}:${client}`;
      // Made here, a client's key is forgotten by the store once full again (a full bucket is a
      // new one), so the store does not grow with every client ever seen; one set with
      // `tbucket key set` stays.
      let config: BucketConfig & { expiresWhenFull?: true };
      try {
        const stored = await buckets.store.read(key);
        config =
          stored?.kind === "count"
            ? stored
            : await buckets.store.configure(key, { rate: settings.rate, burst: settings.burst, kind: "count" }, { expireWhenFull: true });
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        failure(error);
        if (!local) throw error;
        return privateBucket(settings, false);
      }
      const shared = new SharedLimiter({ store: buckets.store, key, config, clock: settings.clock, expireWhenFull: config.expiresWhenFull === true });
      const limiter = new FailoverLimiter(shared, (error, last) => {
        failure(error);
        if (!local) throw error;
        return privateBucket(last, true);
      });
      sharedOf.set(limiter, shared);
      return limiter;
    },
    close(limiter: KeyLimiter): void {
      // Gives back a lease not yet due, so that the other servers do not pay for it.
      void sharedOf.get(limiter)?.close().catch(() => {});
    },
  };
}
