import type { Clock } from "../core/clock.js";
import { type BucketConfig, type BucketState, type BucketStore, openKey } from "./bucket-store.js";
import { SharedLimiter } from "./shared-limiter.js";

export interface SharedKeyOptions {
  /** The key is made for a client, not set by a user: the store may forget it once full again (ConfigureOptions). */
  expireWhenFull?: boolean;
  /** Read the key's settings on a timer while no take does (a long transfer follows a `tbucket key set`). */
  poll?: boolean;
  clock?: Clock;
}

/**
 * Opens a key's shared bucket: with the settings the store holds for it when
 * it has the key with tokens of the same kind (a `tbucket key set` stands),
 * else made with `settings`. A key that came back from an outage is opened
 * this way too: a store restarted empty gets the key again, as it was.
 */
export async function openSharedKey(store: BucketStore, key: string, settings: BucketConfig, options: SharedKeyOptions = {}): Promise<SharedLimiter> {
  const config = await openKey(store, key, settings, { expireWhenFull: options.expireWhenFull === true });
  return sharedKeyLimiter(store, key, config, options);
}

/** The limiter of a key the store holds as `state`: one made for a client (`expiresWhenFull`) is made anew should the store forget it. */
export function sharedKeyLimiter(store: BucketStore, key: string, state: BucketState, options: Pick<SharedKeyOptions, "poll" | "clock"> = {}): SharedLimiter {
  const limiter = new SharedLimiter({ store, key, config: state, clock: options.clock, expireWhenFull: state.expiresWhenFull === true });
  if (options.poll) limiter.startPolling();
  return limiter;
}
