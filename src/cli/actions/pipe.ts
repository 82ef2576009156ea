import { statSync } from "node:fs";
import { isatty } from "node:tty";
import type { Limiter } from "../../core/limiter.js";
import { knownTotalBytes, readSources, sourceNames, STDIN_NAME } from "../../stream/read-sources.js";
import { enlargePipes } from "../../stream/pipe-capacity.js";
import { createFdWriter } from "../../stream/fd-writer.js";
import { type Emit, PIPE_BUFFER_BYTES, Throttle } from "../../stream/throttle.js";
import { defaultPipeBurst, type PipeConfig } from "../commands/pipe.js";
import { EXIT, ReaderGone } from "../errors.js";
import { openLimiter } from "../limiter-for.js";
import { describeFileError } from "../file-errors.js";
import { formatPipeStats, type PipeStats } from "../pipe-stats.js";
import { standardOutputFailure, writeStandardError } from "../standard-streams.js";
import type { ProgressDisplay } from "../progress.js";

const MAX_READ_AHEAD_BYTES = 1024 * 1024;
const MIN_READ_AHEAD_BYTES = 64 * 1024;
/**
 * Unlimited, bytes go straight through: cat's 128 KiB stays in the processor's
 * cache. 1 MiB copied a file to a pipe about 20 % slower here.
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

/** Unlimited, or more than a pipe's 64 KiB a slice (10 ms of the rate): from about 6.5 MB/s. */
function outgrowsPipes(rate: number, kind: PipeConfig["kind"]): boolean {
  return rate === Infinity || (kind === "bytes" && rate / 100 > PIPE_BUFFER_BYTES);
}

/**
 * Larger pipes are asked for once this much has gone through: starting perl
 * for the call costs about 30 ms of CPU, more than a short copy.
 */
const LARGE_PIPES_AFTER_BYTES = 1024 * 1024;

/** Copies the sources to standard output through the bucket; resolves to the exit status. */
export async function runPipe(config: PipeConfig): Promise<number> {
  const { limiter, close } = await openLimiter({
    kind: config.kind,
    rate: config.rate,
    burst: config.burst,
    defaultBurst: (rate) => defaultPipeBurst(config.kind, rate),
    shared: config.shared,
  });
  const startedMs = performance.now();
  let unreadable = false;
  const throttle = new Throttle({
    limiter,
    cost: config.cost,
    delimiter: config.delimiter,
    // Counting lines costs a scan of every byte: only when someone will see the count.
    countRecords: config.stats !== undefined || wantsProgress(config),
  });
  let pipesToEnlarge = outgrowsPipes(limiter.rate, config.kind);
  const chunks = readSources(config.files, {
    readAheadBytes: readAheadBytesFor(limiter.rate, config.kind),
    onError: (name, error) => {
      unreadable = true;
      writeStandardError(`tbucket: ${describeFileError(name, error)}\n`);
    },
    stdinStream: () => process.stdin,
    outputFd: 1,
  });
  // Writes go straight to descriptor 1: done when the call returns, blocking while the reader is slow.
  let writtenBytes = 0;
  const writeOut = failingAsStandardOutput(
    createFdWriter(1, (bytes) => (writtenBytes += bytes)),
    () => writtenBytes,
  );

  const snapshot = (): PipeStats => ({
    // What standard output took: a slice that failed to go out is not counted.
    bytes: writtenBytes,
    records: throttle.stats.records,
    elapsedMs: performance.now() - startedMs,
    waitedMs: throttle.stats.waitedMs,
    rate: limiter.rate,
    burst: limiter.burst,
    kind: config.kind,
  });
  const progress = await startProgress(config, limiter, snapshot);
  const finish = (code: number): number => {
    progress?.stop(snapshot());
    if (config.stats) writeStandardError(formatPipeStats(snapshot(), config.stats));
    return code;
  };

  // Ctrl-C (and SIGTERM) end at once, after the stats, by the same signal, as cat does: the
  // shell reports 128 + its number (130, 143), and a read still waiting for input (on a
  // terminal, or a stalled pipe) cannot hold the exit, as it would hold process.exit.
  const onSignal = (signal: NodeJS.Signals) => {
    const code = finish(signal === "SIGINT" ? EXIT.interrupted : 143);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    process.kill(process.pid, signal);
    // Reached only if some other listener kept the signal from ending the process.
    setImmediate(() => process.exit(code));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const turnTaken = eventLoopTurns();
  try {
    for (;;) {
      // A copy that never waits (a file at --rate inf) still lets signals and progress through.
      await turnTaken();
      // While throttled, let a slice's worth of input gather before taking it.
      await throttle.settle();
      const { value: chunk, done } = await chunks.next();
      if (done) break;
      await throttle.pass(chunk, writeOut);
      if (pipesToEnlarge && throttle.stats.bytes >= LARGE_PIPES_AFTER_BYTES) {
        pipesToEnlarge = false;
        enlargePipes({ input: sourceNames(config.files).includes(STDIN_NAME), output: true });
      }
    }
  } catch (error) {
    // A reader that went away (`| head -c 10`) is a normal way for a pipe to end, stats and all;
    // exit at once, as reading may still be waiting on a writer that never ends (`yes |`).
    if (error instanceof ReaderGone) {
      finish(EXIT.ok);
      await close();
      process.exit(unreadable ? EXIT.failure : EXIT.ok);
    }
    finish(EXIT.failure);
    await close();
    throw error;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  await close();
  return finish(unreadable ? EXIT.failure : EXIT.ok);
}

/**
 * How often a loop that never has to wait gives the event loop a turn: a
 * signal or the progress line is then never held longer than this.
 */
const EVENT_LOOP_TURN_MS = 10;

/**
 * Returns a function to await once a round: it resolves at once, except once
 * EVENT_LOOP_TURN_MS have passed without the event loop getting a turn, when it
 * waits for one (setImmediate). Awaiting a promise that is already resolved
 * runs no timers, I/O callbacks or signal handlers.
 */
function eventLoopTurns(): () => Promise<void> | undefined {
  let turnAtMs = performance.now();
  let turn: Promise<void> | undefined;
  return () => {
    const nowMs = performance.now();
    if (nowMs - turnAtMs < EVENT_LOOP_TURN_MS) return undefined;
    turn ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        turn = undefined;
        turnAtMs = performance.now();
        resolve();
      }),
    );
    return turn;
  };
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
  return startProgressDisplay({ read, totalBytes, level: () => limiter.tokens?.(), stream: process.stderr });
}

function statSafe(name: string) {
  try {
    return statSync(name);
  } catch {
    return undefined;
  }
}
