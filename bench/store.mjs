#!/usr/bin/env node
// Shared-bucket stores: how many takes a second each store serves, and how many
// round trips a pipe on a key makes at 100 MiB/s (leases keep it near 50/s).
//
//   npm run build && node bench/store.mjs            # about 25 s
//   node bench/store.mjs --seconds 1                   # shorter runs
//
// Needs redis-server on PATH (Debian: apt-get install redis-server) for the Redis rows.
// The machine's other load shows in these figures: run it on a quiet machine to compare.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRedis } from "./redis-server.mjs";

const DIST = new URL("../dist/", import.meta.url);
const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const secondsArg = process.argv.indexOf("--seconds");
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 2;
const MiB = 1024 * 1024;

const { SqliteStore } = await import(new URL("store/sqlite-store.js", DIST).href);
const { RedisStore } = await import(new URL("store/redis-store.js", DIST).href);

// A rate so high that takes never wait: this measures the store, not the bucket.
const FAST = { rate: 1e12, burst: 1e12, kind: "count" };

/** Takes one at a time for `seconds`; returns takes per second. */
async function sequentialTakes(store, key, seconds) {
  await store.configure(key, FAST);
  let takes = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await store.take(key, 1);
    takes++;
  }
  return takes / seconds;
}

/** Keeps `depth` takes in flight on one connection (ioredis pipelines them); returns takes per second. */
async function pipelinedTakes(store, key, seconds, depth = 64) {
  await store.configure(key, FAST);
  let takes = 0;
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await Promise.all(Array.from({ length: depth }, () => store.take(key, 1)));
    takes += depth;
  }
  return takes / seconds;
}

// A child process: `node bench/store.mjs --worker <db> <seconds>` prints its takes per second.
if (process.argv[2] === "--worker") {
  const store = await SqliteStore.open(process.argv[3]);
  const perSecond = await sequentialTakes(store, "bench", Number(process.argv[4]));
  await store.close();
  process.stdout.write(`${perSecond}\n`);
  process.exit(0);
}

/** Runs the built CLI on 100 MiB/s for `seconds` from an endless source; returns bytes written. */
function pipeFor(args, seconds) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [TBUCKET, ...args], { stdio: ["pipe", "pipe", "inherit"] });
    const block = Buffer.alloc(MiB);
    const feed = () => {
      while (child.stdin.writable && child.stdin.write(block));
    };
    child.stdin.on("drain", feed);
    child.stdin.on("error", () => {});
    feed();
    let bytes = 0;
    let startedMs;
    child.stdout.on("data", (chunk) => {
      startedMs ??= performance.now();
      bytes += chunk.length;
    });
    child.on("close", () => resolve({ bytes, seconds: (performance.now() - startedMs) / 1000 }));
    setTimeout(() => child.kill("SIGTERM"), seconds * 1000 + 800);
  });
}

async function redisCalls(url) {
  const { Redis } = await import("ioredis");
  const client = new Redis(url);
  const info = await client.info("commandstats");
  await client.quit();
  const match = /cmdstat_evalsha:calls=(\d+)/.exec(info);
  return match ? Number(match[1]) : 0;
}

const rows = [];
const fmt = (n) => Math.round(n).toLocaleString("en-US");
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-store-"));
try {
  const dbPath = join(work, "buckets.db");
  const sqlite = await SqliteStore.open(dbPath);
  const one = await sequentialTakes(sqlite, "bench", SECONDS);
  await sqlite.close();
  rows.push(["SQLite (WAL, BEGIN IMMEDIATE)", "1 process, sequential", fmt(one), (1e6 / one).toFixed(1)]);

  const workers = await Promise.all(
    [0, 1, 2, 3].map(
      () =>
        new Promise((resolve) => {
          const child = spawn(process.execPath, [fileURLToPath(import.meta.url), "--worker", dbPath, String(SECONDS)], { stdio: ["ignore", "pipe", "inherit"] });
          let out = "";
          child.stdout.on("data", (chunk) => (out += chunk));
          child.on("close", () => resolve(Number(out)));
        }),
    ),
  );
  const four = workers.reduce((a, b) => a + b, 0);
  rows.push(["SQLite", "4 processes, one key", fmt(four), (1e6 / four).toFixed(1)]);

  const redis = await startRedis();
  if (redis) {
    const store = await RedisStore.open(redis.url);
    const sequential = await sequentialTakes(store, "bench", SECONDS);
    rows.push(["Redis (EVALSHA, loopback)", "1 connection, sequential", fmt(sequential), (1e6 / sequential).toFixed(1)]);
    const pipelined = await pipelinedTakes(store, "bench", SECONDS);
    rows.push(["Redis", "1 connection, 64 in flight", fmt(pipelined), (1e6 / pipelined).toFixed(1)]);
    await store.close();
  } else {
    rows.push(["Redis", "redis-server not installed", "-", "-"]);
  }

  console.log(`\nTakes per second (${SECONDS} s each; node ${process.version})\n`);
  table(["store", "how", "takes/s", "µs/take"], rows);

  // Round trips made by one pipe at 100 MiB/s on a key: leases keep it near 50 a second.
  const pipeRows = [];
  const privateRun = await pipeFor(["--rate", "100mb"], SECONDS);
  pipeRows.push(["private bucket (CLI)", (privateRun.bytes / privateRun.seconds / MiB).toFixed(2), "0", "-"]);
  {
    // SQLite counts no calls from outside: drive the same pacing engine in-process and count takes.
    const { Throttle } = await import(new URL("stream/throttle.js", DIST).href);
    const { SharedLimiter } = await import(new URL("store/shared-limiter.js", DIST).href);
    const store = await SqliteStore.open(join(work, "pipe.db"));
    const config = await store.configure("pipe", { rate: 100 * MiB, burst: 10 * MiB, kind: "bytes" });
    const limiter = new SharedLimiter({ store, key: "pipe", config });
    const throttle = new Throttle({ limiter });
    const chunk = Buffer.alloc(MiB);
    let bytes = 0;
    const startedMs = performance.now();
    while (performance.now() - startedMs < SECONDS * 1000) await throttle.pass(chunk, (segment) => void (bytes += segment.length));
    const seconds = (performance.now() - startedMs) / 1000;
    pipeRows.push(["SQLite key (in-process)", (bytes / seconds / MiB).toFixed(2), String(limiter.roundTrips), (limiter.roundTrips / seconds).toFixed(1)]);
    await store.close();
  }
  if (redis) {
    const before = await redisCalls(redis.url);
    const run = await pipeFor(["--key", "pipe", "--store", redis.url, "--rate", "100mb"], SECONDS);
    const calls = (await redisCalls(redis.url)) - before;
    pipeRows.push([`Redis key`, (run.bytes / run.seconds / MiB).toFixed(2), String(calls), (calls / run.seconds).toFixed(1)]);
    redis.stop();
  }
  console.log(`\nA pipe at 100 MiB/s (${SECONDS} s, round trips counted by the server)\n`);
  table(["bucket", "MiB/s out", "round trips", "round trips/s"], pipeRows);
} finally {
  rmSync(work, { recursive: true, force: true });
}

function table(header, body) {
  const all = [header, ...body];
  const widths = header.map((_, i) => Math.max(...all.map((row) => String(row[i]).length)));
  for (const row of all) console.log(row.map((cell, i) => (i < 2 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join("  "));
}
