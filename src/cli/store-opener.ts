import type { BucketStore } from "../store/bucket-store.js";
import { type OpenStoreOptions, openStore, parseStoreLocation, type StoreLocation, StoreUrlError } from "../store/open-store.js";
import { buildAssets } from "./build-assets.js";
import { UsageError } from "./errors.js";

/** `--store`, else TBUCKET_STORE, else the default SQLite file; a bad value is a usage error naming where it came from. */
export function storeLocation(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): StoreLocation {
  const fromEnv = flag === undefined && env.TBUCKET_STORE !== undefined && env.TBUCKET_STORE !== "";
  const text = flag ?? (fromEnv ? env.TBUCKET_STORE! : "sqlite:");
  try {
    return parseStoreLocation(text, env);
  } catch (error) {
    if (error instanceof StoreUrlError) throw new UsageError(`${fromEnv ? "TBUCKET_STORE" : "--store"}: ${error.message}`);
    throw error;
  }
}

/** Opens the store a command names, as this build opens stores (the standalone executable's SQLite addon). */
export function openCommandStore(location: StoreLocation, options: Omit<OpenStoreOptions, "sqliteNativeBinding"> = {}): Promise<BucketStore> {
  return openStore(location, { ...options, sqliteNativeBinding: buildAssets().sqliteNativeBinding });
}
