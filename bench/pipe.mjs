#!/usr/bin/env node
// Side-by-side measurements of the pipe against pv -L and cstream -t (Debian's packages),
// read from outside: a reader timestamps every byte it receives.
//
//   node bench/pipe.mjs            # everything (about 4 minutes)
//   node bench/pipe.mjs --quick    # 1 MiB/s and 10 MiB/s only, 3 s runs
//   node bench/pipe.mjs --only 100 # the 100 MiB/s rows only
//   node bench/pipe.mjs --only inf # the no-limit table only
//   node bench/pipe.mjs --only rates # the rate and stall tables (issue 2's figures)
//   node bench/pipe.mjs --only engine # CPU against pv and cstream, --rate inf against cat,
//                                     # signals, processes started (about 6 minutes)
//
// Needs `npm run build`, and pv, cstream and GNU time: run as root, it installs Debian's
// packages (apt-get install pv cstream time) when they are missing; strace for the
// processes-started row.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, openSync, closeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { envelopeExcess } from "./envelope.mjs";
import { ensurePackages, have } from "./system-tools.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
ensurePackages({ pv: "pv", cstream: "cstream", "/usr/bin/time": "time" });
const NODE_FLOOR = fileURLToPath(new URL("./node-floor.mjs", import.meta.url));
const quick = process.argv.includes("--quick");
const onlyIndex = process.argv.indexOf("--only");
const onlyArg = onlyIndex > 0 ? process.argv[onlyIndex + 1] : undefined;
const onlyMiBps = onlyArg === undefined || Number.isNaN(Number(onlyArg)) ? undefined : Number(onlyArg);
const MiB = 1024 * 1024;
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-"));

/** The shell words for each tool at a rate in bytes per second; burst is what the envelope allows at once. */
function tools(rate) {
  const list = [
    { name: "tbucket", argv: [process.execPath, TBUCKET, "--rate", String(rate)], burst: Math.floor(rate / 10) },
    { name: "tbucket --burst 8k", argv: [process.execPath, TBUCKET, "--rate", String(rate), "--burst", "8k"], burst: 8192 },
  ];
  if (have("pv")) list.push({ name: "pv -L", argv: ["pv", "-q", "-L", String(rate)], burst: 0 });
  if (have("cstream")) list.push({ name: "cstream -t", argv: ["cstream", "-t", String(rate)], burst: 0 });
  return list;
}

const quote = (words) => words.map((w) => `'${w.replaceAll("'", `'\\''`)}'`).join(" ");

/** Runs `producer | TOOL | cat`, reading cat's output here; returns arrivals and TOOL's CPU and RSS. */
function measure(producer, tool) {
  const timeFile = join(work, "time.txt");
  // Through cat, so that the tool writes to a pipe, as in a shell (Node.js reads a child's output from a socket).
  const script = `${producer} | /usr/bin/time -o '${timeFile}' -f '%U %S %M' ${quote(tool.argv)} | cat`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { stdio: ["ignore", "pipe", "inherit"] });
    const times = [];
    const totals = [];
    let total = 0;
    const started = performance.now();
    child.stdout.on("data", (chunk) => {
      total += chunk.length;
      times.push(performance.now() - started);
      totals.push(total);
    });
    child.on("error", reject);
    child.on("close", () => {
      const [user, sys, rssKiB] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
      resolve({ times, totals, total, cpuSeconds: user + sys, rssMiB: rssKiB / 1024 });
    });
  });
}

/** The most received beyond burst + rate × (time since the first byte), in bytes. */
function aheadOfSchedule({ times, totals }, rate, burst) {
  let worst = -Infinity;
  for (let j = 0; j < times.length; j++) worst = Math.max(worst, totals[j] - burst - (rate * (times[j] - times[0])) / 1000);
  return worst;
}

function maxGapMs({ times }, skipMs) {
  let gap = 0;
  for (let i = 1; i < times.length; i++) if (times[i - 1] >= times[0] + skipMs) gap = Math.max(gap, times[i] - times[i - 1]);
  return gap;
}

function maxInWindow({ times, totals }, fromMs, windowMs) {
  let best = 0;
  let i = 0;
  for (let j = 0; j < times.length; j++) {
    if (times[j] < fromMs) continue;
    if (i < j && times[i] < fromMs) i = j;
    while (times[j] - times[i] > windowMs) i++;
    best = Math.max(best, totals[j] - (i === 0 ? 0 : totals[i - 1]));
  }
  return best;
}

const pct = (x) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(3)} %`;
const kib = (x) => `${(x / 1024).toFixed(1)} KiB`;

async function rateTable() {
  const cases = quick
    ? [
        [1 * MiB, 3 * MiB],
        [10 * MiB, 30 * MiB],
      ]
    : [
        [1 * MiB, 10 * MiB],
        [10 * MiB, 100 * MiB],
        [100 * MiB, 1000 * MiB],
      ];
  const selected = onlyMiBps === undefined ? cases : cases.filter(([rate]) => rate === onlyMiBps * MiB);
  console.log("## Exact rate, envelope, smoothness, CPU (producer: head -c N /dev/zero)\n");
  console.log("| rate | input | tool | steady rate vs target | ahead of b + r·t | worst window over b + r·T | longest gap | CPU user+sys | peak RSS |");
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const [rate, size] of selected) {
    // The CPU floor of a Node.js pacer that writes in 10 ms steps, for reference: see node-floor.mjs.
    const floor = { name: "(node floor: read, write, sleep 10 ms)", argv: [process.execPath, NODE_FLOOR, String(rate)], burst: 0 };
    for (const tool of [...tools(rate), floor]) {
      const result = await measure(`head -c ${size} /dev/zero`, tool);
      const first = result.times[0];
      const last = result.times.at(-1);
      const steady = (result.total - tool.burst) / ((last - first) / 1000) / rate - 1;
      const ahead = aheadOfSchedule(result, rate, tool.burst);
      const excess = envelopeExcess(result, rate, tool.burst);
      console.log(
        `| ${rate / MiB} MiB/s | ${size / MiB} MiB | ${tool.name} | ${pct(steady)} | ${ahead <= 0 ? "never" : kib(ahead)} | ${excess <= 0 ? "never" : kib(excess)} | ` +
          `${maxGapMs(result, 200).toFixed(0)} ms | ${result.cpuSeconds.toFixed(2)} s | ${result.rssMiB.toFixed(0)} MiB |`,
      );
    }
  }
}

async function stallTable() {
  const rate = MiB;
  console.log("\n## After a 3 s input stall at 1 MiB/s (producer: 1 MiB, 4 s pause, 3 MiB)\n");
  console.log("| tool | most received in any 200 ms after the stall | allowed (burst + 200 ms of rate) |");
  console.log("|---|---|---|");
  for (const tool of tools(rate)) {
    const result = await measure(`{ head -c ${MiB} /dev/zero; sleep 4; head -c ${3 * MiB} /dev/zero; }`, tool);
    // The stall ends 4 s after the start; the first MiB is out by then at 1 MiB/s.
    const most = maxInWindow(result, 3900, 200);
    console.log(`| ${tool.name} | ${kib(most)} | ${kib(tool.burst + rate * 0.2)} |`);
  }
}

async function unlimitedTable() {
  const size = quick ? 1024 * MiB : 4096 * MiB;
  const path = join(work, "big.bin");
  const fd = openSync(path, "w");
  ftruncateSync(fd, 0);
  closeSync(fd);
  execFileSync("sh", ["-c", `head -c ${size} /dev/urandom > '${path}' 2>/dev/null || true; cat '${path}' > /dev/null`]);
  const rounds = 3;
  // From the file itself (read inline), and from a pipe that cat fills (read on the event loop).
  for (const [source, producer, fileArg] of [
    ["a cached file", "true", [path]],
    ["a pipe (cat FILE | tool)", `cat '${path}'`, []],
  ]) {
    console.log(`\n## No limit: ${size / MiB} MiB from ${source} to a pipe (reader: this script), median of ${rounds} rounds\n`);
    console.log("| tool | throughput (median) | range | vs cat | peak RSS |");
    console.log("|---|---|---|---|---|");
    const tools = [
      { name: "cat", argv: ["cat", ...fileArg] },
      { name: "tbucket --rate inf", argv: [process.execPath, TBUCKET, "--rate", "inf", ...fileArg] },
      ...(have("pv") ? [{ name: "pv (no limit)", argv: ["pv", "-q", ...fileArg] }] : []),
    ];
    // Round robin, so that a busy moment of the machine does not fall on one tool only.
    const runs = tools.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [i, tool] of tools.entries()) {
        const result = await measure(producer, tool);
        runs[i].push({ speed: result.total / MiB / (result.times.at(-1) / 1000), rssMiB: result.rssMiB });
      }
    }
    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const catSpeed = median(runs[0].map((r) => r.speed));
    for (const [i, tool] of tools.entries()) {
      const speeds = runs[i].map((r) => r.speed);
      const speed = median(speeds);
      console.log(
        `| ${tool.name} | ${speed.toFixed(0)} MiB/s | ${Math.min(...speeds).toFixed(0)}–${Math.max(...speeds).toFixed(0)} | ` +
          `${(speed / catSpeed).toFixed(2)}x | ${Math.max(...runs[i].map((r) => r.rssMiB)).toFixed(0)} MiB |`,
      );
    }
  }
}

/** Median and range of `values`, formatted with `digits`. */
function spread(values, digits, unit) {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return { median, text: `${median.toFixed(digits)}${unit} (${sorted[0].toFixed(digits)}–${sorted.at(-1).toFixed(digits)})` };
}

/** Runs a bash script once, timing the command marked TIMED with GNU time: user + sys and elapsed seconds. */
function timedRun(script) {
  const timeFile = join(work, "timed.txt");
  execFileSync("bash", ["-c", script.replace("TIMED", `/usr/bin/time -o '${timeFile}' -f '%U %S %e'`)], { stdio: ["ignore", "ignore", "inherit"] });
  const [user, sys, elapsed] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
  return { cpu: user + sys, elapsed };
}

/** The pacers of the engine table: tbucket by splice, tbucket through JavaScript, pv, cstream. */
function pacers(rate) {
  return [
    { name: "tbucket", argv: [process.execPath, TBUCKET, "--rate", String(rate)], burst: Math.floor(rate / 10) },
    { name: "tbucket, TBUCKET_NATIVE=0", argv: ["env", "TBUCKET_NATIVE=0", process.execPath, TBUCKET, "--rate", String(rate)], burst: Math.floor(rate / 10) },
    ...(have("pv") ? [{ name: "pv -L", argv: ["pv", "-q", "-L", String(rate)], burst: 0 }] : []),
    ...(have("cstream") ? [{ name: "cstream -t", argv: ["cstream", "-t", String(rate)], burst: 0 }] : []),
  ];
}

async function engineTable(onlyRates) {
  const rounds = quick ? 1 : 3;
  console.log(`## CPU for 10 s against pv and cstream, pipe to pipe: \`head -c N /dev/zero | X | cat > /dev/null\`, median (range) of ${rounds} rounds\n`);
  console.log("Then one more run of each read by this script, which timestamps what arrives: steady rate, envelope, longest gap.\n");
  console.log("| rate | X | CPU user+sys | vs pv | steady rate vs target | worst window over b + r·T | longest gap | peak RSS |");
  console.log("|---|---|---|---|---|---|---|---|");
  for (const rate of onlyRates ?? [100 * MiB, MiB]) {
    const tools = pacers(rate);
    const cpuRuns = tools.map(() => []);
    // Round robin, so that a busy moment of the machine does not fall on one tool only.
    for (let round = 0; round < rounds; round++) {
      for (const [i, tool] of tools.entries()) cpuRuns[i].push(timedRun(`head -c ${10 * rate} /dev/zero | TIMED ${quote(tool.argv)} | cat > /dev/null`).cpu);
    }
    const pvIndex = tools.findIndex((tool) => tool.name === "pv -L");
    const pvCpu = pvIndex >= 0 ? spread(cpuRuns[pvIndex], 2, "").median : undefined;
    for (const [i, tool] of tools.entries()) {
      const cpu = spread(cpuRuns[i], 2, " s");
      const timed = await measure(`head -c ${10 * rate} /dev/zero`, tool);
      const steady = (timed.total - tool.burst) / ((timed.times.at(-1) - timed.times[0]) / 1000) / rate - 1;
      const excess = envelopeExcess(timed, rate, tool.burst);
      console.log(
        `| ${rate / MiB} MiB/s | ${tool.name} | ${cpu.text} | ${pvCpu ? `${(cpu.median / pvCpu).toFixed(2)}x` : "-"} | ` +
          `${pct(steady)} | ${excess <= 0 ? "never" : kib(excess)} | ${maxGapMs(timed, 200).toFixed(0)} ms | ${timed.rssMiB.toFixed(0)} MiB |`,
      );
    }
  }

  const copies = quick ? 3 : 7;
  console.log(`\n## --rate inf, 1 GiB pipe to pipe: \`head -c 1G /dev/zero | X | cat > /dev/null\`, median (range) of ${copies} rounds\n`);
  console.log("| X | elapsed | speed vs cat | CPU of X |");
  console.log("|---|---|---|---|");
  const copiers = [
    { name: "cat", words: "cat" },
    { name: "tbucket --rate inf", words: quote([process.execPath, TBUCKET, "--rate", "inf"]) },
    { name: "tbucket --rate inf, TBUCKET_NATIVE=0", words: `env TBUCKET_NATIVE=0 ${quote([process.execPath, TBUCKET, "--rate", "inf"])}` },
    ...(have("pv") ? [{ name: "pv", words: "pv -q" }] : []),
  ];
  const copyRuns = copiers.map(() => []);
  for (let round = 0; round < copies; round++) {
    for (const [i, copier] of copiers.entries()) copyRuns[i].push(timedRun(`head -c 1G /dev/zero | TIMED ${copier.words} | cat > /dev/null`));
  }
  const catElapsed = spread(copyRuns[0].map((r) => r.elapsed), 2, "").median;
  for (const [i, copier] of copiers.entries()) {
    const elapsed = spread(copyRuns[i].map((r) => r.elapsed), 2, " s");
    console.log(`| ${copier.name} | ${elapsed.text} | ${(catElapsed / elapsed.median).toFixed(2)}x | ${spread(copyRuns[i].map((r) => r.cpu), 2, " s").text} |`);
  }

  console.log("\n## SIGTERM: from the signal to the end of tbucket, median (range) of 5 runs\n");
  console.log("| state | path | ended after | status |");
  console.log("|---|---|---|---|");
  const sparse = join(work, "sparse");
  execFileSync("truncate", ["-s", "20G", sparse]);
  const states = [
    ["blocked writing to a stalled reader (--rate 100mb < a 20 GB sparse file \\| sleep 2)", `TB --rate 100mb --stats < '${sparse}' | sleep 2`, 700],
    ["--rate inf of a 20 GB sparse file to a pipe", `TB --rate inf --stats '${sparse}' | cat > /dev/null`, 1000],
    ["--rate inf of a 20 GB sparse file to /dev/null", `TB --rate inf --stats '${sparse}' > /dev/null`, 1000],
    ["waiting for tokens (--rate 1k)", `TB --rate 1k --stats < /dev/zero > /dev/null`, 700],
  ];
  for (const [state, pipeline, afterMs] of states) {
    for (const [path, env] of [
      ["splice", ""],
      ["JavaScript", "TBUCKET_NATIVE=0"],
    ]) {
      const results = [];
      for (let run = 0; run < 5; run++) results.push(await signalled(pipeline, env, afterMs));
      const statuses = [...new Set(results.map((r) => r.status))].join(", ");
      console.log(`| ${state} | ${path} | ${spread(results.map((r) => r.ms), 1, " ms").text} | ${statuses} |`);
    }
  }
  rmSync(sparse, { force: true });

  if (have("strace")) {
    const trace = join(work, "trace.txt");
    execFileSync("bash", ["-c", `head -c 64M /dev/zero | strace -f -qq -e trace=execve -o '${trace}' ${quote([process.execPath, TBUCKET, "--rate", "inf"])} | cat > /dev/null`]);
    const execs = readFileSync(trace, "utf8").split("\n").filter((line) => line.includes("execve("));
    console.log(`\n## Processes started: \`strace -f -e trace=execve\` of \`tbucket --rate inf\`, 64 MiB pipe to pipe\n`);
    console.log(`${execs.length} execve: ${execs.map((line) => line.replace(/^\d+\s+/, "").replace(/, 0x[0-9a-f]+ .*$/, "")).join("; ")}`);
  }
}

/** Sends SIGTERM to tbucket (TB in `pipeline`) after `afterMs`; how long until it had gone, and its status as the shell saw it. */
async function signalled(pipeline, env, afterMs) {
  const tb = `sh -c 'echo "pid $$" >&3; exec env ${env} "$0" "$@"' '${process.execPath}' '${TBUCKET}'`;
  const position = pipeline.split("|").findIndex((command) => command.includes("TB"));
  const script = `${pipeline.replaceAll("TB", () => tb)}; echo "status \${PIPESTATUS[${position}]}" >&3`;
  const child = spawn("bash", ["-c", script], { stdio: ["ignore", "ignore", "ignore", "pipe"] });
  let said = "";
  child.stdio[3].on("data", (chunk) => (said += chunk));
  const closed = new Promise((resolve) => child.on("close", resolve));
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  const pid = Number(/pid (\d+)/.exec(said)?.[1]);
  const sentMs = performance.now();
  process.kill(pid, "SIGTERM");
  let ms = Infinity;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      ms = performance.now() - sentMs;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await closed;
  return { ms, status: Number(/status (\d+)/.exec(said)?.[1]) };
}

try {
  console.log(`# tbucket pipe benchmark (${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${quick ? "quick" : "full"})\n`);
  if (onlyArg === "inf") await unlimitedTable();
  else if (onlyArg === "engine") await engineTable();
  else if (onlyArg === "rates") {
    await rateTable();
    await stallTable();
  }
  else {
    await rateTable();
    if (onlyArg === undefined) {
      await stallTable();
      await unlimitedTable();
      await engineTable();
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
