import type { BucketStore } from "../store/bucket-store.js";
import { openStore as openStoreAt, parseStoreLocation } from "../store/open-store.js";

/**
 * Opens the store that `rateLimit({ store: { store, name } })` shares buckets
 * through, by its address: `sqlite:/path/buckets.db`, `redis://host:6379/0`
 * or `memory:`. Rejects with a StoreUrlError for an address that is none,
 * and a StoreError when the store cannot be opened; close it when done.
 */
export async function openStore(url: string): Promise<BucketStore> {
  return openStoreAt(parseStoreLocation(url, process.env));
}

/**
 * The store on an ioredis client of your own (a Redis, a Cluster, one made
 * for Sentinel), for `rateLimit({ store: { store, name } })`: your client's
 * connection and options, the same keys and scripts as `openStore`'s.
 * Closing the store leaves your client open. Rejects with a StoreError when
 * the client cannot be made ready.
 */
export async function redisStore(client: RedisClientLike): Promise<BucketStore> {
  const { RedisStore } = await import("../store/redis-store.js");
  return RedisStore.fromClient(client as never);
}

/** An ioredis `Redis` or `Cluster` (typed loosely here, so that tbucket/http's types do not need ioredis's). */
export interface RedisClientLike {
  readonly status: string;
  script(...args: never[]): unknown;
}
