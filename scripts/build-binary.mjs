#!/usr/bin/env node
// Builds dist/tbucket-linux-x64: one file that runs without Node installed.
//
// Node's own Single Executable Applications (SEA), offline: esbuild bundles the
// CLI into one CommonJS file, `node --experimental-sea-config` turns it (with the
// better-sqlite3 addon as an asset) into a blob, and postject injects the blob
// into a stripped copy of this node binary.
//
// Usage: node scripts/build-binary.mjs [--out <file>] [--no-strip] [--no-code-cache] [--quiet] [--keep]
//        [--entry <file.ts>]
// (--entry swaps the bundle's entry point, to try the SEA machinery on a small program.)
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { builtinModules, createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));

const args = process.argv.slice(2);
const quiet = args.includes("--quiet");
const noStrip = args.includes("--no-strip");
const noCodeCache = args.includes("--no-code-cache");
const outIndex = args.indexOf("--out");
const output = resolve(root, outIndex >= 0 ? args[outIndex + 1] : "dist/tbucket-linux-x64");
const entryIndex = args.indexOf("--entry");
const entry = entryIndex >= 0 ? resolve(args[entryIndex + 1]) : join(root, "src/cli/sea-entry.ts");
// Intermediate files (bundle, blob, stripped addon) live in a temporary folder, so that
// dist/ holds only the executable beside tsc's output; --keep leaves them for inspection.
const keep = args.includes("--keep");
const work = mkdtempSync(join(tmpdir(), "tbucket-sea-"));

// The postject sentinel Node looks for to know a blob was injected (node/src/node_sea.cc).
const SEA_FUSE = "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2";
const ADDON_ASSET = "better_sqlite3.node";
const IO_ADDON_ASSET = "tbucket_io.node";

/**
 * Modules replaced in the bundle. `bindings` is better-sqlite3's search of the disk for
 * its addon: in the executable the addon comes from nativeBinding, never from there.
 * `supports-color` is an optional require of `debug` (ioredis): absent, and SEA's
 * require would warn on every Redis use before failing.
 */
const STUBS = {
  bindings:
    "module.exports = () => { throw new Error(" +
    JSON.stringify("better-sqlite3 has no addon on disk in the standalone executable; main() is given sqliteNativeBinding by sea-entry") +
    "); };",
  "supports-color": "module.exports = {};",
};

const log = (line) => {
  if (!quiet) process.stderr.write(`build-binary: ${line}\n`);
};
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

if (process.platform !== "linux" || process.arch !== "x64") {
  fail(`this builds a Linux x64 executable from the running node; this is ${process.platform}-${process.arch}`);
}
const [major, minor] = process.versions.node.split(".").map(Number);
if (major < 20 || (major === 20 && minor < 12)) {
  fail(`Node ${process.versions.node} has no SEA assets; use Node 20.12 or later`);
}

const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
process.on("exit", () => {
  if (keep) process.stderr.write(`build-binary: intermediate files kept in ${work}\n`);
  else rmSync(work, { recursive: true, force: true });
});

// 1. The native SQLite addon, stripped of its symbols, becomes a SEA asset.
const addonSource = join(dirname(require.resolve("better-sqlite3/package.json")), "build", "Release", "better_sqlite3.node");
const addonPath = join(work, ADDON_ASSET);
copyFileSync(addonSource, addonPath);
const addonBefore = statSync(addonPath).size;
if (!noStrip) stripFile(addonPath, ["--strip-unneeded"]);
const addonBytes = readFileSync(addonPath);
const addon = {
  assetKey: ADDON_ASSET,
  sizeBytes: addonBytes.length,
  sha256: createHash("sha256").update(addonBytes).digest("hex").slice(0, 16),
};
log(`SQLite addon: ${mib(addonBefore)} -> ${mib(addon.sizeBytes)} after strip`);

// 1b. tbucket's own native part (splice, pipe sizes), built by `npm ci` (scripts/build-native.mjs);
// built here if missing. Without it the executable copies through the JavaScript path.
const ioAddonSource = join(root, "build", "Release", IO_ADDON_ASSET);
if (!existsSync(ioAddonSource)) run(process.execPath, [join(root, "scripts", "build-native.mjs")]);
let ioAddon;
const ioAddonPath = join(work, IO_ADDON_ASSET);
if (existsSync(ioAddonSource)) {
  copyFileSync(ioAddonSource, ioAddonPath);
  if (!noStrip) stripFile(ioAddonPath, ["--strip-unneeded"]);
  const ioBytes = readFileSync(ioAddonPath);
  ioAddon = { assetKey: IO_ADDON_ASSET, sizeBytes: ioBytes.length, sha256: createHash("sha256").update(ioBytes).digest("hex").slice(0, 16) };
  log(`native part: ${ioBytes.length} bytes`);
} else {
  log("native part not built: the executable copies through the JavaScript path");
}

// 2. One CommonJS bundle. Lazy `await import("./x.js")` of static relative paths are
// bundled by esbuild (no splitting) and stay lazy: each module runs when first imported.
const esbuild = await import("esbuild");
const bundlePath = join(work, "tbucket.cjs");
const result = await esbuild
  .build({
  absWorkingDir: root,
  entryPoints: [entry],
  nodePaths: [join(root, "node_modules")],
  outfile: bundlePath,
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  minifySyntax: true,
  minifyWhitespace: true,
  legalComments: "eof",
  metafile: true,
  logLevel: "warning",
  banner: {
    // SEA's own `require` loads only built-in modules; a native addon needs a real one.
    // `import.meta.url` has no meaning in CommonJS: the executable's own URL stands in.
    js: [
      `var __tbucket_require = require("node:module").createRequire(__filename);`,
      `var __tbucket_import_meta_url = require("node:url").pathToFileURL(__filename).href;`,
    ].join("\n"),
  },
  define: {
    TBUCKET_VERSION: JSON.stringify(version),
    TBUCKET_SEA_ADDON: JSON.stringify(addon),
    TBUCKET_SEA_IO_ADDON: ioAddon ? JSON.stringify(ioAddon) : "undefined",
    "import.meta.url": "__tbucket_import_meta_url",
    // better-sqlite3 loads a nativeBinding path with __non_webpack_require__ when it is a function.
    __non_webpack_require__: "__tbucket_require",
  },
  plugins: [stubModulesPlugin()],
  })
  .catch((error) => fail(`esbuild failed: ${error.message}`));
const bundle = readFileSync(bundlePath, "utf8");
// A dynamic import() left in the bundle would fail at run time inside the executable.
const leftover = [...bundle.matchAll(/\bimport\(\s*[^)"'`\s]/g)].length;
if (leftover > 0) fail(`${leftover} dynamic import() with a computed path left in the bundle; make the path static`);
// SEA's require loads built-in modules only: any other require left unbundled would fail.
const unbundled = [...new Set([...bundle.matchAll(/\brequire\("([^"]+)"\)/g)].map((match) => match[1]))].filter(
  (id) => !id.startsWith("node:") && !builtinModules.includes(id),
);
if (unbundled.length > 0) fail(`require() of ${unbundled.join(", ")} left in the bundle; bundle or stub them`);
log(`bundle: ${mib(bundle.length)} (${Object.keys(result.metafile.inputs).length} modules)`);

// 3. The SEA blob: the bundle, its V8 code cache, and the addon asset.
const seaConfigPath = join(work, "sea-config.json");
const blobPath = join(work, "sea-prep.blob");
writeFileSync(
  seaConfigPath,
  JSON.stringify(
    {
      main: bundlePath,
      output: blobPath,
      disableExperimentalSEAWarning: true,
      // V8's compiled code for the bundle, made at build time: less to compile at each start.
      useCodeCache: !noCodeCache,
      assets: { [ADDON_ASSET]: addonPath, ...(ioAddon ? { [IO_ADDON_ASSET]: ioAddonPath } : {}) },
    },
    null,
    2,
  ),
);
run(process.execPath, ["--experimental-sea-config", seaConfigPath]);
log(`blob: ${mib(statSync(blobPath).size)}`);

// 4. A stripped copy of node with the blob injected.
mkdirSync(dirname(output), { recursive: true });
rmSync(output, { force: true });
copyFileSync(process.execPath, output);
chmodSync(output, 0o755);
const nodeBefore = statSync(output).size;
if (!noStrip) stripFile(output, ["--strip-all"]);
log(`node ${process.version}: ${mib(nodeBefore)} -> ${mib(statSync(output).size)} after strip`);
const postjectCli = join(dirname(require.resolve("postject/package.json")), "dist", "cli.js");
// postject (LIEF) warns about Node's many ELF notes; its output is shown only if it fails.
run(process.execPath, [postjectCli, output, "NODE_SEA_BLOB", blobPath, "--sentinel-fuse", SEA_FUSE], { silent: true });
const finalBytes = statSync(output).size;
log(`wrote ${relative(root, output)}: ${mib(finalBytes)}`);

// 5. It must run.
if (entryIndex >= 0) process.exit(0);
const check = spawnSync(output, ["--version"], { encoding: "utf8", env: {} });
if (check.status !== 0 || check.stdout.trim() !== version) {
  fail(`${relative(root, output)} --version gave status ${check.status}, "${check.stdout.trim()}" ${check.stderr}`);
}
log(`${relative(root, output)} --version: ${version}`);

/** Strips symbols when `strip` exists; without it the executable is larger but works the same. */
function stripFile(path, flags) {
  const found = spawnSync("strip", ["--version"], { stdio: "ignore" });
  if (found.error) {
    log(`strip not found: ${relative(root, path)} keeps its symbols`);
    return;
  }
  run("strip", [...flags, path]);
}

function stubModulesPlugin() {
  return {
    name: "tbucket-stub-modules",
    setup(build) {
      const filter = new RegExp(`^(${Object.keys(STUBS).join("|")})$`);
      build.onResolve({ filter }, ({ path }) => ({ path, namespace: "tbucket-stub" }));
      build.onLoad({ filter: /.*/, namespace: "tbucket-stub" }, ({ path }) => ({ contents: STUBS[path], loader: "js" }));
    },
  };
}

function run(command, commandArgs, { silent = quiet } = {}) {
  const done = spawnSync(command, commandArgs, { stdio: ["ignore", silent ? "pipe" : "inherit", silent ? "pipe" : "inherit"], encoding: "utf8" });
  if (done.error || done.status !== 0) {
    const said = silent ? `\n${done.stdout}${done.stderr}` : "";
    fail(`${command} ${commandArgs.join(" ")} failed: ${done.error?.message ?? `status ${done.status}`}${said}`);
  }
}

function fail(message) {
  process.stderr.write(`build-binary: ${message}\n`);
  process.exit(1);
}
