import { open, type FileHandle } from "node:fs/promises";
import { writeSync, closeSync, openSync } from "node:fs";
import { performance } from "node:perf_hooks";
import type { Limiter } from "../../core/limiter.js";
import { formatCountRate } from "../../core/units.js";
import { jobSource, readLines } from "../../run/job-source.js";
import { formatJobLogLine } from "../../run/job-log.js";
import { isFatalSpawnError, JobRunner, type RunCounts, type RunResult } from "../../run/job-runner.js";
import { LaunchRateMeter } from "../../run/launch-rate-meter.js";
import { OutputSink } from "../../run/output-sink.js";
import { createProcessLauncher } from "../../run/process-launcher.js";
import { formatProgress, formatStatsText, formatSummary, runStats } from "../../run/run-report.js";
import type { RunConfig } from "../commands/run.js";
import { EXIT, RuntimeError } from "../errors.js";
import { describeFileError } from "../file-errors.js";
import { openLimiter } from "../limiter-for.js";

/** 128 + the signal's number, as shells report it. */
const SIGNAL_EXIT: Partial<Record<NodeJS.Signals, number>> = { SIGINT: EXIT.interrupted, SIGTERM: 143, SIGHUP: 129 };

/** Launches the jobs, reports, and resolves to the exit status. */
export async function runRun(config: RunConfig): Promise<number> {
  const items = await openItems(config.input);
  const joblogFd = config.joblog === undefined ? undefined : openJobLog(config.joblog);
  const { limiter, close } = await openLimiter({
    kind: "count",
    rate: config.rate,
    burst: config.burst,
    defaultBurst: () => 1,
    shared: config.shared,
    command: "run",
  });
  try {
    return await launchAll(config, limiter, items, joblogFd);
  } finally {
    await items?.close();
    if (joblogFd !== undefined) closeSync(joblogFd);
    await close();
  }
}

interface Items {
  lines: AsyncIterable<string>;
  fromStdin: boolean;
  close(): Promise<void>;
}

async function openItems(input: string | undefined): Promise<Items | undefined> {
  if (input === undefined) return undefined;
  if (input === "-") {
    if (process.stdin.isTTY) process.stderr.write("tbucket: run: reading items from the terminal, one a line; Ctrl-D to end\n");
    // Destroyed at the end: a read still pending (a producer that has not finished) would keep us alive.
    return { lines: readLines(process.stdin), fromStdin: true, close: async () => void process.stdin.destroy() };
  }
  let handle: FileHandle;
  try {
    handle = await open(input, "r");
  } catch (error) {
    throw new RuntimeError(`--input: ${describeFileError(input, error as NodeJS.ErrnoException)}`);
  }
  return { lines: readLines(handle.createReadStream({ autoClose: false })), fromStdin: false, close: () => handle.close() };
}

function openJobLog(path: string): number {
  try {
    return openSync(path, "w");
  } catch (error) {
    throw new RuntimeError(`--joblog: ${describeFileError(path, error as NodeJS.ErrnoException)}`);
  }
}

async function launchAll(config: RunConfig, limiter: Limiter, items: Items | undefined, joblogFd: number | undefined): Promise<number> {
  const progress = await startProgress(config, limiter);
  const stdout = new OutputSink(process.stdout, process.stdout.isTTY ? progress?.aroundWrite : undefined);
  const stderr = new OutputSink(process.stderr, progress?.aroundWrite);
  const launch = createProcessLauncher({
    template: config.command,
    shell: config.shell,
    stdin: items?.fromStdin ? "ignore" : "inherit",
    output: config.output,
    tag: config.tag,
    stdout,
    stderr,
  });
  const toEpochMs = (clockMs: number) => performance.timeOrigin + clockMs;
  const warned = new Set<string>();
  const runner = new JobRunner({
    limiter,
    jobs: jobSource({ items: items?.lines, count: config.count }),
    launch,
    concurrency: config.jobs,
    maxWaitMs: config.maxWaitMs,
    retries: config.retries,
    durationMs: config.durationMs,
    onLaunch: (_job, _attempt, atMs) => progress?.meter.record(atMs),
    onJobEnd: (record) => {
      if (joblogFd !== undefined) writeSync(joblogFd, formatJobLogLine(record, toEpochMs));
      const spawnError = record.exit?.spawnError;
      if (spawnError && !isFatalSpawnError(spawnError.code) && !warned.has(spawnError.code)) {
        warned.add(spawnError.code);
        stderr.write(`tbucket: run: job ${record.number} could not start: ${spawnError.message}\n`);
      }
    },
  });
  progress?.attach(runner, config.count);

  if (!items && config.count === Infinity && config.durationMs === Infinity && process.stderr.isTTY) {
    stderr.write(`tbucket: run: launching at ${formatCountRate(limiter.rate)} until Ctrl-C (--count or --duration stop it on their own)\n`);
  }

  // First Ctrl-C (or SIGTERM): stop launching and pass the signal on; a second one kills the jobs.
  let interruptedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interruptedBy === undefined) {
      interruptedBy = signal;
      runner.stop("signal", signal);
    } else {
      runner.kill();
    }
  };
  // A reader that went away (`| head`) ends the run quietly.
  let readerGone = false;
  const onStdoutError = (error: NodeJS.ErrnoException) => {
    if (readerGone) return;
    readerGone = true;
    if (error.code !== "EPIPE") process.stderr.write(`tbucket: run: standard output: ${error.message}\n`);
    runner.stop("signal", "SIGTERM");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  process.on("SIGHUP", onSignal);
  process.stdout.on("error", onStdoutError);
  let result: RunResult;
  try {
    result = await runner.run();
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.off("SIGHUP", onSignal);
    progress?.stop();
  }
  if (readerGone) return EXIT.ok;

  if (config.stats === "json") process.stderr.write(`${JSON.stringify(runStats(result, limiter.rate, limiter.burst))}\n`);
  else if (config.stats === "text") process.stderr.write(formatStatsText(runStats(result, limiter.rate, limiter.burst)));
  // A store lost mid-run: after the stats, the one line that says so.
  if (result.limiterError) throw result.limiterError.error;

  if (interruptedBy !== undefined) {
    process.stderr.write(`tbucket: run: interrupted: ${formatSummary(result.counts)}\n`);
    return SIGNAL_EXIT[interruptedBy] ?? EXIT.interrupted;
  }
  if (result.spawnFailure) {
    const name = config.shell ? "/bin/sh" : config.command[0]!;
    const { code } = result.spawnFailure;
    if (code === "EACCES") {
      process.stderr.write(`tbucket: run: "${name}": permission denied; make it executable (chmod +x) or name its interpreter first\n`);
      return 126;
    }
    process.stderr.write(`tbucket: run: "${name}": command not found; check the name and your PATH\n`);
    return EXIT.notFound;
  }
  if (result.counts.failed > 0 || result.counts.skipped > 0) {
    process.stderr.write(`tbucket: run: ${formatSummary(result.counts)}\n`);
    return EXIT.failure;
  }
  return EXIT.ok;
}

interface RunProgress {
  meter: LaunchRateMeter;
  aroundWrite: ((write: () => boolean) => boolean) | undefined;
  attach(runner: JobRunner, total: number): void;
  stop(): void;
}

const REFRESH_MS = 200;
const PLAIN_REFRESH_MS = 1000;

/** The progress line: a spinner on a terminal (ora, loaded only then), else a plain line a second when forced. */
async function startProgress(config: RunConfig, limiter: Limiter): Promise<RunProgress | undefined> {
  const wanted = config.progress === "on" || (config.progress === "auto" && process.stderr.isTTY && !process.stdout.isTTY);
  if (!wanted) return undefined;
  const meter = new LaunchRateMeter();
  let read: () => string = () => "starting";
  let timer: ReturnType<typeof setInterval> | undefined;
  const describe = (counts: Readonly<RunCounts>, total: number) =>
    formatProgress(counts, meter.ratePerSecond(performance.now()), limiter.rate, total);
  // A terminal that reports no width (some ptys) would make ora's redraw arithmetic run away: print plain lines.
  if (!process.stderr.isTTY || !(process.stderr.columns > 0)) {
    return {
      meter,
      aroundWrite: undefined,
      attach(runner, total) {
        read = () => describe(runner.counts, total);
        timer = setInterval(() => process.stderr.write(`${read()}\n`), PLAIN_REFRESH_MS);
        timer.unref();
      },
      stop() {
        clearInterval(timer);
        process.stderr.write(`${read()}\n`);
      },
    };
  }
  const { default: ora } = await import("ora");
  const spinner = ora({ stream: process.stderr, discardStdin: false, text: read() }).start();
  return {
    meter,
    // Job output shares the terminal: clear the spinner line before it and draw it again after.
    aroundWrite(write) {
      spinner.clear();
      const ok = write();
      spinner.render();
      return ok;
    },
    attach(runner, total) {
      read = () => describe(runner.counts, total);
      spinner.text = read();
      timer = setInterval(() => (spinner.text = read()), REFRESH_MS);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      spinner.stopAndPersist({ symbol: "", text: read() });
    },
  };
}
