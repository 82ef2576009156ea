import { close, open, fstatSync, readSync, type Stats } from "node:fs";
import { promisify } from "node:util";
import { ReadAhead } from "./read-ahead.js";
import { ReaderThread } from "./reader-thread.js";

const openAsync = promisify(open);
const closeAsync = promisify(close);

export interface ReadSourcesOptions {
  /** How much may be read ahead of the consumer; each chunk handed over holds all of it. */
  readAheadBytes: number;
  /** Called for a source that cannot be read; reading goes on with the next one, as `cat` does. */
  onError(name: string, error: NodeJS.ErrnoException): void;
  /** Standard input as a Node stream, asked for only if read(2) cannot be used on it. */
  stdinStream?: () => AsyncIterable<Buffer>;
  /** A pipe that gives this many bytes within a second goes on being read in a thread of its own (see ReaderThread). */
  threadAfterBytes?: number;
}

/**
 * Where a thread of its own pays: reading a pipe through the thread pool costs
 * about 2.4 s of CPU a GiB, and starting the thread about 0.1 s, which also
 * takes a core from the pacer for a moment. A pipe that gives 32 MiB within a
 * second is worth it; a slower one keeps the thread pool.
 */
export const DEFAULT_THREAD_AFTER_BYTES = 32 * 1024 * 1024;
const THREAD_WINDOW_MS = 1000;

/** `-` is standard input, as for cat. */
export const STDIN_NAME = "-";

/**
 * The bytes of each named file in turn (`-` is standard input; no names is
 * standard input), read ahead of the consumer by at most `readAheadBytes`.
 */
export async function* readSources(names: readonly string[], options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  for (const name of names.length === 0 ? [STDIN_NAME] : names) {
    try {
      if (name === STDIN_NAME) yield* readStdin(options);
      else yield* readPath(name, options);
    } catch (error) {
      options.onError(name, error as NodeJS.ErrnoException);
    }
  }
}

async function* readPath(path: string, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  const fd = await openAsync(path, "r");
  try {
    yield* readDescriptor(fd, options);
  } finally {
    await closeAsync(fd);
  }
}

async function* readStdin(options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  try {
    yield* readDescriptor(0, options);
  } catch (error) {
    // A non-blocking standard input (a terminal, or a pipe set so by another program)
    // cannot be read with read(2) from the thread pool: let Node's stream poll it.
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN" || !options.stdinStream) throw error;
    yield* options.stdinStream();
  }
}

/**
 * A regular file is read inline, as cat reads it. Anything else (a pipe, a
 * terminal) is read ahead through the thread pool, and a fast one goes on in a
 * thread of its own; that thread boots while the thread pool reads on, so the
 * switch leaves no gap.
 */
async function* readDescriptor(fd: number, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  if (isRegularFile(fd)) {
    yield* readRegularFile(fd, options.readAheadBytes);
    return;
  }
  const readAhead = new ReadAhead(fd, options.readAheadBytes);
  const isFast = fastSourceCheck(options.threadAfterBytes ?? DEFAULT_THREAD_AFTER_BYTES);
  let thread: ReaderThread | undefined;
  try {
    for (;;) {
      const { value, done } = await readAhead.next();
      if (done) break;
      yield value;
      if (thread === undefined && isFast(readAhead.bytesRead)) {
        thread = new ReaderThread(fd, { maxChunkBytes: options.readAheadBytes });
        const stopReadAhead = () => readAhead.stop();
        thread.ready.then(stopReadAhead, stopReadAhead);
      }
    }
    if (readAhead.reachedEnd || thread === undefined) return;
    yield* thread;
  } finally {
    // The input ended before the thread took over.
    if (thread !== undefined && !thread.started) await thread.return();
  }
}

/** Tells, from the bytes read so far, whether a source gave `bytes` within THREAD_WINDOW_MS. */
function fastSourceCheck(bytes: number): (bytesRead: number) => boolean {
  let window = { startMs: performance.now(), startBytes: 0 };
  return (bytesRead) => {
    if (bytesRead - window.startBytes < bytes) return false;
    if (performance.now() - window.startMs <= THREAD_WINDOW_MS) return true;
    window = { startMs: performance.now(), startBytes: bytesRead };
    return false;
  };
}

/**
 * A regular file is read as cat reads it: one buffer at a time, synchronously.
 * Its reads never wait for a writer, and a hop to the thread pool for each
 * would cost more than the read (and a third busy thread on a small machine).
 */
function* readRegularFile(fd: number, bufferBytes: number): Generator<Buffer> {
  const buffer = Buffer.allocUnsafeSlow(bufferBytes);
  for (;;) {
    const bytesRead = readSync(fd, buffer, 0, bufferBytes, null);
    if (bytesRead === 0) return;
    yield buffer.subarray(0, bytesRead);
  }
}

function isRegularFile(fd: number): boolean {
  return safeFstat(fd)?.isFile() ?? false;
}

/** The total size of the named sources when all are regular files; undefined otherwise. */
export function knownTotalBytes(names: readonly string[], statPath: (name: string) => Stats | undefined): number | undefined {
  let total = 0;
  for (const name of names.length === 0 ? [STDIN_NAME] : names) {
    const stats = name === STDIN_NAME ? safeFstat(0) : statPath(name);
    if (!stats?.isFile()) return undefined;
    total += stats.size;
  }
  return total;
}

function safeFstat(fd: number): Stats | undefined {
  try {
    return fstatSync(fd);
  } catch {
    return undefined;
  }
}
