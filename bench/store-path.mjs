#!/usr/bin/env node
// The middleware's store path alone, without HTTP: what one decision on a per-client key costs
// the Node process at each layer, KeyBuckets → FailoverLimiter → StoreWatch → SharedLimiter →
// RedisStore, beside rate-limiter-flexible's consume on the same ioredis and redis-server:
//   - 32 callers at once (as autocannon's 32 connections), each taking 1 from one of 256 keys
//     in turn, refused at once if it would wait (the middleware's drop policy);
//   - a limit far above what is reached, so every take is decided in full and admitted;
//   - per layer: decisions a second, the process's CPU per decision (user + system), redis-server's
//     CPU per decision (as it says itself, INFO cpu), and the Redis commands per decision;
//   - the top layer is the middleware itself (rateLimit with a store), called with a response
//     that takes its header fields and does nothing else, so HTTP's own cost is left out.
//
//   npm run build && node bench/store-path.mjs           # about 40 s
//   node bench/store-path.mjs --seconds 2 --rounds 1
//   node bench/store-path.mjs --dist /work/main/dist      # another build's store path (rate-limiter-flexible alike)
//   node --cpu-prof --cpu-prof-dir /tmp/prof bench/store-path.mjs --only keys   # a profile of the whole path
//
// Needs redis-server on PATH (Debian's package).
import { loadavg } from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { startRedis } from "./redis-server.mjs";

const CLIENTS = 256;
const HIGH = 1_000_000_000;
const SETTINGS = { rate: HIGH, burst: HIGH, kind: "count" };

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    callers: { type: "string", default: "32" },
    only: { type: "string" },
    dist: { type: "string" },
  },
});
const DIST = flags.dist ? pathToFileURL(`${resolve(flags.dist)}/`) : new URL("../dist/", import.meta.url);

const { RedisStore } = await import(new URL("store/redis-store.js", DIST).href);
const { StoreWatch } = await import(new URL("store/store-watch.js", DIST).href);
const { openSharedKey } = await import(new URL("store/shared-key.js", DIST).href);
const { KeyBuckets, keyName } = await import(new URL("store/key-buckets.js", DIST).href);
const { rateLimit } = await import(new URL("http/index.js", DIST).href);
const { Redis } = await import("ioredis");
const { RateLimiterRedis } = await import("rate-limiter-flexible");

/** Each layer: opens what it needs, returns one decision for a client (a promise of true when admitted). */
const LAYERS = [
  {
    name: "RedisStore.take",
    async open(url) {
      const store = await RedisStore.open(url);
      for (let i = 0; i < CLIENTS; i++) await store.configure(`bench:c${i}`, SETTINGS, { expireWhenFull: true });
      return { decide: (i) => store.take(`bench:c${i}`, 1, { maxWaitMs: 0 }).then((r) => r.ok), close: () => store.close() };
    },
  },
  {
    name: "StoreWatch.take",
    async open(url) {
      const watch = new StoreWatch(await RedisStore.open(url));
      for (let i = 0; i < CLIENTS; i++) await watch.configure(`bench:c${i}`, SETTINGS, { expireWhenFull: true });
      return { decide: (i) => watch.take(`bench:c${i}`, 1, { maxWaitMs: 0 }).then((r) => r.ok), close: () => watch.close() };
    },
  },
  {
    name: "SharedLimiter.tryWait",
    async open(url) {
      const watch = new StoreWatch(await RedisStore.open(url));
      const limiters = [];
      for (let i = 0; i < CLIENTS; i++) limiters.push(await openSharedKey(watch, `bench:c${i}`, SETTINGS, { expireWhenFull: true }));
      return { decide: (i) => limiters[i].tryWait(1, 0), close: async () => (await Promise.all(limiters.map((l) => l.close())), await watch.close()) };
    },
  },
  {
    name: "KeyBuckets (the middleware's)",
    key: "keys",
    async open(url) {
      const keys = new KeyBuckets({ store: await RedisStore.open(url), whileLost: { mode: "fail" } });
      const buckets = [];
      // Opened as the middleware does, on a client's first request: part of the measured run.
      const opening = [];
      const bucketOf = (i) => (buckets[i] ??= (opening[i] ??= keys.open(keyName("bench", `c${i}`), { settings: SETTINGS, expireWhenFull: true })));
      return {
        decide: async (i) => (await bucketOf(i)).tryWait(1, 0),
        close: async () => keys.close(await Promise.all(buckets)),
      };
    },
  },
  {
    name: "rateLimit (the middleware, no HTTP)",
    key: "middleware",
    async open(url) {
      const store = await RedisStore.open(url);
      const middleware = rateLimit({ rate: HIGH, burst: HIGH, key: (req) => req.key, store: { store, name: "bench" } });
      const response = () => ({ statusCode: 200, headersSent: false, writableEnded: false, destroyed: false, setHeader() {}, end() {}, on() {}, once() {} });
      return {
        decide: (i) => new Promise((resolve, reject) => middleware({ key: `c${i}`, headers: {} }, response(), (error) => (error ? reject(error) : resolve(true)))),
        close: async () => (middleware.close(), await store.close()),
      };
    },
  },
  {
    name: "rate-limiter-flexible consume",
    key: "rlf",
    async open(url) {
      const client = new Redis(url);
      const limiter = new RateLimiterRedis({ storeClient: client, points: HIGH, duration: 1, keyPrefix: "rlf" });
      return { decide: (i) => limiter.consume(`c${i}`).then(() => true), close: () => client.quit() };
    },
  },
].filter((layer) => !flags.only || flags.only.split(",").some((part) => (layer.key ?? layer.name).startsWith(part)));

const redis = await startRedis();
if (!redis) throw new Error("bench/store-path.mjs needs redis-server on PATH");
const admin = new Redis(redis.url);
const seconds = Number(flags.seconds);
const callers = Number(flags.callers);
const rounds = Number(flags.rounds);
console.log(`# ${fileURLToPath(DIST)}: node ${process.version}, load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}; ${callers} callers, ${CLIENTS} keys, ${seconds} s, median of ${rounds}`);
const figures = new Map(LAYERS.map((layer) => [layer.name, []]));
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? LAYERS : [...LAYERS].reverse();
    for (const layer of order) {
      await admin.flushall();
      const opened = await layer.open(redis.url);
      // Warm-up: the JIT, and every key opened.
      await run(opened.decide, Math.min(1, seconds));
      await admin.config("RESETSTAT");
      const redisCpu = await redisCpuSeconds();
      const cpu = process.cpuUsage();
      const { decisions, elapsed } = await run(opened.decide, seconds);
      const used = process.cpuUsage(cpu);
      const redisCpuUs = ((await redisCpuSeconds()) - redisCpu) * 1e6 / decisions;
      const stats = await admin.info("commandstats");
      const commands = parseCommandStats(stats);
      // The script's own time in Redis, as Redis counts it (the commands it runs included).
      const scriptUs = Number(/^cmdstat_evalsha:.*usec_per_call=([\d.]+)/m.exec(stats)?.[1] ?? NaN);
      figures.get(layer.name).push({ rps: decisions / elapsed, cpuUs: (used.user + used.system) / decisions, redisCpuUs, scriptUs, commands: commands / decisions });
      await opened.close();
    }
  }
} finally {
  await admin.quit();
  redis.stop();
}
console.log("| layer | decisions/s | CPU per decision | redis-server CPU per decision | EVALSHA in Redis | Redis commands per decision |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const layer of LAYERS) {
  const runs = figures.get(layer.name);
  const m = (pick) => median(runs.map(pick));
  console.log(`| ${layer.name} | ${Math.round(m((r) => r.rps)).toLocaleString("en")} | ${m((r) => r.cpuUs).toFixed(1)} µs | ${m((r) => r.redisCpuUs).toFixed(1)} µs | ${m((r) => r.scriptUs).toFixed(1)} µs | ${m((r) => r.commands).toFixed(2)} |`);
}
console.log(`# load average at the end ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);

/** `callers` loops at once for `seconds`, each deciding for the keys in turn; every decision must admit. */
async function run(decide, seconds) {
  let next = 0;
  let decisions = 0;
  const start = performance.now();
  const until = start + seconds * 1000;
  const caller = async () => {
    while (performance.now() < until) {
      if (!(await decide(next++ % CLIENTS))) throw new Error("a decision was refused");
      decisions++;
    }
  };
  await Promise.all(Array.from({ length: callers }, caller));
  return { decisions, elapsed: (performance.now() - start) / 1000 };
}

/** The CPU time redis-server has used, as it says itself. */
async function redisCpuSeconds() {
  const info = await admin.info("cpu");
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return field("used_cpu_user") + field("used_cpu_sys");
}

function parseCommandStats(info) {
  let all = 0;
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === "info" || name.startsWith("config")) continue;
    all += Number(calls);
  }
  return all;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
