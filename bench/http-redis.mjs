#!/usr/bin/env node
// The middleware (tbucket/http) on Express with a Redis store, beside rate-limiter-flexible
// (RateLimiterRedis) and express-rate-limit with rate-limit-redis, in the same run, on one
// redis-server that this script starts on 127.0.0.1:
//   - one global key (every request on one key: the busy key), and per-client keys (256 clients
//     taking turns, named by an X-Client header);
//   - a limit far above what is reached, so every request is decided in full and admitted;
//   - autocannon, 32 connections; each server in a process of its own, warmed up first (Node's
//     start-up and the JIT kept out), then measured; 3 rounds, the contenders in alternating
//     order; the median of the rounds: requests/s, p99 latency, the CPU time the server process
//     spent per request (which the other load on a shared machine skews less), the same for
//     redis-server (on a 2-core machine, the server, Redis and autocannon share the cores), and the Redis
//     commands per decision (INFO commandstats: script calls, and every command, those the
//     scripts run included), in all and by name.
//
//   node bench/http-redis.mjs                        # about 3 minutes
//   node bench/http-redis.mjs --seconds 3 --warmup 1 --rounds 1
//   node bench/http-redis.mjs --before /work/main    # also the middleware of another build (its dist/)
//   node bench/http-redis.mjs --only tbucket --cases per-client --profile /tmp/prof   # each server under node --cpu-prof, its profile in /tmp/prof
//
// Needs `npm run build` and redis-server (Debian's package).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "./free-port.mjs";

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, "../..");
const CLIENTS = 256;
const HIGH = 1_000_000_000;

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    before: { type: "string" },
    only: { type: "string" },
    profile: { type: "string" },
    cases: { type: "string", default: "global,per-client" },
    // Internal: run one server and print its port.
    serve: { type: "string" },
    redis: { type: "string" },
    keys: { type: "string" },
    dist: { type: "string" },
  },
});

if (flags.serve) await serve(flags.serve, flags.redis, flags.keys, flags.dist);
else await main();

/** One contender's Express server; prints its port on the first line. */
async function serve(name, redisUrl, keys, dist) {
  const { default: express } = await import("express");
  const keyOf = keys === "global" ? () => "global" : (req) => String(req.headers["x-client"]);
  const app = express();
  app.set("etag", false);
  app.set("x-powered-by", false);
  if (name.startsWith("tbucket")) {
    const { rateLimit, openStore } = await import(pathToFileURL(join(dist, "http/index.js")).href);
    const store = await openStore(redisUrl);
    app.use(rateLimit({ rate: HIGH, burst: HIGH, key: keyOf, store: { store, name: "bench" } }));
  } else if (name === "rate-limiter-flexible") {
    const { Redis } = await import("ioredis");
    const { RateLimiterRedis } = await import("rate-limiter-flexible");
    const limiter = new RateLimiterRedis({ storeClient: new Redis(redisUrl), points: HIGH, duration: 1, keyPrefix: "rlf" });
    app.use((req, res, next) => {
      limiter.consume(keyOf(req)).then(
        () => next(),
        (rejection) => (rejection instanceof Error ? next(rejection) : res.status(429).send("Too Many Requests\n")),
      );
    });
  } else if (name === "express-rate-limit") {
    const { Redis } = await import("ioredis");
    const { rateLimit } = await import("express-rate-limit");
    const { RedisStore } = await import("rate-limit-redis");
    const client = new Redis(redisUrl);
    const store = new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args), prefix: "erl:" });
    app.use(rateLimit({ windowMs: 1000, limit: HIGH, standardHeaders: "draft-8", legacyHeaders: false, keyGenerator: keyOf, validate: false, store }));
  } else {
    throw new Error(`unknown contender ${name}`);
  }
  app.get("/", (_req, res) => res.send("ok\n"));
  const server = app.listen(0, "127.0.0.1", () => console.log(server.address().port));
  process.on("SIGTERM", () => process.exit(0));
}

async function main() {
  const { default: autocannon } = await import("autocannon");
  const { Redis } = await import("ioredis");
  const seconds = Number(flags.seconds);
  const warmup = Number(flags.warmup);
  const rounds = Number(flags.rounds);
  const connections = Number(flags.connections);
  const contenders = [
    { name: "tbucket", dist: join(ROOT, "dist") },
    ...(flags.before ? [{ name: "tbucket (before)", dist: join(resolve(flags.before), "dist") }] : []),
    { name: "rate-limiter-flexible" },
    { name: "express-rate-limit" },
  ].filter((contender) => !flags.only || flags.only.split(",").some((part) => contender.name.startsWith(part)));

  const redis = await startRedis();
  const admin = new Redis(redis.url);
  console.log(`# node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model}), load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
  console.log(`# autocannon ${connections} connections, ${warmup} s warm-up, ${seconds} s measured, ${rounds} rounds, median shown`);
  const table = [];
  try {
    for (const keys of flags.cases.split(",")) {
      const figures = new Map(contenders.map((contender) => [contender.name, []]));
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? contenders : [...contenders].reverse();
        for (const contender of order) {
          await admin.flushall();
          const server = await startServer(contender, redis.url, keys);
          try {
            await load(autocannon, server.port, connections, warmup);
            await admin.config("RESETSTAT");
            const cpuBefore = cpuSeconds(server.pid);
            const redisCpuBefore = cpuSeconds(redis.pid);
            const result = await load(autocannon, server.port, connections, seconds);
            const cpu = cpuSeconds(server.pid) - cpuBefore;
            const redisCpu = cpuSeconds(redis.pid) - redisCpuBefore;
            const stats = parseCommandStats(await admin.info("commandstats"));
            const decisions = result.requests.total;
            figures.get(contender.name).push({
              rps: result.requests.total / result.duration,
              p99: result.latency.p99,
              cpuUs: (cpu * 1e6) / decisions,
              redisCpuUs: (redisCpu * 1e6) / decisions,
              scriptCalls: stats.scripts / decisions,
              commands: stats.all / decisions,
              byName: Object.fromEntries(Object.entries(stats.byName).map(([name, calls]) => [name, calls / decisions])),
              errors: result.errors + result.timeouts + result.non2xx,
            });
            console.log(`${keys} round ${round + 1} ${contender.name}: ${Math.round(result.requests.total / result.duration)} requests/s, p99 ${result.latency.p99} ms`);
          } finally {
            await server.stop();
          }
        }
      }
      for (const contender of contenders) {
        const runs = figures.get(contender.name);
        table.push({
          keys,
          name: contender.name,
          rps: median(runs.map((run) => run.rps)),
          p99: median(runs.map((run) => run.p99)),
          cpuUs: median(runs.map((run) => run.cpuUs)),
          redisCpuUs: median(runs.map((run) => run.redisCpuUs)),
          scriptCalls: median(runs.map((run) => run.scriptCalls)),
          commands: median(runs.map((run) => run.commands)),
          byName: Object.fromEntries([...new Set(runs.flatMap((run) => Object.keys(run.byName)))].map((name) => [name, median(runs.map((run) => run.byName[name] ?? 0))])),
          errors: runs.reduce((sum, run) => sum + run.errors, 0),
        });
      }
    }
  } finally {
    await admin.quit();
    await redis.stop();
  }
  console.log("");
  console.log("| keys | middleware | requests/s | p99 | server CPU per request | redis-server CPU per request | script calls per decision | Redis commands per decision | not 2xx |");
  console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of table) {
    console.log(
      `| ${row.keys} | ${row.name} | ${Math.round(row.rps).toLocaleString("en")} | ${row.p99} ms | ${Math.round(row.cpuUs)} µs | ${Math.round(row.redisCpuUs)} µs | ${row.scriptCalls.toFixed(2)} | ${row.commands.toFixed(2)} | ${row.errors} |`,
    );
  }
  console.log("");
  console.log("| keys | middleware | Redis commands per decision, by name (those scripts run included) |");
  console.log("| --- | --- | --- |");
  for (const row of table) {
    const split = Object.entries(row.byName).map(([name, perDecision]) => `${name} ${perDecision.toFixed(3)}`);
    console.log(`| ${row.keys} | ${row.name} | ${split.join(", ")} |`);
  }
  console.log(`# load average at the end ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
}

/** autocannon against the server for `seconds`, each request naming one of CLIENTS clients in turn. */
function load(autocannon, port, connections, seconds) {
  let next = 0;
  return autocannon({
    url: `http://127.0.0.1:${port}/`,
    connections,
    duration: seconds,
    requests: [{ setupRequest: (request) => ({ ...request, headers: { ...request.headers, "x-client": `c${next++ % CLIENTS}` } }) }],
  });
}

/** Script calls, and every command counted (those run inside scripts included), but not the bench's own INFO and CONFIG. */
function parseCommandStats(info) {
  let scripts = 0;
  let all = 0;
  const byName = {};
  for (const [, name, calls] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === "info" || name.startsWith("config")) continue;
    all += Number(calls);
    byName[name] = Number(calls);
    if (/^(eval|evalsha|fcall)/.test(name)) scripts += Number(calls);
  }
  return { scripts, all, byName };
}

/** User and system CPU time of a process so far, in seconds (Linux: /proc, in clock ticks of 1/100 s). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function startServer(contender, redisUrl, keys) {
  const args = [...(flags.profile ? ["--cpu-prof", "--cpu-prof-dir", flags.profile] : []), SELF, "--serve", contender.name, "--redis", redisUrl, "--keys", keys];
  if (contender.dist) args.push("--dist", contender.dist);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes("\n")) break;
  }
  const port = Number(out.trim());
  if (!(port > 0)) throw new Error(`${contender.name} did not start: ${out}`);
  return {
    port,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
    },
  };
}

async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "tbucket-bench-redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], { stdio: "ignore" });
  const { Redis } = await import("ioredis");
  for (let attempt = 0; ; attempt++) {
    const probe = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on("error", () => {});
    try {
      await probe.connect();
      await probe.quit();
      break;
    } catch {
      probe.disconnect();
      if (attempt > 100 || child.exitCode !== null) throw new Error("redis-server did not start");
      await new Promise((done) => setTimeout(done, 50));
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
