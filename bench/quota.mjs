#!/usr/bin/env node
// `tbucket run` against an API's quotas (issue 22), on the mock LLM API of the tests
// (test/fixtures/mock-api.mjs), scaled to seconds: every limit is per 1 s period.
//
// The mock: 100 requests/s, 10,000 output tokens/s (max_tokens reserved on arrival),
// 90,000 input tokens/s (each prompt is 20 tokens: never binding), 20 ms per answer; a 429
// says retry-after (whole seconds), retry-after-ms and x-ratelimit-*. Items are JSONL prompts,
// max_tokens 100..300 (200 on average), so output tokens bind: 50 requests/s.
//
//  1. Known limits: tbucket told the mock's limits exactly (--rate 100/s --cost-rate 10000/s
//     --cost '{.max_tokens}' --retries 3, curl -D {report}); the same split over three
//     processes on one Redis key; GNU parallel --delay + curl --retry; curl --parallel --rate
//     and curl --rate alone, each at the binding limit's 50 requests/s; and tbucket told 99 %, or
//     the limits with 2 % less burst.
//     Targets (tbucket): 429s <= 0.5 %, >= 97 % of the binding limit.
//  2. The mock's limits 20 % lower than tbucket was told: every job succeeds, no request before a
//     Retry-After (the mock's count), 429s <= 5 %.
//  3. Settle: answers use a third of max_tokens; jobs write `tbucket-cost: N` from the answer's
//     usage (shell expansion, not jq: see below) into {report}, against estimates alone: about half the time, 0 429s.
//
// Per row: the mock's count of requests, 429s and their share, requests that came before a
// Retry-After it had given (whole seconds; retry-after-ms in brackets) and, for those, the longest
// time since that 429, and how many had their connection opened after it (the others were sent
// before the 429 existed), with the longest such time after it; the
// share of the binding limit (tokens or requests admitted past the first period's burst, over the
// time from the first admitted request to the last); jobs that failed; wall time.
//
//   node bench/quota.mjs            # 2,000 jobs a row (about 6 minutes)
//   node bench/quota.mjs --quick    # 400 jobs a row
//   node bench/quota.mjs --jobs 1000 --only 1,3
//
// Needs `npm run build` and curl; GNU parallel is installed with apt-get when running as root
// (bench/system-tools.mjs), and Redis rows are left out without redis-server.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startMockApi } from "../test/fixtures/mock-api.mjs";
import { startRedis } from "./redis-server.mjs";
import { ensurePackages, have } from "./system-tools.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const { values } = parseArgs({ options: { quick: { type: "boolean" }, jobs: { type: "string" }, only: { type: "string" } } });
const N = Number(values.jobs ?? (values.quick ? 400 : 2000));
const only = values.only?.split(",").map(Number);
const PERIOD_MS = 1000;
const LIMITS = { requests: 100, inputTokens: 90_000, outputTokens: 10_000 };
const PROMPT_TOKENS = 20;
const LATENCY_MS = 20;
const JOBS = 8;
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-quota-"));

// max_tokens 100..300, the same every run (a linear congruential sequence), 200 on average.
const items = [];
for (let i = 0, x = 12345; i < N; i++) {
  x = (x * 1103515245 + 12345) % 2 ** 31;
  items.push({ max_tokens: 100 + (x % 201), prompt_tokens: PROMPT_TOKENS });
}
const meanTokens = items.reduce((sum, item) => sum + item.max_tokens, 0) / N;
const boundRate = Math.min(LIMITS.requests, LIMITS.outputTokens / meanTokens);
const itemsFile = join(work, "prompts.jsonl");
writeFileSync(itemsFile, items.map((item) => JSON.stringify(item)).join("\n") + "\n");

const missing = new Set(ensurePackages({ parallel: "parallel", curl: "curl" }));
const curlVersion = /curl (\d+)\.(\d+)/.exec(spawnSync("curl", ["--version"], { encoding: "utf8" }).stdout ?? "");
const curlHasRate = curlVersion && (Number(curlVersion[1]) > 7 || (Number(curlVersion[1]) === 7 && Number(curlVersion[2]) >= 84));
const redis = await startRedis(work);

/** Runs a command to its end without blocking the loop (the mock answers from this process); wall seconds and output. */
function run(command, args, options = {}) {
  const startedMs = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout = (stdout + chunk).slice(-100_000)));
    child.stderr.on("data", (chunk) => (stderr = (stderr + chunk).slice(-100_000)));
    child.on("close", (code) => resolve({ code, stdout, stderr, seconds: (performance.now() - startedMs) / 1000 }));
  });
}

/** The mock's figures for one row: requests, 429s, early requests and the share of the binding limit. */
function measure(api, limits, jobs, outputFraction = 1) {
  const { requests, total, throttled, early, earlyMs, ok } = api.stats();
  const admitted = requests.filter((request) => request.status === 200);
  const spanS = admitted.length > 1 ? (admitted.at(-1).atMs - admitted[0].atMs) / 1000 : NaN;
  // What the output bucket kept of each: max_tokens, less what the answer gave back.
  const tokens = admitted.reduce((sum, request) => sum + Math.ceil(request.maxTokens * outputFraction), 0);
  // Past the first period's burst, what each limit admitted per second, over its limit.
  const shares = {
    requests: (admitted.length - limits.requests) / spanS / (limits.requests / (PERIOD_MS / 1000)),
    outputTokens: (tokens - limits.outputTokens) / spanS / (limits.outputTokens / (PERIOD_MS / 1000)),
  };
  // An early request: how long after the first 429 whose Retry-After it came before.
  // Of those, the ones whose connection opened after that 429 was answered (one curl, one connection):
  // sent once the 429 existed, though perhaps before it reached tbucket.
  let lagMs = 0;
  let connectedAfter = 0;
  let connectedLagMs = 0;
  const refusals = requests.filter((request) => request.status === 429);
  for (const request of requests) {
    if (!request.early) continue;
    const first = refusals.find((refusal) => refusal.atMs <= request.atMs && refusal.atMs + Math.max(1, Math.ceil(refusal.retryAfterMs / 1000)) * 1000 > request.atMs);
    if (!first) continue;
    lagMs = Math.max(lagMs, request.atMs - first.atMs);
    if (request.connectedAtMs > first.atMs) {
      connectedAfter++;
      connectedLagMs = Math.max(connectedLagMs, request.connectedAtMs - first.atMs);
    }
  }
  return {
    requests: total,
    ok,
    jobsDone: jobs,
    throttled,
    throttledShare: total > 0 ? throttled / total : 0,
    early,
    earlyMs,
    earlyLagMs: Math.round(lagMs),
    earlyConnectedAfter: connectedAfter,
    earlyConnectedLagMs: Math.round(connectedLagMs),
    binding: shares.outputTokens >= shares.requests ? "output-tokens" : "requests",
    bindingShare: Math.max(shares.requests, shares.outputTokens),
    requestsPerSecond: admitted.length / spanS,
  };
}

const rows = [];
const pct = (x, digits = 1) => (Number.isFinite(x) ? `${(100 * x).toFixed(digits)}%` : "-");

/** One row: a fresh mock, the tool run against it, the figures; "missing" when the tool is not there. */
async function row(scenario, tool, mockOptions, runTool) {
  if (runTool === undefined) {
    const result = { scenario, tool, missing: true };
    rows.push(result);
    console.log(JSON.stringify(result));
    return result;
  }
  const api = await startMockApi({ periodMs: PERIOD_MS, latencyMs: LATENCY_MS, ...mockOptions });
  try {
    const outcome = await runTool(api.url);
    const limits = { requests: mockOptions.requests, outputTokens: mockOptions.outputTokens };
    const result = { scenario, tool, ...measure(api, limits, outcome.succeeded, mockOptions.outputFraction), failedJobs: N - outcome.succeeded, seconds: outcome.seconds, note: outcome.note };
    rows.push(result);
    console.log(JSON.stringify(result));
    return result;
  } finally {
    await api.close();
  }
}

const CURL_JOB = ["curl", "-sf", "-o", "/dev/null", "-D", "{report}", "-H", "content-type: application/json", "-d", "{}"];
const told = (limits) => ["--rate", `${limits.requests}/s`, "--cost-rate", `${limits.outputTokens}/s`, "--cost", "{.max_tokens}", "--retries", "3", "-j", String(JOBS)];

/** Jobs that succeeded, from a joblog: exit 0 on the last attempt. */
function succeededIn(logs) {
  let succeeded = 0;
  for (const log of logs) {
    for (const line of readFileSync(log, "utf8").trimEnd().split("\n")) if (line && JSON.parse(line).exit === 0) succeeded++;
  }
  return succeeded;
}

async function tbucket(url, limits, { command = [...CURL_JOB, url], extra = [] } = {}) {
  const log = join(work, `joblog-${rows.length}`);
  const result = await run(TBUCKET, ["run", ...told(limits), ...extra, "--joblog", log, "--input", itemsFile, "--", ...command]);
  if (result.code !== 0) process.stderr.write(`bench: tbucket exited ${result.code}: ${result.stderr.slice(-500)}\n`);
  return { succeeded: succeededIn([log]), seconds: result.seconds };
}

async function tbucketShared(url, limits) {
  const key = `quota-${process.pid}-${rows.length}`;
  const parts = [0, 1, 2].map((part) => {
    const file = join(work, `part-${part}.jsonl`);
    writeFileSync(file, items.filter((_, i) => i % 3 === part).map((item) => JSON.stringify(item)).join("\n") + "\n");
    return file;
  });
  const logs = parts.map((_, part) => join(work, `joblog-${rows.length}-${part}`));
  const startedMs = performance.now();
  const results = await Promise.all(
    parts.map((file, part) => run(TBUCKET, ["run", ...told(limits), "--store", redis.url, "--key", key, "--joblog", logs[part], "--input", file, "--", ...CURL_JOB, url])),
  );
  for (const result of results) if (result.code !== 0) process.stderr.write(`bench: tbucket exited ${result.code}: ${result.stderr.slice(-500)}\n`);
  return { succeeded: succeededIn(logs), seconds: (performance.now() - startedMs) / 1000 };
}

const HEADER = "content-type: application/json";

async function gnuParallel(url) {
  // Starts spaced by the binding limit's average: the most a tool without costs can be told.
    // -q: each word of the command quoted as given (unquoted, the header's space splits it).
  const result = await run("parallel", ["-q", "-j", String(JOBS), "--delay", String(1 / boundRate), "-a", itemsFile, "curl", "-sf", "-o", "/dev/null", "--retry", "3", "-H", HEADER, "-d", "{}", url]);
  // Its exit status is the number of jobs that failed (101 and more: "more than 100").
  const failed = result.code > 100 ? undefined : result.code;
  return { succeeded: failed === undefined ? NaN : N - failed, seconds: result.seconds };
}

/** curl's own loop over the items: a config file with one transfer each. */
async function curlLoop(url, parallel) {
  const config = join(work, "curl.conf");
  const quoted = (text) => `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
  writeFileSync(config, items.map((item) => `url = ${quoted(url)}\ndata = ${quoted(JSON.stringify(item))}\nheader = ${quoted(HEADER)}\noutput = "/dev/null"\nfail\nretry = 3\nwrite-out = "%{http_code}\\n"\n`).join("next\n"));
  const rate = `${Math.floor(boundRate * 60)}/m`;
  const result = await run("curl", ["-s", ...(parallel ? ["--parallel", "--parallel-max", String(JOBS)] : []), "--rate", rate, "-K", config]);
  const succeeded = result.stdout.split("\n").filter((code) => code === "200").length;
  return { succeeded, seconds: result.seconds, note: parallel ? `--rate ${rate}; curl ${curlVersion?.[1]}.${curlVersion?.[2]} says --rate has no effect with --parallel` : `--rate ${rate}, one transfer at a time` };
}

const full = { requests: LIMITS.requests, inputTokens: LIMITS.inputTokens, outputTokens: LIMITS.outputTokens };
const scaled = (factor) => ({ requests: LIMITS.requests * factor, inputTokens: LIMITS.inputTokens * factor, outputTokens: LIMITS.outputTokens * factor });
const wants = (scenario) => only === undefined || only.includes(scenario);

console.error(`bench: ${N} jobs a row; mock ${LIMITS.requests} requests/s, ${LIMITS.outputTokens} output tokens/s, max_tokens ${meanTokens.toFixed(1)} on average: ${boundRate.toFixed(1)} requests/s bind`);
try {
  if (wants(1)) {
    const exact = { ...full, outputFraction: 1 };
    await row(1, "tbucket run", exact, (url) => tbucket(url, LIMITS));
    // Told 1 % less: what a bucket exactly at the limit loses to arrival jitter after each pause (see docs/benchmarks.md).
    await row(1, "tbucket run, told 99%", exact, (url) => tbucket(url, { requests: LIMITS.requests * 0.99, outputTokens: LIMITS.outputTokens * 0.99 }));
    // The full rate and 20 ms less of burst: what the first request of a burst may lose on its way (see docs/benchmarks.md).
    await row(1, "tbucket run, --cost-burst 98%", exact, (url) => tbucket(url, LIMITS, { extra: ["--cost-burst", String(LIMITS.outputTokens * 0.98)] }));
    await row(1, "tbucket run x3, one Redis key", exact, redis && ((url) => tbucketShared(url, LIMITS)));
    await row(1, "GNU parallel --delay + curl --retry", exact, missing.has("parallel") ? undefined : gnuParallel);
    await row(1, "curl --parallel --rate --retry", exact, curlHasRate ? (url) => curlLoop(url, true) : undefined);
    await row(1, "curl --rate --retry (serial)", exact, curlHasRate ? (url) => curlLoop(url, false) : undefined);
  }
  if (wants(2)) {
    await row(2, "tbucket run, limits 20% lower", { ...scaled(0.8), outputFraction: 1 }, (url) => tbucket(url, LIMITS));
  }
  if (wants(3)) {
    const third = { ...full, outputFraction: 1 / 3 };
    // The job settles its cost from the answer's usage: curl's headers, then its own line, into {report}.
    // Not `curl | jq >> report`: curl may write its headers after that line, over it (it does not append);
    // and not jq at all here: its start costs about 35 ms of CPU a job, which on 2 CPUs caps the run near 45 jobs/s.
    const settling = (url) => [
      "sh", "-c",
      `body=$(curl -sf -D "$TBUCKET_REPORT" -H '${HEADER}' -d "$1" ${url}) || exit; used=\${body#*'"completion_tokens":'}; echo "tbucket-cost: \${used%%[!0-9]*}" >> "$TBUCKET_REPORT"`,
      "sh", "{}",
    ];
    await row(3, "tbucket run, estimates alone", third, (url) => tbucket(url, LIMITS));
    await row(3, "tbucket run, settled (tbucket-cost)", third, (url) => tbucket(url, LIMITS, { command: settling(url) }));
  }
} finally {
  redis?.stop();
  rmSync(work, { recursive: true, force: true });
}

console.log();
const headers = ["#", "tool", "requests", "429s", "429 share", "early [ms]", "lag", "sent after", "bound", "of bound", "req/s", "failed", "time"];
const cells = rows.map((r) =>
  r.missing
    ? [r.scenario, r.tool, "missing", "", "", "", "", "", "", "", "", "", ""]
    : [r.scenario, r.tool, r.requests, r.throttled, pct(r.throttledShare, 2), `${r.early} [${r.earlyMs}]`, r.early ? `${r.earlyLagMs} ms` : "-", r.early ? `${r.earlyConnectedAfter}${r.earlyConnectedAfter ? `, <= ${r.earlyConnectedLagMs} ms` : ""}` : "-", r.binding, pct(r.bindingShare), r.requestsPerSecond.toFixed(1), Number.isNaN(r.failedJobs) ? "?" : r.failedJobs, `${r.seconds.toFixed(1)} s`],
);
const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((c) => String(c[i]).length)));
const line = (c) => c.map((x, i) => String(x).padEnd(widths[i])).join("  ").trimEnd();
console.log(line(headers));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const c of cells) console.log(line(c));
for (const r of rows) if (r.note) console.log(`  ${r.tool}: ${r.note}`);
