import { close, open, fstatSync, type Stats } from "node:fs";
import { promisify } from "node:util";
import { ReadAhead } from "./read-ahead.js";

const openAsync = promisify(open);
const closeAsync = promisify(close);

export interface ReadSourcesOptions {
  /** Bytes asked for per read(2). */
  readBytes: number;
  /** How much may be read ahead of the consumer; each chunk handed over holds all of it. */
  readAheadBytes: number;
  /** Called for a source that cannot be read; reading goes on with the next one, as `cat` does. */
  onError(name: string, error: NodeJS.ErrnoException): void;
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
      // Standard input is read like any file; libuv waits out a non-blocking one (EAGAIN) itself.
      if (name === STDIN_NAME) yield* new ReadAhead(0, options.readBytes, options.readAheadBytes);
      else yield* readPath(name, options);
    } catch (error) {
      options.onError(name, error as NodeJS.ErrnoException);
    }
  }
}

async function* readPath(path: string, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  const fd = await openAsync(path, "r");
  try {
    yield* new ReadAhead(fd, options.readBytes, options.readAheadBytes);
  } finally {
    await closeAsync(fd);
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
