import type { Clock } from "../core/clock.js";
import type { BucketStore } from "./bucket-store.js";

/** Where a store lives, as its backend parsed it from `--store` or `TBUCKET_STORE`: the backend's name, the address for messages, and what else the backend needs. */
export interface StoreLocation {
  /** The backend's name (StoreBackend.type). */
  readonly type: string;
  /** The store's address, as messages show it. */
  readonly url: string;
}

export interface OpenStoreOptions {
  clock?: Clock;
  /** How long to wait for another process holding the store (SQLite's busy timeout). */
  busyTimeoutMs?: number;
  /** How long to try to reach a store on the network (Redis). */
  connectTimeoutMs?: number;
  /** SQLite: where better-sqlite3's compiled addon is, when not beside the package (SqliteStoreOptions.nativeBinding). */
  sqliteNativeBinding?: string | (() => string);
}

/**
 * A kind of store, as it registers itself in STORE_BACKENDS (backends.ts):
 * what it answers to, how it reads its address, and how it opens. Its errors
 * are StoreErrors of the store-neutral kinds (StoreFailure), their message
 * in its own words; the CLI's advice is keyed by the kind and `another`.
 * A backend loads its driver only when it opens.
 */
export interface StoreBackend<Location extends StoreLocation = StoreLocation> {
  /** Its name, the `type` of its locations: `sqlite`, `redis`. */
  readonly type: Location["type"];
  /** The URL schemes it answers to, in lower case (matched ignoring case): `sqlite:`, `redis://`. */
  readonly schemes: readonly string[];
  /** Addresses to suggest when a text names no store at all (none: it is not suggested). */
  readonly examples: readonly string[];
  /** How `--store`'s help names its addresses: `sqlite:, sqlite:<path>`. */
  readonly help?: string;
  /** How to name another store of this kind, in advice: `sqlite:<file>`. */
  readonly another: string;
  /**
   * Reads an address whose scheme is one of `schemes` (trimmed); throws a
   * StoreUrlError, saying what to write, for one written wrongly.
   */
  parse(text: string, env: Record<string, string | undefined>): Location;
  /** Whether the store is there to read without making it (a completion never creates one); without this, it is asked. */
  exists?(location: Location): boolean;
  /** Opens the store; a failure is a StoreError with a one-line message. */
  open(location: Location, options: OpenStoreOptions): Promise<BucketStore>;
}
