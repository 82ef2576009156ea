import { close, open, fstatSync, type Stats } from "node:fs";
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
  /** After this many bytes of one source, go on reading it in a thread of its own (see ReaderThread). */
  threadAfterBytes?: number;
}

/**
 * Where a thread of its own starts to pay: reading through the thread pool
 * costs about 2.4 s of CPU a GiB from a pipe, and starting the thread about 0.1 s.
 */
export const DEFAULT_THREAD_AFTER_BYTES = 32 * 1024 * 1024;

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

/** Reads through the thread pool first; a source that goes on long enough, in a thread of its own. */
async function* readDescriptor(fd: number, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  const stopAfterBytes = options.threadAfterBytes ?? DEFAULT_THREAD_AFTER_BYTES;
  const readAhead = new ReadAhead(fd, options.readAheadBytes, { stopAfterBytes });
  yield* readAhead;
  if (readAhead.reachedEnd) return;
  yield* new ReaderThread(fd, { maxChunkBytes: options.readAheadBytes, ringBytes: 4 * 1024 * 1024 });
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
