import { systemClock } from "../../core/clock.js";
import { humanDuration } from "../../core/format.js";
import { type BucketConfig, type BucketStore, StoreError } from "../../store/bucket-store.js";
import { closeQuietly, KeyBuckets, keyName } from "../../store/key-buckets.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import { type LimiterFactory, singleBucket } from "../../proxy/bucket-pool.js";
import { type SlotOpener, waitWithin } from "../../proxy/connection-slots.js";
import { isLimitSetStore, type LimitSetStore, type SetState } from "../../store/limit-set-store.js";
import type { SharedHttpBuckets } from "../../proxy/http-proxy.js";
import { RuntimeError } from "../errors.js";
import type { SharedBucketOptions } from "../shared-options.js";
import { writeStandardError } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openCommandStore, storeLocation } from "../store-opener.js";
import type { DirectionWaits } from "./set-waits.js";

export interface StoreBuckets {
  open: LimiterFactory;
  /** --concurrency's slots on the store: `NAME:connections`, `NAME:connections:<client address>`. */
  openSlots: SlotOpener;
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
 * A direction limited by more than one limit (--rate repeated, --window) is
 * a set on the same key, taken as one step in the store; --concurrency's
 * slots are a set of one concurrency limit, `NAME:connections` for the link
 * and `NAME:connections:<client address>` per client, each slot held under a
 * lease the proxy renews while its connection is open.
 *
 * A store lost mid-run is said once, and asked again until it answers (said
 * once more): meanwhile transfers wait, or with --on-store-error local go on
 * with private buckets; then every key is shared again. The proxy stays up.
 */
export async function openStoreBuckets(shared: SharedBucketOptions, hooks: StoreBucketHooks, waits: DirectionWaits = {}): Promise<StoreBuckets> {
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
    const key = client === "" ? keyName(name, direction) : keyName(name, direction, client);
    const bucket = singleBucket(spec);
    if (!bucket) {
      const limiter = await keys.openSet(key, {
        unit: "bytes",
        limits: spec.limits,
        setUp: setUpSet(store, key, spec.limits, client === ""),
        onWait: (limitedBy, waitMs) => waits[direction]?.add(limitedBy, waitMs),
      });
      return { limiter, close: () => limiter.close().catch(() => {}) };
    }
    const settings: BucketConfig = { rate: bucket.rate, burst: bucket.burst, kind: "bytes" };
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
  const openSlots: SlotOpener = async (client, n) => {
    const key = client === "" ? keyName(name, "connections") : keyName(name, "connections", client);
    const limits: LimitSpec[] = [{ kind: "concurrency", n }];
    const slots = await keys.openSet(key, { unit: "count", limits, setUp: setUpSet(store, key, limits, client === "") });
    return {
      async acquire(maxWaitMs, signal) {
        // A bounded wait for a slot is the store's "no" at once (SharedSetLimiter): the time limit is this timer's.
        const release = await waitWithin(maxWaitMs, signal, systemClock, (within) => slots.acquire(ONE_CONNECTION, maxWaitMs === 0 ? 0 : Infinity, within));
        return release && (() => void release().catch(() => {}));
      },
      close: () => slots.close().catch(() => {}),
    };
  };
  return { open, openSlots, close: () => keys.close() };
}

const ONE_CONNECTION = { count: 1 } as const;

/**
 * How a key holding a set is set up: the link's from the command line; a
 * client's as the store holds it when a user set it (`tbucket key set`),
 * else made from the command line with `expireWhenFull`.
 */
function setUpSet(store: BucketStore | StoreError, key: string, limits: readonly LimitSpec[], link: boolean): (sets: LimitSetStore) => Promise<SetState> {
  if (!(store instanceof StoreError) && !isLimitSetStore(store)) {
    throw new RuntimeError(`--key: ${store.url} holds one rate and burst a key, not a set of limits; use a SQLite or Redis store, or give one --rate each way`);
  }
  if (link) return (sets) => sets.configureSet(key, limits);
  return async (sets) => {
    const stored = await sets.readSet(key);
    return stored && !stored.expiresWhenFull ? stored : sets.configureSet(key, limits, { expireWhenFull: true });
  };
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
