import type { BucketStore } from "../store/bucket-store.js";
import { openStore, type StoreLocation } from "../store/open-store.js";
import { buildAssets } from "./build-assets.js";

/** Opens the store a command names, as this build opens stores (the standalone executable's SQLite addon). */
export function openCommandStore(location: StoreLocation): Promise<BucketStore> {
  return openStore(location, { sqliteNativeBinding: buildAssets().sqliteNativeBinding });
}
