import { humanDuration } from "../../core/format.js";
import { type BucketConfig, type BucketStore, StoreError } from "../../store/bucket-store.js";
import { KeyBuckets, keyName } from "../../store/key-buckets.js";
import type { LimiterFactory } from "../../proxy/bucket-pool.js";
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
  let store: BucketStore | StoreError;
  try {
    store = await openCommandStore(storeLocation(shared.store));
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const line = describeStoreFailure(error, { offerLocal: !local });
    if (!local) throw new RuntimeError(line);
    hooks.storeError();
    writeStandardError(`tbucket: warning: ${line}; going on with private buckets\n`);
    store = error;
  }
  const keys: KeyBuckets = new KeyBuckets({
    store,
    poll: true,
    onLost: (error) => {
      hooks.storeError();
      const meanwhile = local ? "going on with private buckets of the same settings" : "transfers wait";
      writeStandardError(`tbucket: warning: ${describeStoreFailure(error, { offerLocal: false })}; ${meanwhile} until it is back\n`);
    },
    onBack: (lostForMs) => {
      hooks.storeBack();
      writeStandardError(`tbucket: store ${keys.url}: back after ${humanDuration(lostForMs)}; the buckets are shared again\n`);
    },
    whileLost: local ? { mode: "local" } : { mode: "wait", timeoutMs: Infinity, giveUp: (error) => error },
  });
  const open: LimiterFactory = async (client, direction, spec) => {
    const settings: BucketConfig = { rate: spec.bytesPerSecond, burst: spec.burstBytes, kind: "bytes" };
    const limiter =
      client === ""
        ? // The link's keys are set from the command line: the proxy's flags are the link's settings.
          await keys.open(keyName(name, direction), { settings, setUp: (store) => store.configure(keyName(name, direction), settings) })
        : // A client's keys are made for it, not set by a user: the store may forget them once full again.
          await keys.open(keyName(name, direction, client), { settings, expireWhenFull: true });
    return { limiter, close: () => limiter.close().catch(() => {}) };
  };
  return { open, close: () => keys.close() };
}
