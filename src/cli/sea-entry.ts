/**
 * The entry point of the standalone executable (scripts/build-binary.mjs bundles
 * it into one CommonJS file for Node's Single Executable Applications). It does
 * what bin/tbucket does, without top-level await, and tells main where the
 * SQLite addon and tbucket's native part it carries are.
 */
import { getAsset, isSea } from "node:sea";
import { main } from "./main.js";
import { materializeAddon } from "./sea-native-addon.js";
import { version } from "./version.js";

type Embedded = { assetKey: string; sizeBytes: number; sha256: string };

/** Set by the build: each addon's asset key, size and hash; undefined when none is embedded. */
declare const TBUCKET_SEA_ADDON: Embedded | undefined;
declare const TBUCKET_SEA_IO_ADDON: Embedded | undefined;

/**
 * Where an embedded addon is, written out the first time it is asked for (once
 * per version, then reused), so that commands that never need it (--version,
 * a pipe for SQLite) never touch the disk.
 */
function embeddedAddon(embedded: Embedded | undefined, label?: string): (() => string) | undefined {
  if (embedded === undefined || !isSea()) return undefined;
  let path: string | undefined;
  return () => (path ??= materializeAddon({ ...embedded, label, version: version(), readAsset: () => getAsset(embedded.assetKey) }));
}

main(process.argv.slice(2), {
  sqliteNativeBinding: embeddedAddon(typeof TBUCKET_SEA_ADDON === "undefined" ? undefined : TBUCKET_SEA_ADDON),
  ioNativePath: embeddedAddon(typeof TBUCKET_SEA_IO_ADDON === "undefined" ? undefined : TBUCKET_SEA_IO_ADDON, "tbucket's native part"),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    // main() reports every error itself; this is a last resort, never a silent exit 0.
    process.stderr.write(`tbucket: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);
