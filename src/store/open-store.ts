import type { BucketStore } from "./bucket-store.js";
import { backendOf, STORE_BACKENDS } from "./backends.js";
import type { OpenStoreOptions, StoreLocation } from "./store-backend.js";
import { StoreUrlError } from "./store-url-error.js";

export type { OpenStoreOptions, StoreLocation };
export { StoreUrlError };

/** Parses the text of `--store` or `TBUCKET_STORE` by the backend its scheme names (`sqlite:`, `redis://`, `memory:`...). */
export function parseStoreLocation(text: string, env: Record<string, string | undefined> = {}): StoreLocation {
  const trimmed = text.trim();
  const backend = backendOf(trimmed);
  if (!backend) throw notAStore(text);
  try {
    return backend.parse(trimmed, env);
  } catch (error) {
    if (error instanceof StoreUrlError && error.notAStore) throw notAStore(error.text);
    throw error;
  }
}

/** Opens a store, loading its driver (better-sqlite3, ioredis) only now. */
export async function openStore(location: StoreLocation, options: OpenStoreOptions = {}): Promise<BucketStore> {
  const backend = STORE_BACKENDS.find((candidate) => candidate.type === location.type);
  if (!backend) throw new Error(`openStore: no store backend "${location.type}"`);
  return backend.open(location, options);
}

/** Whether the store is there to read without making it; true when only asking it can tell. */
export function storeExists(location: StoreLocation): boolean {
  return STORE_BACKENDS.find((backend) => backend.type === location.type)?.exists?.(location) ?? true;
}

/** The text names no store: the message suggests the addresses the backends give as examples. */
function notAStore(text: string): StoreUrlError {
  const examples = STORE_BACKENDS.flatMap((backend) => backend.examples).map((example) => `"${example}"`);
  const list = examples.length > 1 ? `${examples.slice(0, -1).join(", ")} or ${examples.at(-1)}` : examples.join("");
  return new StoreUrlError(text, undefined, `try ${list}`);
}
