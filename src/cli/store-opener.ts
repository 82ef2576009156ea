import type { BucketStore } from "../store/bucket-store.js";
import { type OpenStoreOptions, openStore, type StoreLocation } from "../store/open-store.js";

/**
 * How this build of the CLI opens stores, set once by its entry point (main's
 * options): the standalone executable says where its own SQLite addon is.
 * The stores themselves only ever get it as an option.
 */
let buildOptions: OpenStoreOptions = {};

export function setStoreOpenOptions(options: OpenStoreOptions): void {
  buildOptions = options;
}

/** Opens the store a command names, as this build opens stores. */
export function openCommandStore(location: StoreLocation): Promise<BucketStore> {
  return openStore(location, buildOptions);
}
