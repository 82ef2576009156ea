import { humanDuration } from "../../core/format.js";
import type { BucketConfig, BucketStore } from "../../store/bucket-store.js";
import { StoreError } from "../../store/bucket-store.js";
import { FailoverLimiter, type StoreBackedLimiter } from "../../store/failover-limiter.js";
import { openSharedKey } from "../../store/shared-key.js";
import { SharedLimiter } from "../../store/shared-limiter.js";
import { isStoreFailure, StoreWatch } from "../../store/store-watch.js";
import { type LimiterFactory, openPrivateBucket } from "../../proxy/bucket-pool.js";
import { RuntimeError } from "../errors.js";
import type { SharedBucketOptions } from "../shared-options.js";
import { writeStandardError } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openCommandStore, storeLocation } from "../store-opener.js";

export interface StoreBuckets {
  open: LimiterFactory;
  close(): Promise<void>;
}

export interface StoreBucketHooks {
  /** The store was lost, or could not be reached at the start (metrics). */
  storeError(): void;
  /** The store answers again after an outage (metrics). */
  storeBack(): void;
}

/**
 * The TCP proxy's buckets in a store: `NAME:up` and `NAME:down` for the link,
 * `NAME:up:<client address>` and `NAME:down:<client address>` per client. The
 * link's keys take their settings from the command line; a client's key
 * keeps settings a `tbucket key set` gave it, else takes the command line's,
 * and is then made with `expireWhenFull`: the store forgets it once full again
 * (a full bucket is a new one), so the clients ever seen do not pile up.
 *
 * A store lost mid-run is said once, and asked again until it answers (said
 * once more): meanwhile transfers wait, or with --on-store-error local go on
 * with private buckets; then every key is shared again. The proxy stays up.
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
    return { open: openPrivateBucket, close: async () => {} };
  }
  const url = store.url;
  const watch = new StoreWatch(store, {
    onLost: (error) => {
      hooks.storeError();
      const meanwhile = local ? "going on with private buckets of the same settings" : "transfers wait";
      writeStandardError(`tbucket: warning: ${describeStoreFailure(error, { offerLocal: false })}; ${meanwhile} until it is back\n`);
    },
    onBack: (lostForMs) => {
      hooks.storeBack();
      writeStandardError(`tbucket: store ${url}: back after ${humanDuration(lostForMs)}; the buckets are shared again\n`);
    },
  });
  const open: LimiterFactory = async (key, direction, spec) => {
    const storeKey = key === "" ? `${name}:${direction}` : `${name}:${direction}:${key}`;
    const wanted: BucketConfig = { rate: spec.bytesPerSecond, burst: spec.burstBytes, kind: "bytes" };
    // A client's keys are made for it, not set by a user: the store may forget them once full again.
    const reopen = (settings: BucketConfig) => openSharedKey(watch, storeKey, settings, { expireWhenFull: key !== "", poll: true });
    let primary: StoreBackedLimiter | undefined;
    if (!watch.lost) {
      try {
        primary = key === "" ? await openLinkKey(watch, storeKey, wanted) : await reopen(wanted);
      } catch (error) {
        if (!isStoreFailure(error)) throw error;
      }
    }
    const limiter = new FailoverLimiter({
      watch,
      key: storeKey,
      settings: wanted,
      primary,
      reopen,
      whileLost: local ? { mode: "local" } : { mode: "wait", timeoutMs: Infinity, giveUp: (error) => error },
    });
    return { limiter, close: () => limiter.close().catch(() => {}) };
  };
  return {
    open,
    close: async () => {
      await Promise.race([watch.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    },
  };
}

/** The link's keys are set from the command line at the start: the proxy's flags are the link's settings. */
async function openLinkKey(store: BucketStore, key: string, wanted: BucketConfig): Promise<SharedLimiter> {
  const config = await store.configure(key, wanted);
  const limiter = new SharedLimiter({ store, key, config });
  limiter.startPolling();
  return limiter;
}
