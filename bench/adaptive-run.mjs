#!/usr/bin/env node
// `tbucket run --adaptive` as a user runs it, against the mock API with a hidden requests limit
// (no x-ratelimit-* headers) that goes 50 -> 20 -> 90 requests/s (a bucket of one second's worth),
// answering 429 with retry-after and retry-after-ms past it. tbucket launches `curl -D {report}`
// with a ceiling of 100/s and no cap on jobs at once, retrying throttled jobs. Per phase: what the
// mock admitted in the 10th second after the change, over seconds 5 to 10, and over the rest, as a share of the new limit;
// the share of requests throttled in the first 10 s and after; and requests that came before a Retry-After the mock gave.
// The simulated algorithm alone is bench/adaptive.mjs.
//
//   npm run build && node bench/adaptive-run.mjs                 # 3 phases of 30 s
//   node bench/adaptive-run.mjs --phase-seconds 15 --latency-ms 50
import { spawn } from "node:child_process";
import { once } from "node:events";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startMockApi } from "../test/fixtures/mock-api.mjs";

const ROOT = resolve(fileURLToPath(import.meta.url), "../..");
const { values: flags } = parseArgs({ options: { "phase-seconds": { type: "string", default: "30" }, "latency-ms": { type: "string", default: "100" }, ceiling: { type: "string", default: "100" } } });
const phaseMs = Number(flags["phase-seconds"]) * 1000;
const limits = [50, 20, 90];

const api = await startMockApi({
  periodMs: 1000,
  requests: limits[0],
  schedule: limits.map((requests, i) => ({ fromMs: i * phaseMs, requests })),
  advertise: false,
  latencyMs: Number(flags["latency-ms"]),
});
console.log(`# node ${process.version}, ${cpus().length} CPUs, load average ${loadavg().map((x) => x.toFixed(2)).join(", ")}; mock latency ${flags["latency-ms"]} ms, ceiling ${flags.ceiling}/s`);
const child = spawn(
  process.execPath,
  [join(ROOT, "bin/tbucket"), "run", "--adaptive", "--rate", `${flags.ceiling}/s`, "-j", "0", "--retries", "20", "--duration", `${(phaseMs * limits.length) / 1000}s`, "--stats",
    "--", "curl", "-s", "-o", "/dev/null", "-D", "{report}", "-H", "content-type: application/json", "-d", '{"max_tokens":1}', api.url],
  { stdio: ["ignore", "ignore", "pipe"] },
);
let stderr = "";
child.stderr.on("data", (chunk) => (stderr += chunk));
await once(child, "exit");
const { requests, early, earlyMs } = api.stats();
await api.close();

const pct = (x) => `${(100 * x).toFixed(1)} %`;
console.log("| limit | admitted in the 10th s | admitted, s 5 to 10 | admitted, s 10 to end | throttled, first 10 s | throttled, s 10 to end |");
console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
limits.forEach((limit, i) => {
  const from = i * phaseMs;
  const inPhase = requests.filter((r) => r.atMs >= from && r.atMs < from + phaseMs);
  const first10 = inPhase.filter((r) => r.atMs < from + 10_000);
  const ok10th = inPhase.filter((r) => r.status === 200 && r.atMs >= from + 9_000 && r.atMs < from + 10_000).length;
  const okRest = inPhase.filter((r) => r.status === 200 && r.atMs >= from + 10_000).length;
  // A single second may be one the server's pause took whole: the five before the 10th say where the rate stands.
  const ok5to10 = inPhase.filter((r) => r.status === 200 && r.atMs >= from + 5_000 && r.atMs < from + 10_000).length;
  const throttled = first10.filter((r) => r.status === 429).length;
  const rest = inPhase.filter((r) => r.atMs >= from + 10_000);
  const throttledRest = rest.filter((r) => r.status === 429).length;
  console.log(`| ${limit}/s | ${pct(ok10th / limit)} | ${pct(ok5to10 / (5 * limit))} | ${pct(okRest / (limit * (phaseMs - 10_000) / 1000))} | ${pct(throttled / Math.max(1, first10.length))} | ${pct(throttledRest / Math.max(1, rest.length))} |`);
});
console.log(`requests before a Retry-After the mock gave: ${early} (before its retry-after-ms: ${earlyMs})`);
console.log(stderr.trimEnd().split("\n").filter((line) => /^(jobs|launches|adaptive):/.test(line)).join("\n"));
