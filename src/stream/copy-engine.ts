import { type EventLoopTurns, eventLoopTurns } from "./event-loop-turns.js";
import { writesWithoutWaiting } from "./fd-writer.js";
import type { NativeIo } from "./native-io.js";
import { isPipe, readDescriptor, readSources, sourceDescriptors, STDIN_NAME } from "./read-sources.js";
import { type SpliceProgress, spliceThrough, SpliceUnsupported } from "./splice-copy.js";
import type { CostMode, Emit, Throttle } from "./throttle.js";

// The copy engine: named sources in turn (`-` is standard input, descriptor 0) to one output
// descriptor through a Throttle, either moved in the kernel by splice(2) or read and written.
// Which descriptors, how big their pipes, whether the native part may be used, and what a
// failure is called are the caller's: the engine only copies.

const MAX_READ_AHEAD_BYTES = 1024 * 1024;
const MIN_READ_AHEAD_BYTES = 64 * 1024;
/**
 * Unlimited, bytes go straight through in cat's 128 KiB, which stays in the
 * processor's cache; larger reads were slower (docs/benchmarks.md, "No limit").
 */
const UNLIMITED_READ_BYTES = 128 * 1024;

/** How the bytes go: moved by splice(2) through the native part, or read and written. */
export type CopyPath = { kind: "splice"; io: NativeIo } | { kind: "read-write" };

export interface CopyPathOptions {
  /** The descriptor the bytes go to. */
  outputFd: number;
  /** What a token pays for: splice(2) never sees the bytes, so it moves byte costs only. */
  cost: CostMode;
  /** The native part, asked for only when splice(2) could move these sources; undefined: none here. */
  loadIo(): NativeIo | undefined;
}

/**
 * The path for `sources`: splice(2) for byte costs, and the output a pipe, or
 * standard input alone a pipe going to a file or /dev/null; standard input, if
 * read, a pipe or a file (a terminal is read through Node.js, which copes with
 * one made non-blocking). A named source splice(2) then refuses is read and
 * written instead (see copySources).
 */
export function chooseCopyPath(sources: readonly string[], options: CopyPathOptions): CopyPath {
  if (!spliceable(sources, options)) return { kind: "read-write" };
  const io = options.loadIo();
  return io ? { kind: "splice", io } : { kind: "read-write" };
}

function spliceable(sources: readonly string[], { outputFd, cost }: CopyPathOptions): boolean {
  if (cost !== "bytes") return false;
  if (sources.includes(STDIN_NAME) && !isPipe(0) && !writesWithoutWaiting(0)) return false;
  if (isPipe(outputFd)) return true;
  return sources.length === 1 && sources[0] === STDIN_NAME && isPipe(0) && writesWithoutWaiting(outputFd);
}

export interface CopyOptions {
  /** The sources in order, `-` for standard input. */
  sources: readonly string[];
  /** Where the bytes go: splice(2) moves to it; on the read-write path `emit` writes to it. */
  outputFd: number;
  path: CopyPath;
  /** Paces the copy; its limiter's rate at the start sizes the read-ahead. */
  throttle: Throttle;
  /** Writes a paid slice to the output, on the read-write path. */
  emit: Emit;
  /** A source that cannot be opened or read; the copy goes on with the next one, as `cat` does. */
  onSourceError(name: string, error: NodeJS.ErrnoException): void;
  /** Standard input as a Node stream, for a terminal read(2) cannot read (see readSources). */
  stdinStream?: () => AsyncIterable<Buffer>;
  /** What the splice(2) under way has moved so far. */
  moving: SpliceProgress;
  /** Hears of each move by splice(2) once done (the read-write path's bytes go through `emit`). */
  onMoved(bytes: number): void;
  /** Ends the copy between two slices, and a wait for tokens under way, with its reason. */
  signal?: AbortSignal;
}

/**
 * Copies the sources to the output through the throttle; resolves at the end
 * of the last one. Rejects with the first failure of the output (an errno
 * error whose syscall is "splice" on the splice path), of the limiter, or with
 * the signal's reason.
 */
export async function copySources(options: CopyOptions): Promise<void> {
  const copy: Copy = { ...options, turns: eventLoopTurns(), readAheadBytes: readAheadBytesFor(options.throttle) };
  if (options.path.kind === "splice") return spliceSources(options.path.io, copy);
  await copy.throttle.settle(copy.signal);
  await copyChunks(readSources(copy.sources, { readAheadBytes: copy.readAheadBytes, onError: copy.onSourceError, stdinStream: copy.stdinStream, outputFd: copy.outputFd }), copy);
}

/** A copy under way: its options and what its loops share. */
interface Copy extends CopyOptions {
  turns: EventLoopTurns;
  readAheadBytes: number;
}

/**
 * About 10 ms of the rate (a slice), at least 64 KiB and at most 1 MiB: enough
 * to fill the next slice while the current one waits for tokens, and no more
 * than can be written soon. Records are of any length: the most.
 */
function readAheadBytesFor(throttle: Throttle): number {
  const { rate } = throttle.limiter;
  if (throttle.cost === "records") return MAX_READ_AHEAD_BYTES;
  if (rate === Infinity) return UNLIMITED_READ_BYTES;
  return Math.min(MAX_READ_AHEAD_BYTES, Math.max(MIN_READ_AHEAD_BYTES, Math.ceil(rate / 100)));
}

/** The read-write loop: each chunk paid slice by slice and written. */
async function copyChunks(chunks: AsyncIterable<Buffer> | Iterable<Buffer>, { throttle, emit, turns, signal }: Copy): Promise<void> {
  for await (const chunk of chunks) {
    await throttle.pass(chunk, emit, signal);
    // A copy that never waits (a file at --rate inf) still lets signals and progress through.
    if (throttle.lastTakeWaited) turns.mark();
    await turns.next();
    // While throttled, let a slice's worth of input gather before taking the next.
    await throttle.settle(signal);
  }
}

/** The splice loop: each source in turn by splice(2); one that refuses it is read and written instead. */
async function spliceSources(io: NativeIo, copy: Copy): Promise<void> {
  for await (const { name, fd } of sourceDescriptors(copy.sources, { onError: copy.onSourceError, outputFd: copy.outputFd })) {
    try {
      await spliceThrough(io, fd, copy.outputFd, copy);
    } catch (error) {
      if (!(error instanceof SpliceUnsupported)) throw error;
      try {
        await copyChunks(readDescriptor(fd, copy.readAheadBytes), copy);
      } catch (readError) {
        // A failed write is the output's; a failed read is the source's.
        if ((readError as NodeJS.ErrnoException).syscall !== "read") throw readError;
        copy.onSourceError(name, readError as NodeJS.ErrnoException);
      }
    }
  }
}
