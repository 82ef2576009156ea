import { humanDuration } from "../../core/format.js";
import { type BucketConfig, type BucketStore, StoreError } from "../../store/bucket-store.js";
import { closeQuietly, KeyBuckets, keyName } from "../../store/key-buckets.js";
import type { LimiterFactory } from "../../proxy/bucket-pool.js";
import type { SharedHttpBuckets } from "../../proxy/http-proxy.js";
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
  const store = await openProxyStore(shared, hooks);
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
    const key = client === "" ? keyName(name, direction) : keyName(name, direction, client);
    const limiter = await keys.open(
      key,
      client === ""
        ? // The link's keys are set from the command line: the proxy's flags are the link's settings.
          { settings, setUp: (store) => store.configure(key, settings) }
        : // A client's keys are made for it, not set by a user: the store may forget them once full again.
          { settings, expireWhenFull: true },
    );
    return { limiter, close: () => limiter.close().catch(() => {}) };
  };
  return { open, close: () => keys.close() };
}

/** The HTTP mode's store: the middleware watches it and opens each client's `NAME:<client>`; without one (see openProxyStore) every client's bucket is private. */
export async function openHttpStoreBuckets(
  shared: SharedBucketOptions,
  hooks: Pick<StoreBucketHooks, "storeError">,
): Promise<{ url: string; buckets: SharedHttpBuckets | undefined; close(): Promise<void> }> {
  const store = await openProxyStore(shared, hooks);
  if (store instanceof StoreError) return { url: "", buckets: undefined, close: async () => {} };
  return { url: store.url, buckets: { store, name: shared.key!, onStoreError: shared.onStoreError }, close: () => closeQuietly(() => store.close()) };
}

/**
 * The store a proxy's --key names, in either mode. One that cannot be opened
 * stops the proxy, or with --on-store-error local is said once and counted
 * as a store error (the metrics say it is not up), and every key is then private.
 */
async function openProxyStore(shared: SharedBucketOptions, hooks: Pick<StoreBucketHooks, "storeError">): Promise<BucketStore | StoreError> {
  const local = shared.onStoreError === "local";
  try {
    return await openCommandStore(storeLocation(shared.store));
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const line = describeStoreFailure(error, { offerLocal: !local });
    if (!local) throw new RuntimeError(line);
    hooks.storeError();
    writeStandardError(`tbucket: warning: ${line}; going on with private buckets\n`);
    return error;
  }
}
