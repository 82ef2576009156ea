/**
 * The entry point of the standalone executable (scripts/build-binary.mjs bundles
 * it into one CommonJS file for Node's Single Executable Applications). It does
 * what bin/tbucket does, without top-level await, after making the SQLite addon
 * it carries reachable through globalThis.TBUCKET_SQLITE_NATIVE_BINDING, and
 * tbucket's own native part (splice, pipe sizes) through TBUCKET_IO_NATIVE_PATH.
 */
import { getAsset, isSea } from "node:sea";
import { main } from "./main.js";
import { materializeAddon } from "./sea-native-addon.js";
import { version } from "./version.js";

/** Set by the build: each addon's asset key, size and hash; undefined when none is embedded. */
declare const TBUCKET_SEA_ADDON: { assetKey: string; sizeBytes: number; sha256: string } | undefined;
declare const TBUCKET_SEA_IO_ADDON: { assetKey: string; sizeBytes: number; sha256: string } | undefined;

function exposeSqliteAddon(): void {
  if (typeof TBUCKET_SEA_ADDON === "undefined" || !isSea()) return;
  const embedded = TBUCKET_SEA_ADDON;
  let path: string | undefined;
  // A getter: the addon is written out the first time the SQLite store asks, so
  // commands that never touch SQLite (a pipe, --version) never touch the disk.
  Object.defineProperty(globalThis, "TBUCKET_SQLITE_NATIVE_BINDING", {
    configurable: true,
    enumerable: false,
    get: () => (path ??= materializeAddon({ ...embedded, version: version(), readAsset: () => getAsset(embedded.assetKey) })),
  });
}

/**
 * The pipe asks for its native part when it starts: written out once per version
 * and reused. Where it cannot be written (TMPDIR read-only), the getter throws
 * and the pipe copies through its JavaScript path.
 */
function exposeIoAddon(): void {
  if (typeof TBUCKET_SEA_IO_ADDON === "undefined" || !isSea()) return;
  const embedded = TBUCKET_SEA_IO_ADDON;
  let path: string | undefined;
  Object.defineProperty(globalThis, "TBUCKET_IO_NATIVE_PATH", {
    configurable: true,
    enumerable: false,
    get: () => (path ??= materializeAddon({ ...embedded, label: "tbucket's native part", version: version(), readAsset: () => getAsset(embedded.assetKey) })),
  });
}

exposeSqliteAddon();
exposeIoAddon();
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // main() reports every error itself; this is a last resort, never a silent exit 0.
    process.stderr.write(`tbucket: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
