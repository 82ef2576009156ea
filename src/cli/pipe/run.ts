import { statSync } from "node:fs";
import { isatty } from "node:tty";
import type { Limiter } from "../../core/limiter.js";
import { ExceedsBurstError } from "../../core/token-bucket.js";
import { humanDuration } from "../../core/format.js";
import { chooseCopyPath, copySources } from "../../stream/copy-engine.js";
import { knownTotalBytes } from "../../stream/read-sources.js";
import { SpliceProgress } from "../../stream/splice-copy.js";
import { createFdWriter, type FdWriter } from "../../stream/fd-writer.js";
import { type Emit, Throttle } from "../../stream/throttle.js";
import type { PipeConfig } from "./options.js";
import { EXIT, ReaderGone, RuntimeError } from "../errors.js";
import { endBySignal, onStopSignal, signalExitStatus } from "../signals.js";
import { openLimiter } from "../open-limiter.js";
import { type LimitSpec, mostAtOnce } from "../../core/limit-spec.js";
import { needsLimitSet } from "../limit-options.js";
import { limitReports } from "../../core/limit-report.js";
import { describeFileError } from "../file-errors.js";
import { formatPipeStats, type PipeStats } from "../pipe-stats.js";
import { standardOutputFailure, writeStandardError } from "../standard-streams.js";
import { loadNativeIo } from "./native-part.js";
import { sizePipes } from "./pipe-capacity.js";
import type { ProgressDisplay } from "../progress.js";
import { refusingBinaryOnTerminal } from "../binary-guard.js";

const NEWLINE = 0x0a;

/** What a Linux pipe holds unless asked otherwise, and so what one read from it gives at most. */
const PIPE_BUFFER_BYTES = 64 * 1024;

/** Copies the sources to standard output through the bucket; resolves to the exit status. */
export async function runPipe(config: PipeConfig): Promise<number> {
  const { limiter, report, sharedRate, close } = await openLimiter({
    kind: config.kind,
    rate: config.rate,
    burst: config.burst,
    limits: needsLimitSet(config.limits) ? config.limits.map((limit) => limit.spec) : undefined,
    shared: config.shared,
    command: "pipe",
    ...(config.className !== undefined && { className: config.className }),
  });
  const startedMs = performance.now();
  let unreadable = false;
  const throttle = new Throttle({
    limiter,
    cost: config.cost,
    delimiter: config.delimiter,
    // Lines are counted in line mode only: newlines in bytes (random binary) are not lines to anyone.
    countRecords: config.cost !== "bytes",
    oneReadBytes: PIPE_BUFFER_BYTES,
    // Lines limited as well as bytes: each slice holds no more lines than every line limit can take.
    recordsAtOnce: report && mostAtOnce(report.specs, "count"),
  });
  const onSourceError = (name: string, error: NodeJS.ErrnoException) => {
    unreadable = true;
    writeStandardError(`tbucket: ${describeFileError(name, error)}\n`);
  };
  sizePipes(config, limiter.rate);
  const path = chooseCopyPath(config.files, { outputFd: 1, cost: config.cost, loadIo: loadNativeIo });
  const moving = new SpliceProgress();
  // Writes go to descriptor 1 whole, a pipe's from the thread pool (see createFdWriter), so
  // a reader that stalls blocks the copy but never the signals or the progress line.
  let writtenBytes = 0;
  const fdWriter = createFdWriter(1, (bytes) => (writtenBytes += bytes));
  const failingWrite = failingAsStandardOutput(fdWriter, () => writtenBytes);
  // isatty(1), not process.stdout.isTTY (see wantsProgress). With -0 the NUL bytes are the user's own separators.
  const guardedWrite = isatty(1) && !config.force && config.delimiter !== 0 ? refusingBinaryOnTerminal(failingWrite) : failingWrite;
  // With -p and output to the terminal too, the progress line steps aside for each write.
  const writeOut: Emit = isatty(1)
    ? (segment) => (progress ? progress.aroundOutput(() => guardedWrite(segment), segment.at(-1) === NEWLINE) : guardedWrite(segment))
    : guardedWrite;

  const snapshot = (): PipeStats => ({
    // What standard output took: a slice that failed to go out is not counted.
    bytes: writtenBytes + moving.bytes,
    records: config.cost === "bytes" ? undefined : throttle.stats.records,
    elapsedMs: performance.now() - startedMs,
    waitedMs: throttle.stats.waitedMs,
    rate: limiter.rate,
    burst: limiter.burst,
    kind: config.kind,
    zeroCopy: path.kind === "splice",
    // A class's burst is the key's, scaled: --burst is no advice to give it.
    smallestSteadyBurst: config.className === undefined ? burstBelowTimerTick(throttle, config.kind, report?.specs) : undefined,
    limits: report && limitReports(report.specs, report.waitedMsBy, config.limits.map((limit) => limit.flag), report.refusedBy),
    ...(config.className !== undefined && sharedRate !== undefined && { class: { name: config.className, sharedRate } }),
  });
  const progress = await startProgress(config, limiter, snapshot);
  // Once only: a signal may arrive while the copy is finishing, and the stats are said once.
  let finished = false;
  const finish = (code: number): number => {
    if (finished) return code;
    finished = true;
    progress?.stop(snapshot());
    if (config.stats) writeStandardError(formatPipeStats(snapshot(), config.stats));
    return code;
  };

  const signals = endOnStopSignal(fdWriter, finish, close);
  try {
    await copySources({
      sources: config.files,
      outputFd: 1,
      path,
      throttle,
      emit: writeOut,
      onSourceError,
      stdinStream: () => process.stdin,
      moving,
      onMoved: (bytes) => (writtenBytes += bytes),
    }).catch((error: unknown) => {
      throw (error as NodeJS.ErrnoException).syscall === "splice" ? standardOutputFailure(error, writtenBytes + moving.bytes) : error;
    });
  } catch (error) {
    // After a signal, the copy fails only because the signal's way out closed the limiter under
    // a wait: that way ends the pipe, after the stats, by the signal. Nothing is said here.
    if (signals.signalled) return new Promise<number>(() => {});
    // A reader that went away (`| head -c 10`) is a normal way for a pipe to end, stats and all;
    // exit at once, as reading may still be waiting on a writer that never ends (`yes |`).
    if (error instanceof ReaderGone) {
      finish(EXIT.ok);
      await close();
      process.exit(unreadable ? EXIT.failure : EXIT.ok);
    }
    finish(EXIT.failure);
    await close();
    signals.stopListening();
    throw error instanceof ExceedsBurstError ? recordTooLarge(error, config) : error;
  }
  // The signals stay ours until the end: a signal that found no listener would end tbucket
  // by default mid-write of its stats or of its progress row's file.
  await close();
  const code = finish(unreadable ? EXIT.failure : EXIT.ok);
  signals.stopListening();
  return code;
}

/** How long a signal waits for a write under way to be counted (see endOnStopSignal). */
const SIGNAL_GRACE_MS = 20;

/**
 * Ctrl-C (and SIGTERM, SIGHUP) end the pipe at once, after the stats (`finish`), by the same
 * signal, as cat does. A write under way in the thread pool gets SIGNAL_GRACE_MS to be counted:
 * it may be done in the kernel (its reader already holding it) before its end reaches the event
 * loop. A stalled reader's write never ends; then the stats count what was done. A shared key
 * then gets back the tokens of a wait cut short (`close` gives back a lease not yet due). A
 * second signal ends it at once, after the stats: `timeout` sends its signal twice, to tbucket
 * and to its process group, and a user's second Ctrl-C means now.
 */
function endOnStopSignal(fdWriter: FdWriter, finish: (code: number) => number, close: () => Promise<void>): { readonly signalled: boolean; stopListening(): void } {
  let signalled = false;
  const stopListening = onStopSignal((signal, again) => {
    signalled = true;
    if (again) {
      finish(signalExitStatus(signal));
      return endBySignal(signal, stopListening);
    }
    const end = () => {
      finish(signalExitStatus(signal));
      void close().finally(() => endBySignal(signal, stopListening));
    };
    fdWriter.hold();
    const writing = fdWriter.inFlight();
    if (!writing) return setImmediate(end);
    void Promise.race([writing, new Promise((resolve) => setTimeout(resolve, SIGNAL_GRACE_MS))]).then(() => setImmediate(end));
  });
  return {
    get signalled() {
      return signalled;
    },
    stopListening,
  };
}

/**
 * A line (a record) longer than a byte window's n: a bucket lets it out whole and runs into
 * debt, but a window never holds more than its n, so it can never go out whole.
 */
function recordTooLarge(error: ExceedsBurstError, config: PipeConfig): RuntimeError | ExceedsBurstError {
  const window = config.limits.find((limit) => limit.spec.kind === "window" && limit.spec.unit === "bytes" && limit.spec.n === error.burst);
  if (window === undefined || window.spec.kind !== "window") return error;
  const record = config.delimiter === 0 ? "a record" : "a line";
  return new RuntimeError(
    `${record} of ${error.n} bytes can never go out whole: ${window.flag} lets ${error.burst} bytes through in any ${humanDuration(window.spec.windowMs)}; ` +
      `give --window a larger n, or drop --lines to let lines be split`,
  );
}

/**
 * The smallest burst that keeps a byte rate, when the bucket's is smaller (Throttle.smallestSteadyBurst).
 * Not when the least a set takes at once is a window's n: a window loses nothing to a late timer (an
 * item counts from its reserved instant, whenever it went), and it has no --burst to raise.
 */
function burstBelowTimerTick(throttle: Throttle, kind: PipeConfig["kind"], specs: readonly LimitSpec[] | undefined): number | undefined {
  const steady = kind === "bytes" ? throttle.smallestSteadyBurst() : undefined;
  if (specs !== undefined && mostAtOnce(specs, kind) < mostAtOnce(specs, kind, { windows: false })) return undefined;
  return steady !== undefined && throttle.limiter.burst < steady ? steady : undefined;
}

/** `emit` with its failures told as standard output's (see standardOutputFailure). */
function failingAsStandardOutput(emit: Emit, writtenBytes: () => number): Emit {
  const fail = (error: unknown): never => {
    throw standardOutputFailure(error, writtenBytes());
  };
  return (segment) => {
    try {
      return emit(segment)?.catch(fail);
    } catch (error) {
      return fail(error);
    }
  };
}

function wantsProgress(config: PipeConfig): boolean {
  // isatty(1), not process.stdout.isTTY: touching process.stdout would make a piped descriptor 1 non-blocking.
  return config.progress === "on" || (config.progress === "auto" && isatty(2) && !isatty(1));
}

async function startProgress(config: PipeConfig, limiter: Limiter, read: () => PipeStats): Promise<ProgressDisplay | undefined> {
  if (!wantsProgress(config)) return undefined;
  const { startProgressDisplay } = await import("../progress.js");
  const totalBytes = config.sizeBytes ?? knownTotalBytes(config.files, statSafe);
  return startProgressDisplay({ read, totalBytes, level: () => (config.className === undefined ? limiter.tokens() : undefined), key: config.shared.key, name: config.name, stream: process.stderr, env: process.env });
}

function statSafe(name: string) {
  try {
    return statSync(name);
  } catch {
    return undefined;
  }
}
