import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { Clock } from "../core/clock.js";
import type { BucketStore } from "./bucket-store.js";
import { parseRedisUrl } from "./redis-url.js";
import { StoreUrlError } from "./store-url-error.js";

/** Where a store lives, from the text of `--store` or `TBUCKET_STORE`. */
export type StoreLocation =
  | { type: "sqlite"; path: string; url: string }
  | { type: "redis"; url: string }
  | { type: "memory"; url: string };

export { StoreUrlError };

/** The default SQLite file: `$XDG_STATE_HOME/tbucket/buckets.db`, else `~/.local/state/tbucket/buckets.db`. */
export function defaultSqlitePath(env: Record<string, string | undefined>, home = homedir()): string {
  const state = env.XDG_STATE_HOME;
  // The XDG spec says a relative value is invalid and must be ignored.
  const base = state && isAbsolute(state) ? state : join(env.HOME || home, ".local", "state");
  return join(base, "tbucket", "buckets.db");
}

/** Parses `sqlite:`, `sqlite:<path>`, `redis://...`, `rediss://...` or `memory:`. */
export function parseStoreLocation(text: string, env: Record<string, string | undefined> = {}): StoreLocation {
  const trimmed = text.trim();
  if (/^sqlite:/i.test(trimmed)) {
    let rest = trimmed.slice("sqlite:".length);
    if (rest.startsWith("//")) rest = rest.slice(2);
    const query = rest.search(/[?#]/);
    if (query !== -1) {
      // SQLite's own URI options (?mode=ro) are not read: the text would become part of the file's name.
      throw new StoreUrlError(text, `options after "${rest[query]}" are not read`, `name the file alone, as in sqlite:${rest.slice(0, query) || "/path/buckets.db"}`);
    }
    const path = rest === "" ? defaultSqlitePath(env) : rest === ":memory:" ? rest : resolve(rest.replace(/^~(?=\/|$)/, env.HOME || homedir()));
    return { type: "sqlite", path, url: `sqlite:${path}` };
  }
  if (/^rediss?:\/\/[^\s]+$/i.test(trimmed)) {
    parseRedisUrl(trimmed);
    return { type: "redis", url: trimmed };
  }
  if (trimmed === "memory:") return { type: "memory", url: "memory:" };
  throw new StoreUrlError(text);
}

export interface OpenStoreOptions {
  clock?: Clock;
  /** SQLite: how long to wait for another process's transaction. */
  busyTimeoutMs?: number;
  /** Redis: how long to try to connect. */
  connectTimeoutMs?: number;
  /** SQLite: where better-sqlite3's compiled addon is, when not beside the package (SqliteStoreOptions.nativeBinding). */
  sqliteNativeBinding?: string | (() => string);
}

/** Opens a store, loading its driver (better-sqlite3, ioredis) only now. */
export async function openStore(location: StoreLocation, options: OpenStoreOptions = {}): Promise<BucketStore> {
  switch (location.type) {
    case "sqlite": {
      const { SqliteStore } = await import("./sqlite-store.js");
      return SqliteStore.open(location.path, {
        url: location.url,
        clock: options.clock,
        busyTimeoutMs: options.busyTimeoutMs,
        nativeBinding: options.sqliteNativeBinding,
      });
    }
    case "redis": {
      const { RedisStore } = await import("./redis-store.js");
      return RedisStore.open(location.url, { clock: options.clock, connectTimeoutMs: options.connectTimeoutMs });
    }
    case "memory": {
      const { MemoryStore } = await import("./memory-store.js");
      return new MemoryStore({ clock: options.clock });
    }
  }
}
