/**
 * The entry point of the standalone executable (scripts/build-binary.mjs bundles
 * it into one CommonJS file for Node's Single Executable Applications). It does
 * what bin/tbucket does, without top-level await, and tells main where the
 * SQLite addon it carries is.
 */
import { getAsset, isSea } from "node:sea";
import { main } from "./main.js";
import { materializeAddon } from "./sea-native-addon.js";
import { version } from "./version.js";

/** Set by the build: the addon's asset key, size and hash; undefined when none is embedded. */
declare const TBUCKET_SEA_ADDON: { assetKey: string; sizeBytes: number; sha256: string } | undefined;

/** Where the embedded SQLite addon is, written out the first time a SQLite store opens: a pipe or --version never touches the disk. */
function embeddedSqliteAddon(): (() => string) | undefined {
  if (typeof TBUCKET_SEA_ADDON === "undefined" || !isSea()) return undefined;
  const embedded = TBUCKET_SEA_ADDON;
  let path: string | undefined;
  return () => (path ??= materializeAddon({ ...embedded, version: version(), readAsset: () => getAsset(embedded.assetKey) }));
}

main(process.argv.slice(2), { sqliteNativeBinding: embeddedSqliteAddon() }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // main() reports every error itself; this is a last resort, never a silent exit 0.
    process.stderr.write(`tbucket: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
