#!/usr/bin/env node
// Builds the library's CommonJS twin, dist/cjs, for `require("tbucket")` and
// `require("tbucket/http")` on Node 20 (which cannot require ESM): every
// compiled module outside the CLI, turned into CommonJS one file for one file
// (not bundled, so that tbucket/http, tbucket/fetch and tbucket/fastify share
// one copy of each class and `instanceof` holds across them), with its
// declarations beside it. dist/cjs/package.json says "commonjs", so Node and
// TypeScript read both the .js and the .d.ts files there as CommonJS.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { transform } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const out = join(dist, "cjs");

/** The compiled modules of the library: the CLI and its bundle are ESM-free already or not the library's. */
function* modules(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path === out || path === join(dist, "cli")) continue;
      yield* modules(path);
    } else if (dir !== dist || entry.name === "index.js" || entry.name === "index.d.ts") {
      if (entry.name.endsWith(".js") || entry.name.endsWith(".d.ts")) yield path;
    }
  }
}

rmSync(out, { recursive: true, force: true });
for (const path of modules(dist)) {
  const target = join(out, relative(dist, path));
  mkdirSync(dirname(target), { recursive: true });
  if (path.endsWith(".d.ts")) {
    copyFileSync(path, target);
    continue;
  }
  const source = readFileSync(path, "utf8");
  // CommonJS has no import.meta: the ESM twin's URL stands in, so that paths relative to it (the native addon) hold.
  const banner = source.includes("import.meta")
    ? `var __tbucket_import_meta_url = require("node:url").pathToFileURL(require("node:path").resolve(__dirname, ${JSON.stringify(relative(dirname(target), path))})).href;`
    : "";
  const { code } = await transform(source, {
    format: "cjs",
    platform: "node",
    target: "node20",
    supported: { "dynamic-import": false },
    define: { "import.meta.url": "__tbucket_import_meta_url" },
    banner,
    logLevel: "warning",
  });
  writeFileSync(target, code);
}
writeFileSync(join(out, "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`);
