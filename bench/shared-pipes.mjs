#!/usr/bin/env node
// Pipes sharing one key: what they deliver together over a window, as a share of rate·T, and
// each pipe's part of it, on SQLite and on Redis (issue 19: the goal is 0.97 of rate·T).
//
//   npm run build && node bench/shared-pipes.mjs          # 3 pipes, 2 MiB/s, 5 s; about 30 s
//   node bench/shared-pipes.mjs --pipes 3 --rate 1mb --seconds 5 --runs 2 --input pipe
//
// --input zero: each pipe reads /dev/zero (as `tbucket ... < /dev/zero`); pipe: this script
// feeds each one's standard input. --output pipe: to this script, which timestamps it (the
// pipe then moves bytes with splice(2)); file: to a file whose size is read at the window's
// ends (read and written through JavaScript, as `> /dev/null` is). The window starts once
// every pipe has written, so start-up and the first burst stay out. The last rows are as many
// pipes, each on a private bucket at the rate: their figure from the start (per pipe) is what
// start-up costs any pipe started beside others.
// Needs redis-server on PATH (Debian: apt-get install redis-server) for the Redis rows.
// The machine's other load shows in these figures: say what it was (the load average is printed).
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRedis } from "./redis-server.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const PIPES = Number(arg("pipes", "3"));
const RATE_TEXT = arg("rate", "2mb");
const SECONDS = Number(arg("seconds", "5"));
const RUNS = Number(arg("runs", "2"));
const INPUT = arg("input", "zero");
const OUTPUT = arg("output", "pipe");
const ONLY = arg("only", "both");
const UNITS = { kb: 1024, mb: 1024 ** 2, k: 1024, m: 1024 ** 2 };
const RATE = Number(/^[\d.]+/.exec(RATE_TEXT)[0]) * (UNITS[/[a-z]+$/.exec(RATE_TEXT)?.[0] ?? ""] ?? 1);

/** One tbucket on the key, its output counted with the time each chunk arrived. */
function startPipe(key, store, outputPath) {
  const stdin = INPUT === "zero" ? openSync("/dev/zero", "r") : "pipe";
  const stdout = OUTPUT === "file" ? openSync(outputPath, "w") : "pipe";
  const shared = store === undefined ? [] : ["--key", key, "--store", store];
  const child = spawn(process.execPath, [TBUCKET, ...shared, "--rate", RATE_TEXT], { stdio: [stdin, stdout, "inherit"] });
  if (typeof stdout === "number") closeSync(stdout);
  if (typeof stdin === "number") closeSync(stdin);
  else {
    const block = Buffer.alloc(1024 * 1024);
    const feed = () => {
      while (child.stdin.writable && child.stdin.write(block));
    };
    child.stdin.on("drain", feed);
    child.stdin.on("error", () => {});
    feed();
  }
  const exited = new Promise((resolve) => child.once("close", resolve));
  if (OUTPUT === "file") {
    // The file's size, sampled: written() at the window's ends.
    const written = () => statSync(outputPath).size;
    return { child, exited, started: () => written() > 0, mark: written };
  }
  const received = [];
  child.stdout.on("data", (chunk) => received.push([performance.now(), chunk.length]));
  const between = (fromMs, toMs) => received.reduce((sum, [atMs, bytes]) => (atMs >= fromMs && atMs < toMs ? sum + bytes : sum), 0);
  return { child, exited, started: () => received.length > 0, between, firstMs: () => received[0][0] };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * PIPES pipes on one key: delivered / (rate·T) and each pipe's share over SECONDS once all of
 * them flow; with output to this script also over the first SECONDS from their start (what
 * `timeout T tbucket ...` counts, start-up included), and when the first byte came.
 */
async function measure(store, name) {
  const key = `bench-${Math.random().toString(36).slice(2)}`;
  const spawnedMs = performance.now();
  const pipes = [];
  // Private buckets, for comparison: each pipe has the whole rate.
  const rateOfAll = store === undefined ? RATE * PIPES : RATE;
  try {
    for (let i = 0; i < PIPES; i++) pipes.push(startPipe(key, store, join(work, `out-${i}`)));
    const deadline = performance.now() + 10_000;
    while (!pipes.every((p) => p.started())) {
      if (performance.now() > deadline) throw new Error(`${name}: the pipes did not all start`);
      await sleep(20);
    }
    let parts;
    let fromStart;
    if (OUTPUT === "file") {
      await sleep(200);
      const before = pipes.map((p) => p.mark());
      const fromMs = performance.now();
      await sleep(SECONDS * 1000);
      const after = pipes.map((p) => p.mark());
      // The window as slept, which a busy machine stretches.
      const scale = (SECONDS * 1000) / (performance.now() - fromMs);
      parts = after.map((bytes, i) => (bytes - before[i]) * scale);
    } else {
      const fromMs = performance.now() + 200;
      await sleep(Math.max(fromMs + SECONDS * 1000, spawnedMs + SECONDS * 1000) - performance.now() + 300);
      parts = pipes.map((p) => p.between(fromMs, fromMs + SECONDS * 1000));
      const firstByteMs = Math.min(...pipes.map((p) => p.firstMs())) - spawnedMs;
      const bytes = pipes.reduce((sum, p) => sum + p.between(spawnedMs, spawnedMs + SECONDS * 1000), 0);
      fromStart = { delivered: bytes / (rateOfAll * SECONDS), firstByteMs };
    }
    const total = parts.reduce((a, b) => a + b, 0);
    return { delivered: total / (rateOfAll * SECONDS), shares: parts.map((part) => part / total), fromStart };
  } finally {
    for (const p of pipes) p.child.kill("SIGTERM");
    await Promise.all(pipes.map((p) => p.exited));
  }
}

const work = mkdtempSync(join(tmpdir(), "tbucket-bench-shared-"));
const redis = ONLY === "sqlite" ? undefined : await startRedis(work);
try {
  const stores = [];
  if (ONLY !== "redis") stores.push(["SQLite", `sqlite:${join(work, "buckets.db")}`]);
  if (redis) stores.push(["Redis", redis.url]);
  if (OUTPUT === "pipe") stores.push(["private", undefined]);
  console.log(`${PIPES} pipes on one key at ${RATE_TEXT} (${RATE} B/s), ${SECONDS} s windows, input ${INPUT}, output ${OUTPUT}; load average before: ${loadavg().map((l) => l.toFixed(2)).join(", ")}\n`);
  console.log("store    run  steady: delivered/(r·T)  shares               from start: delivered/(r·T)  first byte");
  for (const [name, url] of stores) {
    for (let run = 1; run <= RUNS; run++) {
      const { delivered, shares, fromStart } = await measure(url, name);
      const start = fromStart ? `${fromStart.delivered.toFixed(3).padStart(27)}  ${fromStart.firstByteMs.toFixed(0).padStart(7)} ms` : "";
      console.log(`${name.padEnd(7)}  ${String(run).padStart(3)}  ${delivered.toFixed(3).padStart(23)}  ${shares.map((s) => s.toFixed(3)).join(" ").padEnd(20)} ${start}`);
    }
  }
  console.log(`\nload average after: ${loadavg().map((l) => l.toFixed(2)).join(", ")}`);
} finally {
  redis?.stop();
  await sleep(100);
  rmSync(work, { recursive: true, force: true });
}
