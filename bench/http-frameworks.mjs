#!/usr/bin/env node
// The middleware's cost in the frameworks it binds to, beside each framework's usual peer, in one run:
//   - Fastify 5: no limit, @fastify/rate-limit, tbucket/fastify;
//   - Express 4: no limit, express-rate-limit, tbucket/http;
//   - node:http: no limit, tbucket/http's wrap();
// each in memory, one key a client (256 clients taking turns, an X-Client header), in two cases:
// "admitted" (a limit far above what is reached: every request decided in full, then answered)
// and "refused" (a limit of 1 a day: every request after the first answered 429).
// Each server runs in a process of its own, warmed up first (Node's start-up and the JIT kept
// out), then autocannon (32 connections) for the time given; rounds in alternating order, the
// median shown, with the overhead against the same framework without a limit.
//
//   node bench/http-frameworks.mjs                           # about 4 minutes
//   node bench/http-frameworks.mjs --seconds 3 --warmup 1 --rounds 1
//   node bench/http-frameworks.mjs --before /work/wt/before  # also tbucket of another build (its dist/)
//   node bench/http-frameworks.mjs --only fastify
//
// Needs `npm run build`.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const SELF = fileURLToPath(import.meta.url);
const ROOT = resolve(SELF, "../..");
const CLIENTS = 256;
const HIGH = 1_000_000_000;
const DAY_MS = 86_400_000;

const { values: flags } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    warmup: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    before: { type: "string" },
    only: { type: "string" },
    cases: { type: "string", default: "admitted,refused" },
    serve: { type: "string" },
    case: { type: "string" },
    dist: { type: "string" },
  },
});

if (flags.serve) await serve(flags.serve, flags.case, flags.dist);
else await main();

const keyOf = (headers) => String(headers["x-client"]);

/** One contender's server; prints its port on the first line. */
async function serve(name, which, dist) {
  const refused = which === "refused";
  const [framework, limiter] = name.split(" / ");
  const tbucket = () => import(pathToFileURL(join(dist, limiter === "tbucket" && framework === "fastify" ? "http/fastify.js" : "http/index.js")).href);
  const tbucketOptions = { rate: refused ? 1 / 86_400 : HIGH, burst: refused ? 1 : HIGH, key: (req) => keyOf(req.headers) };
  let port;
  if (framework === "fastify") {
    const { default: Fastify } = await import("fastify");
    const app = Fastify();
    if (limiter === "@fastify/rate-limit") {
      const { default: plugin } = await import("@fastify/rate-limit");
      await app.register(plugin, { max: refused ? 1 : HIGH, timeWindow: refused ? DAY_MS : 1000, keyGenerator: (req) => keyOf(req.headers) });
    } else if (limiter === "tbucket") {
      const { rateLimit } = await tbucket();
      await app.register(rateLimit, tbucketOptions);
    }
    app.get("/", async () => "ok\n");
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = app.server.address().port;
  } else if (framework === "express") {
    const { default: express } = await import("express");
    const app = express();
    app.set("etag", false);
    app.set("x-powered-by", false);
    if (limiter === "express-rate-limit") {
      const { rateLimit } = await import("express-rate-limit");
      app.use(rateLimit({ windowMs: refused ? DAY_MS : 1000, limit: refused ? 1 : HIGH, standardHeaders: "draft-8", legacyHeaders: false, keyGenerator: (req) => keyOf(req.headers), validate: false }));
    } else if (limiter === "tbucket") {
      const { rateLimit } = await tbucket();
      app.use(rateLimit(tbucketOptions));
    }
    app.get("/", (_req, res) => res.send("ok\n"));
    const server = app.listen(0, "127.0.0.1");
    await once(server, "listening");
    port = server.address().port;
  } else {
    const { createServer } = await import("node:http");
    const handler = (_req, res) => res.end("ok\n");
    const listener = limiter === "tbucket" ? (await tbucket()).rateLimit(tbucketOptions).wrap(handler) : handler;
    const server = createServer(listener).listen(0, "127.0.0.1");
    await once(server, "listening");
    port = server.address().port;
  }
  console.log(port);
  process.on("SIGTERM", () => process.exit(0));
}

async function main() {
  const { default: autocannon } = await import("autocannon");
  const seconds = Number(flags.seconds);
  const warmup = Number(flags.warmup);
  const rounds = Number(flags.rounds);
  const connections = Number(flags.connections);
  const builds = [{ label: "tbucket", dist: join(ROOT, "dist") }, ...(flags.before ? [{ label: "tbucket (before)", dist: join(resolve(flags.before), "dist") }] : [])];
  const frameworks = [
    { framework: "fastify", peer: "@fastify/rate-limit" },
    { framework: "express", peer: "express-rate-limit" },
    { framework: "node:http", peer: undefined },
  ].filter(({ framework }) => !flags.only || flags.only.split(",").includes(framework));

  console.log(`# node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model}), load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}`);
  console.log(`# autocannon ${connections} connections, ${warmup} s warm-up, ${seconds} s measured, ${rounds} rounds, median shown`);
  const table = [];
  for (const which of flags.cases.split(",")) {
    for (const { framework, peer } of frameworks) {
      const contenders = [
        { name: `${framework} / none`, label: "no limit" },
        ...(peer ? [{ name: `${framework} / ${peer}`, label: peer }] : []),
        // A build from before tbucket/fastify has no plugin to measure.
        ...builds.filter((build) => framework !== "fastify" || existsSync(join(build.dist, "http/fastify.js"))).map((build) => ({ name: `${framework} / tbucket`, label: build.label, dist: build.dist })),
      ];
      // A refusal has nothing to compare with the framework alone.
      const measured = which === "refused" ? contenders.filter((contender) => contender.label !== "no limit") : contenders;
      const figures = new Map(measured.map((contender) => [contender.label, []]));
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? measured : [...measured].reverse();
        for (const contender of order) {
          const server = await startServer(contender, which);
          try {
            await load(autocannon, server.port, connections, warmup);
            const cpuBefore = cpuSeconds(server.pid);
            const result = await load(autocannon, server.port, connections, seconds);
            const cpu = cpuSeconds(server.pid) - cpuBefore;
            const wanted = which === "refused" ? result["4xx"] : result["2xx"];
            figures.get(contender.label).push({ rps: result.requests.total / result.duration, p99: result.latency.p99, cpuUs: (cpu * 1e6) / result.requests.total, off: result.requests.total - wanted + result.errors + result.timeouts });
            console.log(`${which} round ${round + 1} ${framework} ${contender.label}: ${Math.round(result.requests.total / result.duration)} requests/s`);
          } finally {
            await server.stop();
          }
        }
      }
      const none = figures.get("no limit");
      const baseline = none ? median(none.map((run) => run.rps)) : undefined;
      for (const [label, runs] of figures) {
        const rps = median(runs.map((run) => run.rps));
        table.push({ which, framework, label, rps, p99: median(runs.map((run) => run.p99)), cpuUs: median(runs.map((run) => run.cpuUs)), overhead: baseline && label !== "no limit" ? 1 - rps / baseline : undefined, off: runs.reduce((sum, run) => sum + run.off, 0) });
      }
    }
  }
  console.log("");
  console.log("| case | framework | limit | requests/s | against no limit | p99 | server CPU per request | answers not as expected |");
  console.log("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |");
  for (const row of table) {
    const overhead = row.overhead === undefined ? "" : `${row.overhead >= 0 ? "−" : "+"}${Math.abs(row.overhead * 100).toFixed(1)} %`;
    console.log(`| ${row.which} | ${row.framework} | ${row.label} | ${Math.round(row.rps).toLocaleString("en")} | ${overhead} | ${row.p99} ms | ${Math.round(row.cpuUs)} µs | ${row.off} |`);
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

/** User and system CPU time of a process so far, in seconds (Linux: /proc, in clock ticks of 1/100 s). */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function startServer(contender, which) {
  const args = [SELF, "--serve", contender.name, "--case", which, "--dist", contender.dist ?? join(ROOT, "dist")];
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
