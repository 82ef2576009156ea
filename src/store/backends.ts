import { memoryBackend } from "./memory-store.js";
import { redisBackend } from "./redis-backend.js";
import { sqliteBackend } from "./sqlite-backend.js";
import type { StoreBackend } from "./store-backend.js";

/**
 * Every kind of store tbucket opens, in the order `--store` text is matched
 * against their schemes. A new backend is one file (its StoreBackend, and a
 * BucketStore that raises store-neutral StoreErrors) and one line here; the
 * conformance suite (test/store/conformance.test.ts) runs against every
 * backend listed, and fails for one it has no fixture for.
 */
export const STORE_BACKENDS: readonly StoreBackend[] = [sqliteBackend, redisBackend, memoryBackend];

/** The backend a store text or URL names by its scheme; undefined for none. */
export function backendOf(text: string): StoreBackend | undefined {
  const lower = text.toLowerCase();
  return STORE_BACKENDS.find((backend) => backend.schemes.some((scheme) => lower.startsWith(scheme)));
}
