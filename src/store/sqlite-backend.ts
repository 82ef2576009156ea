import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { StoreBackend } from "./store-backend.js";
import { StoreUrlError } from "./store-url-error.js";

/** A SQLite file: `sqlite:` (the default file), `sqlite:<path>`, `sqlite::memory:`. */
export interface SqliteLocation {
  readonly type: "sqlite";
  readonly path: string;
  readonly url: string;
}

/** The default SQLite file: `$XDG_STATE_HOME/tbucket/buckets.db`, else `~/.local/state/tbucket/buckets.db`. */
export function defaultSqlitePath(env: Record<string, string | undefined>, home = homedir()): string {
  const state = env.XDG_STATE_HOME;
  // The XDG spec says a relative value is invalid and must be ignored.
  const base = state && isAbsolute(state) ? state : join(env.HOME || home, ".local", "state");
  return join(base, "tbucket", "buckets.db");
}

/** Buckets in one SQLite file, shared by the processes of one machine (sqlite-store.ts). */
export const sqliteBackend: StoreBackend<SqliteLocation> = {
  type: "sqlite",
  schemes: ["sqlite:"],
  examples: ["sqlite:", "sqlite:/path/buckets.db"],
  help: "sqlite:, sqlite:<path>",
  another: "sqlite:<file>",
  parse(text, env) {
    let rest = text.slice("sqlite:".length);
    if (rest.startsWith("//")) rest = rest.slice(2);
    const query = rest.search(/[?#]/);
    if (query !== -1) {
      // SQLite's own URI options (?mode=ro) are not read: the text would become part of the file's name.
      throw new StoreUrlError(text, `options after "${rest[query]}" are not read`, `name the file alone, as in sqlite:${rest.slice(0, query) || "/path/buckets.db"}`);
    }
    const path = rest === "" ? defaultSqlitePath(env) : rest === ":memory:" ? rest : resolve(rest.replace(/^~(?=\/|$)/, env.HOME || homedir()));
    return { type: "sqlite", path, url: `sqlite:${path}` };
  },
  exists: (location) => existsSync(location.path),
  async open(location, options) {
    const { SqliteStore } = await import("./sqlite-store.js");
    return SqliteStore.open(location.path, { url: location.url, clock: options.clock, busyTimeoutMs: options.busyTimeoutMs, nativeBinding: options.sqliteNativeBinding });
  },
};
