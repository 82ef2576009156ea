#!/usr/bin/env node
// Start-up time, side by side: the npm build (node bin/tbucket) against the
// standalone executable (dist/tbucket-linux-x64), with `node -e 0` as the floor.
//
//   node bench/startup.mjs              # 30 runs each, with hyperfine when installed
//   node bench/startup.mjs --runs 100
//   node bench/startup.mjs --loop       # without hyperfine: spawns in node, round robin
//
// Needs `npm run build` and `npm run build:binary` (node scripts/build-binary.mjs).
// The machine may be busy (2 cores, other work): compare rows of one run, not runs; the
// "min" and "cpu" (user + system, hyperfine only) columns vary least under load.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const TBUCKET = join(root, "bin", "tbucket");
const EXECUTABLE = join(root, "dist", "tbucket-linux-x64");
const args = process.argv.slice(2);
const runs = Number(args[args.indexOf("--runs") + 1]) || 30;
const useHyperfine = !args.includes("--loop") && spawnSync("hyperfine", ["--version"]).status === 0;

for (const [path, how] of [
  [join(root, "dist", "cli", "main.js"), "npm run build"],
  [EXECUTABLE, "node scripts/build-binary.mjs"],
]) {
  if (!existsSync(path)) {
    process.stderr.write(`bench/startup: ${path} is missing; run ${how} first\n`);
    process.exit(1);
  }
}

const node = process.execPath;
/** Each row: a label and the argv; standard input is /dev/null, so a pipe ends at once. */
const rows = [
  ["node -e 0 (floor)", [node, "-e", "0"]],
  ["node bin/tbucket --version", [node, TBUCKET, "--version"]],
  ["tbucket-linux-x64 --version", [EXECUTABLE, "--version"]],
  ["node bin/tbucket --rate inf (empty pipe)", [node, TBUCKET, "--rate", "inf"]],
  ["tbucket-linux-x64 --rate inf (empty pipe)", [EXECUTABLE, "--rate", "inf"]],
  ["node bin/tbucket --help", [node, TBUCKET, "--help"]],
  ["tbucket-linux-x64 --help", [EXECUTABLE, "--help"]],
];

const results = useHyperfine ? measureWithHyperfine(rows) : measureWithLoop(rows);

const floor = results[0].meanMs;
const width = Math.max(...results.map((row) => row.label.length));
const out = [
  `start-up, ${runs} runs each (${useHyperfine ? "hyperfine -N, 3 warm-up runs" : "spawnSync in node, round robin, 3 warm-up rounds"}); node ${process.version}`,
  "",
  `${"command".padEnd(width)}  ${"mean ms".padStart(8)}  ${"± sd".padStart(6)}  ${"min ms".padStart(7)}  ${"over node -e 0".padStart(14)}  ${"cpu ms".padStart(7)}`,
  ...results.map(
    (row) =>
      `${row.label.padEnd(width)}  ${row.meanMs.toFixed(1).padStart(8)}  ${row.sdMs.toFixed(1).padStart(6)}  ${row.minMs.toFixed(1).padStart(7)}  ${signed(row.meanMs - floor).padStart(14)}  ${(row.cpuMs === undefined ? "-" : row.cpuMs.toFixed(1)).padStart(7)}`,
  ),
  "",
  `executable: ${(readFileSizeBytes(EXECUTABLE) / 1024 / 1024).toFixed(1)} MiB`,
];
process.stdout.write(`${out.join("\n")}\n`);

function measureWithHyperfine(commandRows) {
  const dir = mkdtempSync(join(tmpdir(), "tbucket-startup-"));
  try {
    const json = join(dir, "out.json");
    const quote = (words) => words.map((word) => (/^[\w./=+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(" ");
    execFileSync(
      "hyperfine",
      ["-N", "--warmup", "3", "--runs", String(runs), "--style", "none", "--export-json", json, ...commandRows.flatMap(([label, argv]) => ["-n", label, quote(argv)])],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    const { results: measured } = JSON.parse(readFileSync(json, "utf8"));
    // cpu: user + system time, mean; it varies less than wall time on a busy machine.
    return measured.map((row) => ({
      label: row.command,
      meanMs: row.mean * 1000,
      sdMs: (row.stddev ?? 0) * 1000,
      minMs: row.min * 1000,
      cpuMs: (row.user + row.system) * 1000,
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Round robin (one run of each command in turn), so that a change in the machine's load hits every row alike. */
function measureWithLoop(commandRows) {
  const times = commandRows.map(() => []);
  for (let i = 0; i < runs + 3; i++) {
    commandRows.forEach(([, argv], row) => {
      const startedNs = process.hrtime.bigint();
      const done = spawnSync(argv[0], argv.slice(1), { stdio: "ignore" });
      const elapsedMs = Number(process.hrtime.bigint() - startedNs) / 1e6;
      if (done.status !== 0) throw new Error(`${argv.join(" ")} exited with ${done.status}`);
      if (i >= 3) times[row].push(elapsedMs);
    });
  }
  return commandRows.map(([label], row) => {
    const list = times[row];
    const meanMs = list.reduce((sum, t) => sum + t, 0) / list.length;
    const sdMs = Math.sqrt(list.reduce((sum, t) => sum + (t - meanMs) ** 2, 0) / Math.max(1, list.length - 1));
    return { label, meanMs, sdMs, minMs: Math.min(...list) };
  });
}

function signed(ms) {
  return `${ms >= 0 ? "+" : "-"}${Math.abs(ms).toFixed(1)}`;
}

function readFileSizeBytes(path) {
  return Number(execFileSync("stat", ["-c", "%s", path], { encoding: "utf8" }).trim());
}
