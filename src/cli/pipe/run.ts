import { statSync } from "node:fs";
import { isatty } from "node:tty";
import type { Limiter } from "../../core/limiter.js";
import { isPipe, knownTotalBytes, readDescriptor, readSources, sourceDescriptors, STDIN_NAME } from "../../stream/read-sources.js";
import type { NativeIo } from "../../stream/native-io.js";
import { SpliceProgress, spliceThrough, SpliceUnsupported } from "../../stream/splice-copy.js";
import { eventLoopTurns, type EventLoopTurns } from "../../stream/event-loop-turns.js";
import { createFdWriter, writesWithoutWaiting } from "../../stream/fd-writer.js";
import { type Emit, Throttle } from "../../stream/throttle.js";
import type { PipeConfig } from "./options.js";
import { EXIT, ReaderGone, signalExitStatus } from "../errors.js";
import { openLimiter } from "../open-limiter.js";
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
const MAX_READ_AHEAD_BYTES = 1024 * 1024;
const MIN_READ_AHEAD_BYTES = 64 * 1024;
/**
 * Unlimited, bytes go straight through in cat's 128 KiB, which stays in the
 * processor's cache; larger reads were slower (docs/benchmarks.md, "No limit").
 */
const UNLIMITED_READ_BYTES = 128 * 1024;

/**
 * About 10 ms of the rate (a slice), at least 64 KiB and at most 1 MiB: enough
 * to fill the next slice while the current one waits for tokens, and no more
 * than can be written soon.
 */
function readAheadBytesFor(rate: number, kind: PipeConfig["kind"]): number {
  if (kind === "count") return MAX_READ_AHEAD_BYTES;
  if (rate === Infinity) return UNLIMITED_READ_BYTES;
  return Math.min(MAX_READ_AHEAD_BYTES, Math.max(MIN_READ_AHEAD_BYTES, Math.ceil(rate / 100)));
}

/** Copies the sources to standard output through the bucket; resolves to the exit status. */
export async function runPipe(config: PipeConfig): Promise<number> {
  const { limiter, close } = await openLimiter({
    kind: config.kind,
    rate: config.rate,
    burst: config.burst,
    shared: config.shared,
    command: "pipe",
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
  });
  const readAheadBytes = readAheadBytesFor(limiter.rate, config.kind);
  const onError = (name: string, error: NodeJS.ErrnoException) => {
    unreadable = true;
    writeStandardError(`tbucket: ${describeFileError(name, error)}\n`);
  };
  sizePipes(config, limiter.rate);
  const io = spliceable(config) ? loadNativeIo() : undefined;
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
    zeroCopy: io !== undefined,
    smallestSteadyBurst: burstBelowTimerTick(throttle, config.kind),
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

  // Ctrl-C (and SIGTERM) end at once, after the stats, by the same signal, as cat does: the
  // shell reports 128 + its number (130, 143), and a read still waiting for input (on a
  // terminal, or a stalled pipe) cannot hold the exit, as it would hold process.exit.
  // A write under way in the thread pool gets SIGNAL_GRACE_MS to be counted: it may be done
  // in the kernel (its reader already holding it) before its end reaches the event loop. A
  // stalled reader's write never ends; then the stats count what was done. A shared key then
  // gets back the tokens of a wait cut short (close gives back a lease not yet due). A second
  // signal ends it at once, after the stats: `timeout` sends its signal twice, to tbucket and
  // to its process group, and a user's second Ctrl-C means now.
  const stopListening = () => {
    for (const signal of ENDING_SIGNALS) process.off(signal, onSignal);
  };
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      stopListening();
      finish(signalExitStatus(signal));
      process.kill(process.pid, signal);
      return;
    }
    signalled = true;
    const end = () => {
      const code = finish(signalExitStatus(signal));
      void close().finally(() => {
        stopListening();
        process.kill(process.pid, signal);
        // Reached only if some other listener kept the signal from ending the process.
        setImmediate(() => process.exit(code));
      });
    };
    fdWriter.hold();
    const writing = fdWriter.inFlight();
    if (!writing) return setImmediate(end);
    void Promise.race([writing, new Promise((resolve) => setTimeout(resolve, SIGNAL_GRACE_MS))]).then(() => setImmediate(end));
  };
  for (const signal of ENDING_SIGNALS) process.on(signal, onSignal);

  const turns = eventLoopTurns();
  const copyChunks = async (chunks: AsyncIterable<Buffer> | Iterable<Buffer>) => {
    for await (const chunk of chunks) {
      await throttle.pass(chunk, writeOut);
      // A copy that never waits (a file at --rate inf) still lets signals and progress through.
      if (throttle.lastTakeWaited) turns.mark();
      await turns.next();
      // While throttled, let a slice's worth of input gather before taking the next.
      await throttle.settle();
    }
  };
  try {
    if (io) {
      const onMoved = (bytes: number) => (writtenBytes += bytes);
      await spliceSources(io, config.files, { onError, throttle, moving, onMoved, turns, copyChunks, readAheadBytes }).catch(
        (error: unknown) => {
          throw (error as NodeJS.ErrnoException).syscall === "splice" ? standardOutputFailure(error, writtenBytes + moving.bytes) : error;
        },
      );
    } else {
      await throttle.settle();
      await copyChunks(readSources(config.files, { readAheadBytes, onError, stdinStream: () => process.stdin, outputFd: 1 }));
    }
  } catch (error) {
    // After a signal, the copy fails only because the signal's way out closed the limiter under
    // a wait: that way ends the pipe, after the stats, by the signal. Nothing is said here.
    if (signalled) return new Promise<number>(() => {});
    // A reader that went away (`| head -c 10`) is a normal way for a pipe to end, stats and all;
    // exit at once, as reading may still be waiting on a writer that never ends (`yes |`).
    if (error instanceof ReaderGone) {
      finish(EXIT.ok);
      await close();
      process.exit(unreadable ? EXIT.failure : EXIT.ok);
    }
    finish(EXIT.failure);
    await close();
    stopListening();
    throw error;
  }
  // The signals stay ours until the end: a signal that found no listener would end tbucket
  // by default mid-write of its stats or of its progress row's file.
  await close();
  const code = finish(unreadable ? EXIT.failure : EXIT.ok);
  stopListening();
  return code;
}

/** The signals that end the pipe, after its stats, by the same signal. */
const ENDING_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** How long a signal waits for a write under way to be counted (see onSignal). */
const SIGNAL_GRACE_MS = 20;

/**
 * Whether bytes can go from the sources to standard output by splice(2): byte
 * costs (--lines must see the bytes), and standard output a pipe, or standard
 * input a pipe going to a file or /dev/null; standard input, if read, a pipe
 * or a file (a terminal is read through Node.js, which copes with one made
 * non-blocking). A named source splice(2) then refuses is read and written instead.
 */
function spliceable(config: PipeConfig): boolean {
  if (config.cost !== "bytes") return false;
  const { files } = config;
  if (files.includes(STDIN_NAME) && !isPipe(0) && !writesWithoutWaiting(0)) return false;
  if (isPipe(1)) return true;
  return files.length === 1 && files[0] === STDIN_NAME && isPipe(0) && writesWithoutWaiting(1);
}

interface SpliceSourcesOptions {
  onError(name: string, error: NodeJS.ErrnoException): void;
  throttle: Throttle;
  moving: SpliceProgress;
  onMoved(bytes: number): void;
  turns: EventLoopTurns;
  /** The JavaScript path, for a source splice(2) refuses (a terminal, a file system without it). */
  copyChunks(chunks: AsyncIterable<Buffer> | Iterable<Buffer>): Promise<void>;
  readAheadBytes: number;
}

/** Each source in turn to standard output by splice(2); one that refuses it is read and written instead. */
async function spliceSources(io: NativeIo, names: readonly string[], options: SpliceSourcesOptions): Promise<void> {
  for await (const { name, fd } of sourceDescriptors(names, { onError: options.onError, outputFd: 1 })) {
    try {
      await spliceThrough(io, fd, 1, options);
    } catch (error) {
      if (!(error instanceof SpliceUnsupported)) throw error;
      try {
        await options.copyChunks(readDescriptor(fd, options.readAheadBytes));
      } catch (readError) {
        // A failed write is standard output's (already said so); a failed read is the source's.
        if ((readError as NodeJS.ErrnoException).syscall !== "read") throw readError;
        options.onError(name, readError as NodeJS.ErrnoException);
      }
    }
  }
}

/** The smallest burst that keeps a byte rate, when the bucket's is smaller (Throttle.smallestSteadyBurst). */
function burstBelowTimerTick(throttle: Throttle, kind: PipeConfig["kind"]): number | undefined {
  const steady = kind === "bytes" ? throttle.smallestSteadyBurst() : undefined;
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
  return startProgressDisplay({ read, totalBytes, level: () => limiter.tokens(), key: config.shared.key, name: config.name, stream: process.stderr, env: process.env });
}

function statSafe(name: string) {
  try {
    return statSync(name);
  } catch {
    return undefined;
  }
}
