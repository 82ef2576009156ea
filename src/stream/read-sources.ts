import { close, open, fstatSync, type Stats } from "node:fs";
import { promisify } from "node:util";
import { ReadAhead } from "./read-ahead.js";

const openAsync = promisify(open);
const closeAsync = promisify(close);

export interface ReadSourcesOptions {
  /** How much may be read ahead of the consumer; each chunk handed over holds all of it. */
  readAheadBytes: number;
  /** Called for a source that cannot be read; reading goes on with the next one, as `cat` does. */
  onError(name: string, error: NodeJS.ErrnoException): void;
  /** Standard input as a Node stream, asked for only if read(2) cannot be used on it. */
  stdinStream?: () => AsyncIterable<Buffer>;
}

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
    yield* new ReadAhead(fd, options.readAheadBytes);
  } finally {
    await closeAsync(fd);
  }
}

async function* readStdin(options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  try {
    yield* new ReadAhead(0, options.readAheadBytes);
  } catch (error) {
    // A non-blocking standard input (a terminal, or a pipe set so by another program)
    // cannot be read with read(2) from the thread pool: let Node's stream poll it.
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN" || !options.stdinStream) throw error;
    yield* options.stdinStream();
  }
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
