import { TokenBucket } from "../../core/token-bucket.js";
import type { BucketConfig, BucketStore } from "../../store/bucket-store.js";
import { StoreError } from "../../store/bucket-store.js";
import { failFast } from "../../store/fail-fast-store.js";
import { FailoverLimiter } from "../../store/failover-limiter.js";
import { SharedLimiter } from "../../store/shared-limiter.js";
import type { LimiterFactory } from "../../proxy/bucket-pool.js";
import { RuntimeError } from "../errors.js";
import { describeConfig } from "../open-limiter.js";
import type { SharedBucketOptions } from "../shared-options.js";
import { writeStandardError } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openCommandStore, storeLocation } from "../store-opener.js";

export interface StoreBuckets {
  open: LimiterFactory;
  close(): Promise<void>;
}

export interface StoreBucketHooks {
  /** Counts a store failure (metrics). */
  storeError(): void;
  /** Without --on-store-error local, a lost store stops the proxy: called once with the line to print. */
  fatal(error: RuntimeError): void;
}

/**
 * The TCP proxy's buckets in a store: `NAME:up` and `NAME:down` for the link,
 * `NAME:up:<client address>` and `NAME:down:<client address>` per client. The
 * link's keys take their settings from the command line; a client's key
 * keeps settings a `tbucket key set` gave it, else takes the command line's,
 * and is then made with `expireWhenFull`: the store forgets it once full again
 * (a full bucket is a new one), so the clients ever seen do not pile up.
 */
export async function openStoreBuckets(shared: SharedBucketOptions, hooks: StoreBucketHooks): Promise<StoreBuckets> {
  const name = shared.key!;
  const local = shared.onStoreError === "local";
  let store: BucketStore | undefined;
  try {
    store = await openCommandStore(storeLocation(shared.store));
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const line = describeStoreFailure(error, { offerLocal: !local });
    if (!local) throw new RuntimeError(line);
    hooks.storeError();
    writeStandardError(`tbucket: warning: ${line}; going on with private buckets\n`);
  }
  if (!store) {
    return { open: (_key, _direction, spec) => ({ limiter: new TokenBucket({ rate: spec.bytesPerSecond, burst: spec.burstBytes }), close: async () => {} }), close: async () => {} };
  }
  // Once the store failed, the other keys need not each find out the slow way.
  const opened = failFast(store);
  /** Set once the store failed under --on-store-error local: later keys are private without asking it again. */
  let failed = false;
  /** Counts a failure, then stops the proxy, or (local) warns once and goes on. */
  const lost = (error: StoreError, settings: BucketConfig): void => {
    hooks.storeError();
    const line = describeStoreFailure(error, { offerLocal: !local });
    if (!local) {
      const stop = new RuntimeError(`${line}; the proxy stopped; restart it, or add --on-store-error local to keep serving with private buckets`);
      hooks.fatal(stop);
      throw stop;
    }
    if (!failed) writeStandardError(`tbucket: warning: ${line}; going on with private buckets at ${describeConfig(settings)}\n`);
    failed = true;
  };
  // A key first met after the store failed has taken nothing yet: it starts full, as a new key would.
  const privateBucket = (config: BucketConfig) => ({ limiter: new TokenBucket({ rate: config.rate, burst: config.burst }), close: async () => {} });
  const open: LimiterFactory = async (key, direction, spec) => {
    const storeKey = key === "" ? `${name}:${direction}` : `${name}:${direction}:${key}`;
    const wanted: BucketConfig = { rate: spec.bytesPerSecond, burst: spec.burstBytes, kind: "bytes" };
    if (failed) return privateBucket(wanted);
    let config: BucketConfig & { expiresWhenFull?: true };
    try {
      const stored = key === "" ? undefined : await opened.read(storeKey);
      // A client's keys are made for it, not set by a user: the store may forget them once full again.
      config = stored?.kind === "bytes" ? stored : await opened.configure(storeKey, wanted, { expireWhenFull: key !== "" });
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      lost(error, wanted);
      return privateBucket(wanted);
    }
    const limiter = new SharedLimiter({ store: opened, key: storeKey, config, expireWhenFull: config.expiresWhenFull === true });
    const failover = new FailoverLimiter(limiter, (error, settings) => {
      lost(error, settings);
      // Empty at first: the shared bucket may just have been drained, so no fresh burst.
      return new TokenBucket({ rate: settings.rate, burst: settings.burst, tokens: 0 });
    });
    limiter.startPolling();
    return { limiter: failover, close: () => limiter.close().catch(() => {}) };
  };
  return {
    open,
    close: async () => {
      await Promise.race([opened.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    },
  };
}
