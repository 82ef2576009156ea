#!/usr/bin/env node
// Limit sets in the stores: how many takes a second each store serves on a key of one bucket
// (BucketStore's take, and takeSet on the same key) and on a key of three limits (a bucket, a
// sliding window of 1 s holding every take of the last second, a byte bucket), one at a time.
//
//   npm run build && node bench/store-sets.mjs          # about 20 s
//   node bench/store-sets.mjs --seconds 1                 # shorter runs
//
// Needs redis-server on PATH (Debian: apt-get install redis-server) for the Redis rows.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedis } from "./redis-server.mjs";

const DIST = new URL("../dist/", import.meta.url);
const secondsArg = process.argv.indexOf("--seconds");
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 2;

const { MemoryStore } = await import(new URL("store/memory-store.js", DIST).href);
const { SqliteStore } = await import(new URL("store/sqlite-store.js", DIST).href);
const { RedisStore, REDIS_KEY_PREFIX } = await import(new URL("store/redis-store.js", DIST).href);
const { RedisSetStore } = await import(new URL("store/redis-set-store.js", DIST).href);

// Limits so high that takes never wait: this measures the store, not the limits.
const ONE = { rate: 1e12, burst: 1e12, kind: "count" };
const THREE = [
  { kind: "bucket", unit: "count", rate: 1e12, burst: 1e12 },
  { kind: "window", unit: "count", n: 1e12, windowMs: 1000 },
  { kind: "bucket", unit: "bytes", rate: 1e12, burst: 1e12 },
];

/** Calls `take` one at a time for `seconds`; returns calls per second. */
async function perSecond(take) {
  let takes = 0;
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    await take();
    takes++;
  }
  return takes / SECONDS;
}

/** The three rows of one store: BucketStore's take and takeSet on one bucket, takeSet on three limits. */
async function rowsOf(name, store, sets) {
  await store.configure("one", ONE);
  await sets.configureSet("three", THREE);
  return [
    [name, "one bucket, take", await perSecond(() => store.take("one", 1))],
    [name, "one bucket, takeSet", await perSecond(() => sets.takeSet("one", { count: 1 }))],
    [name, "three limits, takeSet", await perSecond(() => sets.takeSet("three", { count: 1, bytes: 4096 }))],
  ];
}

const rows = [];
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-store-sets-"));
try {
  const memory = new MemoryStore();
  rows.push(...(await rowsOf("memory", memory, memory)));
  const sqlite = await SqliteStore.open(join(work, "buckets.db"));
  rows.push(...(await rowsOf("SQLite", sqlite, sqlite)));
  await sqlite.close();
  const redis = await startRedis();
  if (redis) {
    const store = await RedisStore.open(redis.url);
    const { Redis } = await import("ioredis");
    const client = new Redis(redis.url);
    // Keys where today's RedisStore keeps a one-bucket key, so that both reach the same hash.
    rows.push(...(await rowsOf("Redis", store, new RedisSetStore(client, { url: redis.url, keyOf: (key) => REDIS_KEY_PREFIX + key }))));
    await store.close();
    await client.quit();
    redis.stop();
  } else {
    rows.push(["Redis", "redis-server not installed", NaN]);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log("| store | takes | takes/s | µs/take |\n| --- | --- | ---: | ---: |");
for (const [store, how, rate] of rows) console.log(`| ${store} | ${how} | ${Number.isNaN(rate) ? "-" : Math.round(rate).toLocaleString("en-US")} | ${Number.isNaN(rate) ? "-" : (1e6 / rate).toFixed(1)} |`);
