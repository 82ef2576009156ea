import { close, open, read, fstatSync, type Stats } from "node:fs";
import { promisify } from "node:util";

const readAsync = promisify(read);
const openAsync = promisify(open);
const closeAsync = promisify(close);

export interface ReadSourcesOptions {
  /** Bytes asked for per read. */
  chunkBytes: number;
  /** Called for a source that cannot be read; reading goes on with the next one, as `cat` does. */
  onError(name: string, error: NodeJS.ErrnoException): void;
  /**
   * Read into two buffers in turn, the next chunk while the consumer handles
   * this one: only for a consumer that is done with each chunk before asking
   * for the next (the CLI's synchronous writes). No allocation per chunk.
   */
  reuseBuffer?: boolean;
  /** Standard input as a Node stream, asked for only if read(2) cannot be used on it. */
  stdinStream?: () => AsyncIterable<Buffer>;
}

/** `-` is standard input, as for cat. */
export const STDIN_NAME = "-";

/**
 * The bytes of each named file in turn (`-` is standard input), read with
 * positional-free `read(2)` into fresh buffers. Nothing is read ahead: the
 * next read starts only when the consumer asks for the next chunk.
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
    yield* readFd(fd, options);
  } finally {
    await closeAsync(fd);
  }
}

async function* readStdin(options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  try {
    yield* readFd(0, options);
  } catch (error) {
    // A non-blocking standard input (a terminal, or a pipe set so by another program)
    // cannot be read with read(2) from the thread pool: let Node's stream poll it.
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN" || !options.stdinStream) throw error;
    yield* options.stdinStream();
  }
}

async function* readFd(fd: number, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  if (options.reuseBuffer) {
    yield* readFdDoubleBuffered(fd, options.chunkBytes);
    return;
  }
  const { chunkBytes } = options;
  let buffer = Buffer.allocUnsafeSlow(chunkBytes);
  for (;;) {
    const { bytesRead } = await readAsync(fd, buffer, 0, chunkBytes, null);
    if (bytesRead === 0) return;
    if (bytesRead < chunkBytes / 4) {
      // A short read (a pipe hands over at most 64 KiB): copy it out and keep the big buffer.
      yield Buffer.from(buffer.subarray(0, bytesRead));
    } else {
      yield buffer.subarray(0, bytesRead);
      buffer = Buffer.allocUnsafeSlow(chunkBytes);
    }
  }
}

async function* readFdDoubleBuffered(fd: number, chunkBytes: number): AsyncGenerator<Buffer> {
  let current = Buffer.allocUnsafeSlow(chunkBytes);
  let spare = Buffer.allocUnsafeSlow(chunkBytes);
  let pending = readAsync(fd, current, 0, chunkBytes, null);
  for (;;) {
    const { bytesRead } = await pending;
    if (bytesRead === 0) return;
    const ready = current;
    [current, spare] = [spare, current];
    // The next read runs in the thread pool while the consumer writes this chunk.
    pending = readAsync(fd, current, 0, chunkBytes, null);
    // Seen when awaited above; this only keeps a consumer that stopped early from an unhandled rejection.
    pending.catch(() => {});
    yield ready.subarray(0, bytesRead);
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
