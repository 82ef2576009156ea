#!/usr/bin/env node
// Builds tbucket's native part (native/tbucket_io.c -> build/Release/tbucket_io.node)
// with node-gyp, as npm does for better-sqlite3. Run by npm at install (the
// "install" script); `npm run build:native` runs it again.
//
// The native part is optional: where it cannot be built (not Linux, no compiler,
// no Node.js headers), tbucket copies through its JavaScript path instead. So a
// failed build is one line on standard error and status 0, never a failed install.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`tbucket: native part: ${line}\n`);

if (process.platform !== "linux") {
  say(`not built on ${process.platform}; the JavaScript path copies instead`);
  process.exit(0);
}

const prefix = resolve(dirname(process.execPath), "..");
const nodeGyp = findNodeGyp();
if (!nodeGyp) {
  say("node-gyp not found (it comes with npm); the JavaScript path copies instead");
  process.exit(0);
}
const args = [nodeGyp, "rebuild"];
// Headers installed with Node.js (a distribution's package, or the official tarball)
// spare node-gyp a download, which fails offline.
if (!process.env.npm_config_nodedir && existsSync(join(prefix, "include", "node", "node_api.h"))) args.push(`--nodedir=${prefix}`);
const built = spawnSync(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
if (built.error || built.status !== 0) {
  const why = built.error?.message ?? built.stderr.trim().split("\n").filter((line) => /error/i.test(line)).slice(0, 3).join("; ");
  say(`build failed (${why || `status ${built.status}`}); the JavaScript path copies instead`);
  process.exit(0);
}

/** npm hands its node-gyp to install scripts; otherwise npm's own copy beside this node, or one on PATH. */
function findNodeGyp() {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
    process.env.npm_execpath && join(dirname(process.env.npm_execpath), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  ];
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return candidate;
  const onPath = spawnSync("sh", ["-c", "command -v node-gyp"], { encoding: "utf8" });
  return onPath.status === 0 ? onPath.stdout.trim() : undefined;
}
