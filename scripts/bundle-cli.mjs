#!/usr/bin/env node
// Bundles the CLI for bin/tbucket into one CommonJS file, dist/cli.cjs, with
// commander inlined. Each command's working code is wrapped so that it
// runs only when that command is imported, and V8 compiles a function only when
// it is first called, so the unused code costs a quick scan. One CommonJS file
// starts about 20 ms (of CPU) sooner than ESM chunks, which start the ESM loader,
// and about 40 ms sooner than dozens of modules. The native and network clients
// (better-sqlite3, ioredis) stay in node_modules, loaded only by a shared key, and then
// with require(): an import() would start the ESM loader for them, which cost a pipe on a
// Redis key 30 to 40 ms of CPU before its first byte (docs/benchmarks.md, "Pipes sharing a key").
import { readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const outfile = join(root, "dist", "cli.cjs");

rmSync(join(root, "dist", "cli-bundle"), { recursive: true, force: true });
await build({
  entryPoints: [join(root, "src/cli/main.ts")],
  outfile,
  bundle: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  external: ["better-sqlite3", "ioredis"],
  supported: { "dynamic-import": false },
  define: { TBUCKET_VERSION: JSON.stringify(version), "import.meta.url": "__tbucket_import_meta_url" },
  // CommonJS has no import.meta; the bundle's own URL stands in (only unbundled paths would use it).
  banner: { js: 'var __tbucket_import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
  logLevel: "warning",
});
