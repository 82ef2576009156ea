#!/usr/bin/env node
// What one decision costs in the server process, without HTTP around it: the middleware
// (tbucket/http, a Redis store) beside rate-limiter-flexible's RateLimiterRedis.consume, each
// driven by 32 callers in a loop (as 32 connections would), on one redis-server this script starts
// on 127.0.0.1; the busy key (one for all) and 256 keys taking turns. Prints decisions/s and the
// process's CPU time per decision (user + system), the median of 3 alternating rounds. The HTTP
// benchmark (http-redis.mjs) has the same figures with Express and autocannon around them; this
// one leaves out what both pay alike, so a difference in the limiter's own cost shows.
//
//   node bench/redis-decisions.mjs                     # about 1 minute
//   node bench/redis-decisions.mjs --decisions 20000 --rounds 1 --profile /tmp/prof
//
// Needs `npm run build` and redis-server (Debian's package).
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { startRedis } from "./redis-server.mjs";

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, "../..");
const HIGH = 1_000_000_000;
const CALLERS = 32;
const KEYS = 256;

const { values: flags } = parseArgs({
  options: {
    decisions: { type: "string", default: "100000" },
    rounds: { type: "string", default: "3" },
    profile: { type: "string" },
    cases: { type: "string", default: "global,per-client" },
    only: { type: "string" },
    // Internal: one contender in a process of its own.
    contender: { type: "string" },
    redis: { type: "string" },
    keys: { type: "string" },
  },
});

if (flags.contender) await measure(flags.contender, flags.redis, flags.keys, Number(flags.decisions));
else await main();

/** A response that takes what the middleware sets and nothing else. */
function fakeResponse() {
  return { statusCode: 200, headersSent: false, writableEnded: false, destroyed: false, setHeader() {}, end() {}, on() {}, once() {}, off() {} };
}

async function measure(name, redisUrl, keys, decisions) {
  const keyOf = keys === "global" ? () => "global" : (i) => `client-${i % KEYS}`;
  let decide;
  if (name === "tbucket") {
    const { rateLimit, openStore } = await import(pathToFileURL(join(ROOT, "dist/http/index.js")).href);
    const store = await openStore(redisUrl);
    const middleware = rateLimit({ rate: HIGH, burst: HIGH, key: (req) => req.key, store: { store, name: "bench" } });
    decide = (i) => new Promise((done, fail) => middleware({ key: keyOf(i), headers: {} }, fakeResponse(), (error) => (error ? fail(error) : done())));
  } else {
    const { Redis } = await import("ioredis");
    const { RateLimiterRedis } = await import("rate-limiter-flexible");
    const limiter = new RateLimiterRedis({ storeClient: new Redis(redisUrl), points: HIGH, duration: 1, keyPrefix: "rlf" });
    decide = (i) => limiter.consume(keyOf(i)).then(() => {});
  }
  let next = 0;
  const caller = async (total) => {
    while (next < total) await decide(next++);
  };
  // Warm-up: the JIT and every key made.
  await Promise.all(Array.from({ length: CALLERS }, () => caller(Math.min(decisions, 20_000))));
  next = 0;
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CALLERS }, () => caller(decisions)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  console.log(JSON.stringify({ perSecond: decisions / seconds, cpuUs: (cpu.user + cpu.system) / decisions }));
  process.exit(0);
}

async function main() {
  const rounds = Number(flags.rounds);
  const contenders = ["tbucket", "rate-limiter-flexible"].filter((name) => !flags.only || flags.only.split(",").some((part) => name.startsWith(part)));
  const redis = await startRedis();
  if (!redis) throw new Error("redis-server is not installed (Debian: apt-get install redis-server)");
  const { Redis } = await import("ioredis");
  const admin = new Redis(redis.url);
  console.log(`# node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model}), load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
  console.log(`# ${CALLERS} callers, ${flags.decisions} decisions a round, ${rounds} rounds, median shown`);
  const rows = [];
  try {
    for (const keys of flags.cases.split(",")) {
      const figures = new Map(contenders.map((name) => [name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const name of round % 2 === 0 ? contenders : [...contenders].reverse()) {
          await admin.flushall();
          const redisCpuBefore = await redisCpuSeconds(admin);
          const result = await run(name, redis.url, keys);
          // Warm-up included: its decisions are counted in.
          result.redisCpuUs = ((await redisCpuSeconds(admin)) - redisCpuBefore) * 1e6 / (Number(flags.decisions) + Math.min(Number(flags.decisions), 20_000));
          figures.get(name).push(result);
          console.log(`${keys} round ${round + 1} ${name}: ${Math.round(result.perSecond)} decisions/s, ${result.cpuUs.toFixed(1)} µs CPU each, Redis ${result.redisCpuUs.toFixed(1)} µs`);
        }
      }
      for (const [name, results] of figures) rows.push({ keys, name, perSecond: median(results.map((r) => r.perSecond)), cpuUs: median(results.map((r) => r.cpuUs)), redisCpuUs: median(results.map((r) => r.redisCpuUs)) });
    }
  } finally {
    admin.disconnect();
    redis.stop();
  }
  console.log("");
  console.log("| keys | limiter | decisions/s | CPU per decision (server process) | redis-server CPU per decision |");
  console.log("| --- | --- | ---: | ---: | ---: |");
  for (const row of rows) {
    console.log(`| ${row.keys} | ${row.name} | ${Math.round(row.perSecond).toLocaleString("en-US")} | ${row.cpuUs.toFixed(1)} µs | ${row.redisCpuUs.toFixed(1)} µs |`);
  }
  console.log(`# load average at the end ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
}

function run(name, redisUrl, keys) {
  const profile = flags.profile ? ["--cpu-prof", "--cpu-prof-dir", flags.profile] : [];
  const args = [...profile, SELF, "--contender", name, "--redis", redisUrl, "--keys", keys, "--decisions", flags.decisions];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("exit", (code) => (code === 0 ? done(JSON.parse(out.trim().split("\n").pop())) : fail(new Error(`${name} exited with ${code}`))));
  });
}

/** The CPU time redis-server has used, as it says itself (INFO cpu). */
async function redisCpuSeconds(admin) {
  const info = await admin.info("cpu");
  const field = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? 0);
  return field("used_cpu_user") + field("used_cpu_sys");
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}
