#!/usr/bin/env node
// `tbucket run` measured from outside:
//  1. launch timing: --rate 20 --count 100 with a fixture that prints its own start time;
//     deviation of each start from the ideal schedule (one every 50 ms), median and worst.
//  2. launch throughput: --rate inf -j 0 --count 2000 -- true, side by side with xargs -P and
//     GNU parallel (and the same at -j 8).
//  3. memory with many items: a million stdin lines through the job source (all but the first
//     skipped by --max-wait 0, so nothing is spawned), max RSS against 10,000 lines.
//
//   node bench/run.mjs            # everything (about a minute on an idle machine)
//   node bench/run.mjs --quick    # 500 launches instead of 2000, 100,000 items instead of a million
//
// Needs `npm run build`, GNU parallel and GNU time (apt-get install parallel time).
// The machine has 2 cores shared with others: figures are noisy; run it twice.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { have } from "./system-tools.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const START_TIME = fileURLToPath(new URL("../test/fixtures/print-start-time.sh", import.meta.url));
const quick = process.argv.includes("--quick");
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-run-"));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x, digits = 1) => x.toFixed(digits);

/** Runs a shell script under GNU time; returns wall seconds, CPU seconds and max RSS. */
function timed(script, input) {
  const timeFile = join(work, "time.txt");
  const started = performance.now();
  const result = spawnSync("bash", ["-c", `/usr/bin/time -o '${timeFile}' -f '%U %S %M' bash -c '${script.replaceAll("'", `'\\''`)}'`], {
    input,
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    maxBuffer: 256 * 1024 * 1024,
  });
  const wallSeconds = (performance.now() - started) / 1000;
  const [user, sys, rssKiB] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
  return { wallSeconds, cpuSeconds: user + sys, rssMiB: rssKiB / 1024, stdout: result.stdout, status: result.status };
}

function table(headers, rows) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
  console.log();
}

// 1. Launch timing.
{
  const count = 100;
  const rate = 20;
  const log = join(work, "joblog");
  const out = execFileSync(process.execPath, [TBUCKET, "run", "--rate", String(rate), "--count", String(count), "--joblog", log, "--", START_TIME]);
  const child = out.toString().trim().split("\n").map((ns) => Number(BigInt(ns) / 1000n) / 1000).sort((a, b) => a - b);
  const parent = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l).start * 1000).sort((a, b) => a - b);
  const intervalMs = 1000 / rate;
  const deviations = (starts) => {
    // The ideal schedule's phase is the first start: each later start should be k intervals after it.
    const fromFirst = starts.map((t, k) => t - (starts[0] + k * intervalMs));
    // Also with the phase fitted (median offset), which forgives a slow first exec.
    const phase = median(fromFirst);
    return { fromFirst, fitted: fromFirst.map((d) => d - phase) };
  };
  const envelopeExcess = (starts) => {
    let worst = -Infinity;
    for (let i = 0; i < starts.length; i++) for (let j = i; j < starts.length; j++) worst = Math.max(worst, j - i + 1 - (1 + (rate * (starts[j] - starts[i])) / 1000));
    return worst;
  };
  const rows = [];
  for (const [name, starts] of [["tbucket's launch (joblog)", parent], ["child's own start (date +%s%N)", child]]) {
    const { fromFirst, fitted } = deviations(starts);
    const abs = (xs) => xs.map(Math.abs);
    rows.push([
      name,
      fmt(median(abs(fromFirst)), 2),
      fmt(Math.max(...abs(fromFirst)), 2),
      fmt(median(abs(fitted)), 2),
      fmt(Math.max(...abs(fitted)), 2),
      fmt(Math.max(0, envelopeExcess(starts)), 2),
    ]);
  }
  console.log(`Launch timing: tbucket run --rate ${rate} --count ${count} -- print-start-time.sh (ideal: one every ${intervalMs} ms)`);
  table(["measured at", "median |dev| ms", "worst |dev| ms", "median (phase fitted)", "worst (phase fitted)", "over burst+rate*T"], rows);
}

// 2. Throughput.
{
  const count = quick ? 500 : 2000;
  const tb = `${process.execPath} ${TBUCKET}`;
  const cases = [
    ["tbucket run --rate inf -j 0", `${tb} run --rate inf -j 0 --count ${count} -- true`],
    ["tbucket run --rate inf -j 0 --output raw", `${tb} run --rate inf -j 0 --output raw --count ${count} -- true`],
    ["xargs -P 0", `seq ${count} | xargs -P 0 -n 1 true`],
    ...(have("parallel") ? [["parallel -j 0", `seq ${count} | parallel --will-cite -j 0 true`]] : []),
    ["tbucket run --rate inf -j 8", `${tb} run --rate inf -j 8 --count ${count} -- true`],
    ["xargs -P 8", `seq ${count} | xargs -P 8 -n 1 true`],
    ...(have("parallel") ? [["parallel -j 8", `seq ${count} | parallel --will-cite -j 8 true`]] : []),
  ];
  const rows = [];
  for (const [name, script] of cases) {
    const r = timed(script);
    if (r.status !== 0) throw new Error(`${name} failed with status ${r.status}`);
    rows.push([name, fmt(r.wallSeconds, 2), fmt(count / r.wallSeconds, 0), fmt(r.cpuSeconds, 2)]);
  }
  console.log(`Launch throughput: ${count} launches of true${have("parallel") ? "" : " (GNU parallel not installed: apt-get install parallel)"}`);
  table(["command", "wall s", "launches/s", "CPU s"], rows);
}

// 3. Memory with many items.
{
  const many = quick ? 100_000 : 1_000_000;
  const rows = [];
  for (const n of [10_000, many, ...(quick ? [] : [3_000_000])]) {
    const r = timed(`seq ${n} | ${process.execPath} ${TBUCKET} run --rate 1 --max-wait 0 -- true {} 2>/dev/null`);
    rows.push([n.toLocaleString("en"), fmt(r.wallSeconds, 2), fmt(r.rssMiB, 1)]);
  }
  console.log("Memory: items read lazily (all but the first skipped by --max-wait 0: the job source is the only work)");
  table(["stdin items", "wall s", "max RSS MiB"], rows);
}

rmSync(work, { recursive: true, force: true });
