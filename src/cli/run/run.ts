import { open, type FileHandle } from "node:fs/promises";
import { writeSync, closeSync, openSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { plural } from "../../core/format.js";
import type { Limiter } from "../../core/limiter.js";
import { formatCountRate } from "../../core/units.js";
import { jobSource, readLines } from "../../run/job-source.js";
import { formatJobLogLine } from "../../run/job-log.js";
import { isFatalSpawnError, JobRunner, type JobRunnerOptions, type RunResult, type SharedPause, type SharedSlots } from "../../run/job-runner.js";
import type { SetKeyBucket } from "../../store/key-buckets.js";
import { OutputLock } from "../../run/output-lock.js";
import { OutputSink } from "../../run/output-sink.js";
import { ProcessGroups } from "../../run/process-groups.js";
import { createProcessLauncher } from "../../run/process-launcher.js";
import { classShares, describeLostOutput, formatStatsText, formatSummary, runStats } from "../../run/run-report.js";
import { ClassLimiter } from "../../core/class-limiter.js";
import { classOfItem } from "../../run/class-of.js";
import { CostError, type CostTemplate, costOf } from "../../run/cost-template.js";
import type { Costs } from "../../core/limit-spec.js";
import { COST_UNIT, type JobCost } from "./cost-options.js";
import type { JobSpec } from "../../run/job-source.js";
import { describeUnknownClass } from "../class-options.js";
import { LaunchRateMeter } from "../../run/launch-rate-meter.js";
import { startRunProgress } from "./progress.js";
import type { RunConfig } from "./options.js";
import { EXIT, RuntimeError, UsageError } from "../errors.js";
import { ExceedsBurstError } from "../../core/token-bucket.js";
import { endBySignal, onStopSignal, signalExitStatus } from "../signals.js";
import { describeFileError, describeWriteError, writeErrorReason } from "../file-errors.js";
import { ALL_CLASSES, openLimiter } from "../open-limiter.js";
import { needsLimitSet } from "../limit-options.js";
import { formatLimitsText, type LimitReport, limitedBy, limitReports } from "../../core/limit-report.js";
import { LimitSetLimiter } from "../../core/limit-set-limiter.js";
import { TokenBucket } from "../../core/token-bucket.js";
import type { ServerLimit } from "../../run/server-report.js";
import { systemClock } from "../../core/clock.js";
import { AdaptiveRate } from "../../run/adaptive-rate.js";
import type { LimitReservation } from "../../core/limit-set.js";

/** The signal jobs get when tbucket receives one: a hang-up ends them as SIGTERM would (some jobs take SIGHUP as "reload"). */
const FORWARDED: Partial<Record<NodeJS.Signals, NodeJS.Signals>> = { SIGHUP: "SIGTERM" };

/** A command found but not runnable, as shells report it. */
const CANNOT_EXECUTE = 126;

/** Ctrl-\ (SIGQUIT) stops a run too. Jobs are in sessions of their own: the terminal's Ctrl-C and Ctrl-\ reach only us. */
const ALSO_STOPPING: readonly NodeJS.Signals[] = ["SIGQUIT"];
/** A signal repeated within this is the same delivery (`timeout` sends its signal twice, to tbucket and to its process group). */
const SAME_DELIVERY_MS = 100;

/** Where each attempt's {report} file lives, and how the run takes the stop signals over from its making. */
interface ReportFolder {
  readonly path: string;
  /** The run listens for the stop signals itself from now on (launchAll). */
  signalsTaken(): void;
}

/** Launches the jobs, reports, and resolves to the exit status. */
export async function runRun(config: RunConfig): Promise<number> {
  // Each attempt's {report} file lives here (mode 0700, ours alone); gone at every exit, a signal's included.
  const path = mkdtempSync(join(tmpdir(), "tbucket-run-"));
  const removeReportDir = () => rmSync(path, { recursive: true, force: true });
  process.on("exit", removeReportDir);
  // Until the run listens for them, a stop signal (Ctrl-C while the store opens) would end tbucket by its
  // default action, which runs no exit handler: the folder goes first.
  const giveBack = onStopSignal((signal) => {
    removeReportDir();
    endBySignal(signal, giveBack);
  }, { also: ALSO_STOPPING });
  try {
    return await runIn(config, { path, signalsTaken: giveBack });
  } finally {
    giveBack();
    removeReportDir();
    process.off("exit", removeReportDir);
  }
}

async function runIn(config: RunConfig, reportDir: ReportFolder): Promise<number> {
  const items = await openItems(config.input);
  let jobLog: JobLog | undefined;
  try {
    jobLog = config.joblog === undefined ? undefined : openJobLog(config.joblog);
  } catch (error) {
    await items?.close();
    throw error;
  }
  try {
    // Concurrency is the runner's (config.jobs, the lower of --jobs and --concurrency): a job holds its slot across its retries.
    const launchLimits = config.limits.filter((limit) => limit.spec.kind !== "concurrency").map((limit) => limit.spec);
    if (config.classes !== undefined) {
      const classes = new ClassLimiter(launchLimits, config.classes);
      try {
        const names = classes.classNames;
        const lines = new Map(names.map((name) => [name, classes.limiterFor(name)]));
        return await launchAll(reportDir, config, lines.get(names[0]!)!, items, jobLog, () => undefined, undefined, classesOf(config, lines, classes.takenBy));
      } finally {
        classes.close();
      }
    }
    const { limiter, set, report, sharedSlots, sharedPause, byClass, close } = await openLimiter({
      kind: "count",
      rate: config.rate,
      burst: config.burst,
      // A shared key keeps the whole set, its concurrency limit too, for every process on it.
      limits: needsLimitSet(config.limits) ? (config.shared.key !== undefined ? config.limits.map((limit) => limit.spec) : launchLimits) : undefined,
      shared: config.shared,
      command: "run",
      // A shared key's classes: a limiter for each, every job taking as the one its item names.
      ...(config.classOf !== undefined && { className: ALL_CLASSES }),
    });
    try {
      if (byClass) {
        if (config.classOf?.kind === "name" && !byClass.has(config.classOf.name)) {
          const names = [...byClass.keys()];
          throw new UsageError(`--class-of: key "${config.shared.key}" has no class "${config.classOf.name}"; its classes are ${names.join(", ")} (name one of them, or define it with tbucket key set ${config.shared.key} --class, giving every class)`);
        }
        const counted = countedLaunches(byClass);
        return await launchAll(reportDir, config, limiter, items, jobLog, () => undefined, undefined, classesOf(config, counted.lines, counted.launches), sharedPause);
      }
      // A private set's concurrency is the runner's; a shared key's set reports every limit from the store's takes.
      const limitsOf = (slotWaitMs: number) =>
        set ? runLimitReports(config, set, slotWaitMs) : report && limitReports(report.specs, report.waitedMsBy, config.limits.map((limit) => limit.flag), report.refusedBy);
      return await launchAll(reportDir, config, limiter, items, jobLog, limitsOf, sharedSlots, undefined, sharedPause);
    } finally {
      await close();
    }
  } finally {
    await items?.close();
    jobLog?.close();
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
    // open(2) takes a directory; reading it would fail with EISDIR only later, mid-run.
    if ((await handle.stat()).isDirectory()) {
      await handle.close();
      throw Object.assign(new Error("is a directory"), { code: "EISDIR" });
    }
  } catch (error) {
    throw new RuntimeError(`--input: ${describeFileError(input, error as NodeJS.ErrnoException)}`);
  }
  return {
    lines: failingAs(input, readLines(handle.createReadStream({ autoClose: false }))),
    fromStdin: false,
    close: () => handle.close(),
  };
}

/** The items, with a read error (EIO...) turned into one line that names the file. */
async function* failingAs(input: string, lines: AsyncIterable<string>): AsyncGenerator<string> {
  try {
    yield* lines;
  } catch (error) {
    throw new RuntimeError(`--input: ${describeFileError(input, error as NodeJS.ErrnoException)}`);
  }
}

/** --joblog: written line by line as jobs end; after a failed write, nothing more is written. */
interface JobLog {
  /** False when this write failed (the first failure only). */
  write(line: string): boolean;
  /** What failed, as one line. */
  readonly failure: string | undefined;
  close(): void;
}

function openJobLog(path: string): JobLog {
  let fd: number;
  try {
    fd = openSync(path, "w");
  } catch (error) {
    throw new RuntimeError(`--joblog: ${describeFileError(path, error as NodeJS.ErrnoException)}`);
  }
  let failure: string | undefined;
  return {
    write(line) {
      if (failure !== undefined) return true;
      try {
        writeSync(fd, line);
        return true;
      } catch (error) {
        failure = `--joblog: ${describeWriteError(path, error as NodeJS.ErrnoException)}`;
        return false;
      }
    },
    get failure() {
      return failure;
    },
    close: () => closeSync(fd),
  };
}

async function launchAll(
  reportDir: ReportFolder,
  config: RunConfig,
  limiter: Limiter,
  items: Items | undefined,
  jobLog: JobLog | undefined,
  limitsOf: (slotWaitMs: number) => LimitReport[] | undefined,
  sharedSlots: SharedSlots | undefined,
  classes?: RunClasses,
  sharedPause?: SharedPause,
): Promise<number> {
  // The meter gives --stats its rate after the burst, and the progress line its recent rate.
  const meter = new LaunchRateMeter(limiter.rate === Infinity ? 1 : limiter.burst);
  // --adaptive: the rate follows the server, the configured one its ceiling: a private bucket's own rate, else a
  // pacer of this process's launches in front of the set or the shared key (whose limits all still hold).
  const pacer = config.adaptive && !(limiter instanceof TokenBucket) ? new TokenBucket({ rate: adaptiveCeiling(config, limiter), burst: 1 }) : undefined;
  const followed = limiter instanceof TokenBucket ? limiter : pacer;
  const adaptive = config.adaptive && followed ? new AdaptiveRate(followed.rate, systemClock, { onRate: (rate) => followed.setRate(rate) }) : undefined;
  const progress = startRunProgress(
    { progress: config.progress, key: config.shared.key, jobs: config.jobs, name: config.name, classes: classes && (() => classes.shares()), adaptiveCeiling: adaptive?.ceiling },
    adaptive ? followed! : limiter,
    meter,
  );
  // Set once the runner exists: a failed write of job output stops the run.
  let onOutputFailure = (_error: NodeJS.ErrnoException) => {};
  const lock = new OutputLock();
  // A job's last line without a newline stays so (`cat file > copy` copies it exactly) unless another
  // job's output could run into it: then what follows starts with one. Below a progress line, it ends at once.
  const unfinishedLines = config.jobs > 1 || config.tag ? "between" : "none";
  const stdout = new OutputSink(process.stdout, {
    unfinishedLines: process.stdout.isTTY && progress ? "now" : unfinishedLines,
    aroundWrite: process.stdout.isTTY ? progress?.aroundWrite : undefined,
    // Jobs write to a pipe of ours, so a job's own guard (curl's) cannot see the terminal: ours stands in.
    refuseBinary: process.stdout.isTTY && !config.force && config.output !== "raw",
    lock,
    onFailure: (error) => onOutputFailure(error),
  });
  const stderr = new OutputSink(process.stderr, { aroundWrite: progress?.aroundWrite, lock, unfinishedLines: progress ? "now" : unfinishedLines });
  const groups = new ProcessGroups();
  const launch = createProcessLauncher({
    groups,
    template: config.command,
    shell: config.shell,
    stdin: items?.fromStdin ? "ignore" : "inherit",
    output: config.output,
    tag: config.tag,
    stdout,
    stderr,
    reportDir: reportDir.path,
  });
  const sentAtMs = new Map<string, number>();
  const toEpochMs = (clockMs: number) => performance.timeOrigin + clockMs;
  const warned = new Set<string>();
  const settling = config.cost && limiter instanceof LimitSetLimiter ? settlingSet(limiter, config.cost) : undefined;
  const storeChores = new StoreChores();
  /** Items skipped with --skip-bad, and the first one's reason, said once at the end. */
  const badItems = { count: 0, first: "" };
  const runner = new JobRunner({
    limiter: config.cost && limiter instanceof LimitSetLimiter ? inDebtAboveBurst(limiter, config.cost, stderr, settling!) : limiter,
    settle: settling ? (_job, _limiter, admitted, settled) => settling.settle(admitted, settled) : config.cost && sharedSettle(limiter, config.cost),
    jobs: jobSource({ items: items?.lines, count: config.count }),
    launch,
    concurrency: config.jobs,
    sharedSlots,
    sharedPause,
    pacer,
    onPause: (ms) => storeChores.add(emptyDuringPause(limiter, config.cost, ms)),
    maxWaitMs: config.maxWaitMs,
    skipBadItems: config.skipBad,
    retries: config.retries,
    durationMs: config.durationMs,
    killAfterMs: config.killAfterMs,
    limiterOf: classes?.limiterOf,
    costsOf: config.cost && costsOfJob(config.cost),
    onLaunch: (job, attempt, atMs, askedMs) => {
      meter.record(atMs, askedMs);
      if (adaptive) sentAtMs.set(`${job.number}:${attempt}`, atMs);
    },
    onAttemptEnd: (job, attempt, exit, outcome) => {
      if (adaptive) {
        // When the attempt was sent: its throttle says the rate allowed then was too high (AdaptiveRate's maxFromSendRate, one cut per round trip).
        const key = `${job.number}:${attempt}`;
        adaptive.record(outcome.throttled, sentAtMs.get(key));
        sentAtMs.delete(key);
      }
      storeChores.add(lowerToServersCount(limiter, config.cost, exit.report?.responses.at(-1)?.limits));
      // A report line tbucket knows but could not read, said once per run: one bad header would say it every job.
      for (const problem of exit.report?.problems ?? []) {
        const kind = exit.report!.truncated && problem.includes("longer than") ? "report-too-long" : problem.replace(/^report \S+: /, "").split(":")[0]!;
        if (warned.has(kind)) continue;
        warned.add(kind);
        stderr.writeLine(`tbucket: run: report: ${problem.replace(/^report \S+: /, "")}\n`);
      }
    },
    onJobEnd: (record) => {
      // A job log that cannot be written stops launching: jobs would run unrecorded.
      if (jobLog && !jobLog.write(formatJobLogLine(record, toEpochMs))) runner.stop("output-error");
      if (record.badItem !== undefined) {
        if (!config.skipBad) stderr.writeLine(`tbucket: run: ${record.badItem}; or pass --skip-bad to skip such items\n`);
        else if (badItems.count++ === 0) badItems.first = record.badItem;
      }
      const spawnError = record.exit?.spawnError;
      if (spawnError && !isFatalSpawnError(spawnError.code) && !warned.has(spawnError.code)) {
        warned.add(spawnError.code);
        stderr.writeLine(`tbucket: run: job ${record.number} could not start: ${spawnError.message}${JOB_SPAWN_ADVICE[spawnError.code] ?? ""}\n`);
      }
    },
  });
  progress?.attach(runner, config.count, config.input);

  if (!items && config.count === Infinity && config.durationMs === Infinity && process.stderr.isTTY) {
    stderr.writeLine(`tbucket: run: launching at ${formatCountRate(limiter.rate)} until Ctrl-C (--count or --duration stop it on their own)\n`);
  }

  // First signal: stop launching and pass it on to every job's process group (jobs have groups
  // of their own, so the terminal's Ctrl-C reaches only us); a second one, or --kill-after, kills them.
  let interruptedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals, again: boolean) => {
    if (again) {
      runner.kill();
      groups.signalLingering("SIGKILL");
      return;
    }
    interruptedBy = signal;
    runner.stop("signal", FORWARDED[signal] ?? signal);
    groups.signalLingering(FORWARDED[signal] ?? signal);
  };
  // Job output that cannot be written ends the run as a signal would: the jobs' output has nowhere to go.
  // A reader that went away (`| head`) is what pipelines do: that ends it quietly.
  onOutputFailure = () => {
    runner.stop("output-error", "SIGTERM");
    groups.signalLingering("SIGTERM");
  };
  // On every way out, a crash included, no job is left running behind us.
  const killLeftovers = () => groups.signalAll("SIGKILL");
  const stopListening = onStopSignal(onSignal, { also: ALSO_STOPPING, sameDeliveryWithinMs: SAME_DELIVERY_MS });
  reportDir.signalsTaken();
  process.on("exit", killLeftovers);
  let result: RunResult;
  try {
    result = await runner.run();
    // A shared key's buckets emptied or lowered for every process: done before the store closes.
    await storeChores.settled();
    // Processes a job left behind when it ended (`cmd &`) end with the run. A signal meanwhile
    // still reaches them (the handlers stay): dying of it here would leave them running.
    if (groups.anyLingering) await groups.endLingering("SIGTERM", config.killAfterMs);
  } finally {
    // Stopped while the signals are still ours: one with no listener would end tbucket by
    // default in the middle of leaving its progress row.
    await progress?.stop();
    stopListening();
  }
  process.off("exit", killLeftovers);
  // tbucket's own lines after the run: on lines of their own, after a job's unfinished last line too.
  const say = (text: string) => process.stderr.write(stderr.startLine() + text);

  if (badItems.count > 0) say(`tbucket: run: --skip-bad: skipped ${plural(badItems.count, "bad item")} (the first: ${badItems.first})\n`);
  if (config.stats !== undefined) {
    const lost = { bytes: stdout.lostBytes + stderr.lostBytes, lines: stdout.lostLines + stderr.lostLines };
    const adaptiveStats = adaptive && { ceiling: adaptive.ceiling, rate: adaptive.rate, lowest: adaptive.lowest, throttles: adaptive.throttles, cuts: adaptive.cuts };
    // With --adaptive the limit to hold launches against is the ceiling; the rate followed is said apart.
    const stats = runStats(result, adaptive ? adaptive.ceiling : limiter.rate, limiter.burst, meter.steadyPerSecond(), lost, adaptiveStats);
    const limits = limitsOf(result.slotWaitMs ?? 0);
    const shares = classes?.shares();
    const json = { ...stats, ...(limits ? { limits, limitedBy: limitedBy(limits) } : {}), ...(shares ? { classes: shares } : {}) };
    if (config.stats === "json") say(`${JSON.stringify(json)}\n`);
    else say(formatStatsText(stats, limits && formatLimitsText(limits), shares));
  }
  // A store lost mid-run: after the stats, the one line that says so.
  if (result.limiterError) {
    say("");
    const { error } = result.limiterError;
    // A job's --cost past what a limit can ever take: a shared key's store runs no bucket into debt past its burst.
    if (config.cost && error instanceof ExceedsBurstError) {
      throw new RuntimeError(`run: a job costs ${error.n}, more than a limit can take at once (${error.burst}), and a shared key or --max-wait cannot run into debt; raise --cost-burst (or the window's n) to ${error.n} at least`);
    }
    throw error;
  }

  const outputFailure = stdout.failure;
  if (outputFailure?.code === "EPIPE") return EXIT.ok;
  if (outputFailure) {
    const [why, fix] = writeErrorReason(outputFailure);
    const lost = describeLostOutput({ lines: stdout.lostLines, bytes: stdout.lostBytes });
    say(`tbucket: run: standard output: ${why}; ${lost}; ${fix}\n`);
    return EXIT.failure;
  }
  if (jobLog?.failure !== undefined) {
    say(`tbucket: run: ${jobLog.failure}\n`);
    return EXIT.failure;
  }
  // --stats has given the counts already: they are not repeated.
  const counts = config.stats === undefined ? `: ${formatSummary(result.counts)}` : "";
  if (interruptedBy !== undefined) {
    say(`tbucket: run: interrupted${counts}\n`);
    return signalExitStatus(interruptedBy);
  }
  if (result.spawnFailure) {
    const name = config.shell ? "/bin/sh" : config.command[0]!;
    const { code, message } = result.spawnFailure.error;
    if (code === "EACCES") {
      say(`tbucket: run: "${name}": permission denied; make it executable (chmod +x) or name its interpreter first\n`);
      return CANNOT_EXECUTE;
    }
    if (code === "EISDIR") {
      say(`tbucket: run: "${name}": ${message}; name the program to run\n`);
      return CANNOT_EXECUTE;
    }
    if (code === "ENOINTERP") {
      say(`tbucket: run: "${name}": ${message}; install it or correct the script's #! line\n`);
      return CANNOT_EXECUTE;
    }
    say(`tbucket: run: "${name}": command not found; check the name and your PATH\n`);
    return EXIT.notFound;
  }
  // Items skipped as bad were asked to be: only jobs skipped for --max-wait make the run fail.
  if (result.counts.failed > 0 || result.counts.skipped > badItems.count || result.counts.interrupted > 0) {
    if (config.stats === undefined) say(`tbucket: run: ${formatSummary(result.counts)}\n`);
    return EXIT.failure;
  }
  return EXIT.ok;
}

/**
 * A private set whose jobs may cost more than a cost bucket's burst: such a job waits for full
 * buckets and runs them into debt (LimitSetLimiter.waitInDebt), as the pipe's long lines do, said
 * once; later jobs wait while the debt is paid. With --max-wait (tryWait) it is refused as one
 * the burst can never take. A shared key refuses it so too: its store takes no debt past a burst.
 */
function inDebtAboveBurst(set: LimitSetLimiter, jobCosts: readonly JobCost[], stderr: { writeLine(line: string): void }, settling: SettlingSet): Limiter {
  const mosts = jobCosts.map(({ unit }) => ({ unit, most: set.mostAtOnce(unit, { windows: false }) }));
  let said = false;
  return {
    get rate() {
      return set.rate;
    },
    get burst() {
      return set.burst;
    },
    tokens: () => set.tokens(),
    tryWait: (n, maxWaitMs, signal, costs) => (costs ? settling.tryWait(costs, maxWaitMs, signal) : set.tryWait(n, maxWaitMs, signal, costs)),
    wait(n, signal, costs) {
      const over = mosts.find(({ unit, most }) => (costs?.[unit] ?? 0) > most);
      if (!over) return settling.wait(costs!, signal);
      if (!said) {
        said = true;
        stderr.writeLine(`tbucket: run: a job costs ${costs![over.unit]}, more than a cost limit's burst (${over.most}): it waits for full buckets and runs them into debt\n`);
      }
      return set.waitInDebt(costs!, signal);
    },
  };
}

/**
 * A private set whose takes are kept, the latest for each job's costs, so that its report's
 * `tbucket-cost` settles them (LimitSet.settleAt, at now: more becomes debt, less is given back).
 * One --cost: the report's first number settles every cost limit; several: the i-th number the i-th.
 */
interface SettlingSet {
  wait(costs: Costs, signal?: AbortSignal): Promise<void>;
  tryWait(costs: Costs, maxWaitMs: number, signal?: AbortSignal): Promise<boolean>;
  settle(admitted: Costs, settled: readonly number[]): void;
}

function settlingSet(set: LimitSetLimiter, jobCosts: readonly JobCost[]): SettlingSet {
  const taken = new WeakMap<Costs, LimitReservation>();
  const take = async (costs: Costs, maxWaitMs: number, signal?: AbortSignal) => {
    const reservation = await set.acquire(costs, maxWaitMs, signal);
    if (reservation === undefined) return false;
    set.release(reservation);
    taken.set(costs, reservation);
    return true;
  };
  return {
    wait: async (costs, signal) => void (await take(costs, Infinity, signal)),
    tryWait: take,
    settle(admitted, settled) {
      const reservation = taken.get(admitted);
      const actual = settledCosts(jobCosts, settled);
      if (reservation === undefined || actual === undefined) return;
      set.set.settleAt(set.clock.now(), reservation, actual);
    },
  };
}

/**
 * On a shared key's set, `tbucket-cost` corrects this process's share: what a
 * job did not use serves its next jobs, what it used past its estimate is
 * taken with their takes (SharedSetLimiter.settle).
 */
function sharedSettle(limiter: Limiter, jobCosts: readonly JobCost[]): JobRunnerOptions["settle"] {
  const settle = (limiter as Partial<SetKeyBucket>).settle;
  if (typeof settle !== "function") return undefined;
  return (_job, _limiter, admitted, settled) => {
    const actual = settledCosts(jobCosts, settled);
    if (actual !== undefined) settle(admitted, actual);
  };
}

/** The costs a report's `tbucket-cost: N[, N...]` settles: the i-th number the i-th --cost's unit; undefined when it gives none. */
function settledCosts(jobCosts: readonly JobCost[], settled: readonly number[]): Costs | undefined {
  const actual: Record<string, number> = {};
  jobCosts.forEach(({ unit }, i) => {
    if (settled[i] !== undefined) actual[unit] = settled[i];
  });
  return Object.keys(actual).length > 0 ? actual : undefined;
}

/** --adaptive's ceiling: the lowest finite launch rate given, else the shared key's launch rate as read. */
function adaptiveCeiling(config: RunConfig, limiter: Limiter): number {
  const given = config.limits.flatMap((limit) => (limit.spec.kind === "bucket" && limit.spec.unit === "count" && Number.isFinite(limit.spec.rate) ? [limit.spec.rate] : []));
  const ceiling = given.length > 0 ? Math.min(...given) : limiter.rate;
  if (!(ceiling > 0) || !Number.isFinite(ceiling)) throw new UsageError(`--adaptive: the key's launch rate is ${formatCountRate(ceiling)}; give --rate, the ceiling the rate follows the server under`);
  return ceiling;
}

/**
 * The store calls made on the side of the run (a shared key emptied for the
 * server's pause, lowered to its count), which the run waits for at its end:
 * the other processes on the key count on them. A failure there is the
 * limiter's to say at its next take, so here it is only let go.
 */
class StoreChores {
  readonly #pending = new Set<Promise<unknown>>();

  add(chore: Promise<unknown> | undefined): void {
    if (!chore) return;
    const done = chore.catch(() => {}).finally(() => this.#pending.delete(done));
    this.#pending.add(done);
  }

  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }
}

/**
 * While the server's pause holds launches, the buckets do not fill: the
 * pause's debt is put in them, so that afterwards they start from empty.
 * Filled while paused, they let a burst go at once when it ended, and the
 * server, whose count of the burst starts a little later than ours (its
 * first request arrives late), refused its end, every pause again
 * (bench/quota.mjs). Starting from empty, ours stays below the server's from
 * then on. A private bucket or set here; a shared key's launch buckets in
 * its store, for every process on it (a failure there is the limiter's to say).
 */
function emptyDuringPause(limiter: Limiter, jobCosts: readonly JobCost[] | undefined, ms: number): Promise<unknown> | undefined {
  if (limiter instanceof LimitSetLimiter) {
    // Every rate: the launches', and the costs' (the server's refusal may be of tokens; it says which only sometimes).
    const nowMs = limiter.clock.now();
    for (const unit of ["count", ...(jobCosts ?? []).map((cost) => cost.unit)]) limiter.set.holdEmptyUntilAt(nowMs, unit, nowMs + ms);
  }
  else if (limiter instanceof TokenBucket && Number.isFinite(limiter.rate)) {
    const owed = -(limiter.rate * ms) / 1000;
    const level = limiter.tokens();
    if (level > owed) limiter.addTokensAt(limiter.clock.now(), owed - level);
  } else {
    const emptyFor = (limiter as Partial<SetKeyBucket>).emptyFor;
    if (typeof emptyFor === "function") return emptyFor(ms);
  }
  return undefined;
}

/**
 * What the server says is left of its limits (remaining with a reset) lowers
 * this run's buckets that count the same (DESIGN 13): a limit of tokens the
 * cost limits, any other (requests, an IETF policy) the launches; private,
 * or a shared key's in its store for every process on it. Never raises one:
 * the server's count is an upper bound of what may go now.
 */
function lowerToServersCount(limiter: Limiter, jobCosts: readonly JobCost[] | undefined, limits: readonly ServerLimit[] | undefined): Promise<unknown> | undefined {
  if (!limits) return undefined;
  const lowered: Promise<unknown>[] = [];
  for (const limit of limits) {
    if (limit.remaining === undefined || limit.resetMs === undefined) continue;
    const tokens = /token/i.test(limit.name);
    // Tokens are the cost's when there is one cost; with several (input, output), which is which is not known.
    if (tokens && jobCosts?.length !== 1) continue;
    const unit = tokens ? jobCosts![0]!.unit : "count";
    if (limiter instanceof LimitSetLimiter) limiter.set.capLevelAt(limiter.clock.now(), unit, limit.remaining);
    else if (limiter instanceof TokenBucket) {
      const level = limiter.tokens();
      if (unit === "count" && level > limit.remaining) limiter.addTokensAt(limiter.clock.now(), limit.remaining - level);
    } else {
      // A shared key's buckets, in its store: a round trip only when the server's count is below a burst.
      const capLevel = (limiter as Partial<SetKeyBucket>).capLevel;
      if (typeof capLevel === "function") lowered.push(capLevel(unit, limit.remaining));
    }
  }
  return lowered.length > 0 ? Promise.all(lowered) : undefined;
}

/** A job's launch and its --cost; an item without one is bad (one line, naming its line). */
function costsOfJob(jobCosts: readonly JobCost[]): (job: JobSpec) => Costs {
  return (job) => {
    try {
      const costs: Record<string, number> = { count: 1 };
      for (const { unit, template } of jobCosts) costs[unit] = costOf(template, job.item ?? "");
      return costs;
    } catch (error) {
      if (error instanceof CostError) throw new Error(`line ${job.number}: ${error.message}`);
      throw error;
    }
  };
}

/** A run's classes: each job's line, and what each class launched. */
interface RunClasses {
  limiterOf(job: JobSpec): Limiter;
  shares(): ReturnType<typeof classShares>;
}

/** Each class's limiter, counting the launches it admitted (a shared key's classes count in the store, not here). */
function countedLaunches(byClass: Map<string, Limiter>): { lines: Map<string, Limiter>; launches: Float64Array } {
  const launches = new Float64Array(byClass.size);
  const lines = new Map<string, Limiter>();
  [...byClass].forEach(([name, limiter], i) => {
    lines.set(name, {
      get rate() {
        return limiter.rate;
      },
      get burst() {
        return limiter.burst;
      },
      tokens: () => limiter.tokens(),
      wait: async (n, signal, costs) => {
        await limiter.wait(n, signal, costs);
        launches[i] = launches[i]! + n;
      },
      tryWait: async (n, maxWaitMs, signal, costs) => {
        const admitted = await limiter.tryWait(n, maxWaitMs, signal, costs);
        if (admitted) launches[i] = launches[i]! + n;
        return admitted;
      },
    });
  });
  return { lines, launches };
}

/** Each job waits in its class's line; an item naming no defined class is bad (one line, naming its line). */
function classesOf(config: RunConfig, lines: Map<string, Limiter>, launches: ArrayLike<number>): RunClasses {
  const names = [...lines.keys()];
  return {
    limiterOf(job) {
      // Items are numbered by line, from 1.
      const where = `line ${job.number}`;
      let name: string;
      try {
        name = classOfItem(config.classOf!, job.item);
      } catch (error) {
        if (error instanceof CostError) throw new Error(`${where}: ${error.message}`);
        throw error;
      }
      const line = lines.get(name);
      if (line === undefined) throw new Error(describeUnknownClass(name, names, where));
      return line;
    },
    shares: () => classShares(names, launches),
  };
}

/**
 * Each limit of the run's set, in command-line order: the launch limits from the set,
 * and --concurrency from the runner, whose slot waits it set when it is the lower of it and --jobs.
 */
function runLimitReports(config: RunConfig, set: LimitSetLimiter, slotWaitMs: number): LimitReport[] {
  let launchIndex = 0;
  // Each limit's index in the launch set; undefined for --concurrency, which the runner holds.
  const inSet = config.limits.map((limit) => (limit.spec.kind === "concurrency" ? undefined : launchIndex++));
  const waitedMs = config.limits.map(({ spec }, index) => {
    if (spec.kind === "concurrency") return spec.n === config.jobs ? slotWaitMs : 0;
    return set.waitedMs(inSet[index]!);
  });
  return limitReports(
    config.limits.map((limit) => limit.spec),
    (index) => waitedMs[index]!,
    config.limits.map((limit) => limit.flag),
    (index) => (inSet[index] === undefined ? 0 : set.refusedBy[inSet[index]!]!),
  );
}

/** What to do about a job that could not start, after the launcher's facts. */
const JOB_SPAWN_ADVICE: Record<string, string> = {
  E2BIG: "; put long data in files and pass their names as items, or give it to the command on its standard input",
  EEMPTY: "; an empty item cannot be the command name",
  ENUL: "; remove NUL bytes from the items",
};
