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
