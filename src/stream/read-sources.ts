import { close, open, fstatSync, readSync, type Stats } from "node:fs";
import { promisify } from "node:util";
import { ReadAhead } from "./read-ahead.js";
import { PipeReadAhead } from "./pipe-read-ahead.js";
import { copiesOntoItself, InputIsOutputError } from "./copy-onto-itself.js";

const openAsync = promisify(open);
const closeAsync = promisify(close);

export interface ReadSourcesOptions {
  /** How much may be read ahead of the consumer; each chunk handed over holds all of it. */
  readAheadBytes: number;
  /** Called for a source that cannot be read; reading goes on with the next one, as `cat` does. */
  onError(name: string, error: NodeJS.ErrnoException): void;
  /** Standard input as a Node stream, asked for only if read(2) cannot be used on it. */
  stdinStream?: () => AsyncIterable<Buffer>;
  /**
   * Where the bytes go: a source that is this descriptor's file, where the
   * copy would never end, is refused with an InputIsOutputError, as cat does.
   */
  outputFd?: number;
}

/** `-` is standard input, as for cat. */
export const STDIN_NAME = "-";

/**
 * The bytes of each named file in turn (`-` is standard input), read ahead of
 * the consumer by at most `readAheadBytes`.
 */
export async function* readSources(names: readonly string[], options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  for (const name of names) {
    try {
      if (name === STDIN_NAME) yield* readStdin(options);
      else yield* readPath(name, options);
    } catch (error) {
      options.onError(name, error as NodeJS.ErrnoException);
    }
  }
}

/**
 * How a descriptor is read:
 * - `inline`: a regular file or a disk, as cat reads it. Its reads never wait
 *   for a writer, and a hop to another thread for each would cost more than the read.
 * - `event-loop`: a pipe or a socket, read ahead by libuv whenever it has data
 *   (PipeReadAhead); reading stays a step ahead of the consumer at no more
 *   cost than cat's blocking reads, and a stalled writer holds up nothing.
 * - `thread-pool`: anything else (a terminal, a character device), read ahead
 *   with read(2) in the thread pool, where a read that waits blocks no one.
 */
type Reading = "inline" | "event-loop" | "thread-pool";

function readingFor(fd: number): Reading {
  const stats = safeFstat(fd);
  if (stats?.isFile() || stats?.isBlockDevice()) return "inline";
  if (stats?.isFIFO() || stats?.isSocket()) return "event-loop";
  return "thread-pool";
}

function chunksOf(fd: number, reading: Reading, readAheadBytes: number): Iterable<Buffer> | AsyncIterable<Buffer> {
  switch (reading) {
    case "inline":
      return readInline(fd, readAheadBytes);
    case "event-loop":
      return new PipeReadAhead(fd, readAheadBytes);
    case "thread-pool":
      return new ReadAhead(fd, readAheadBytes);
  }
}

/** Throws InputIsOutputError when copying `fd` to the output would never end (see copiesOntoItself). */
function refuseCopyOntoItself(fd: number, name: string, options: Pick<ReadSourcesOptions, "outputFd">): void {
  if (options.outputFd !== undefined && copiesOntoItself(fd, options.outputFd)) throw new InputIsOutputError(name);
}

async function* readPath(path: string, options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  const fd = await openAsync(path, "r");
  try {
    refuseCopyOntoItself(fd, path, options);
  } catch (error) {
    await closeAsync(fd);
    throw error;
  }
  const reading = readingFor(fd);
  try {
    yield* chunksOf(fd, reading, options.readAheadBytes);
  } finally {
    // A PipeReadAhead closes what it read.
    if (reading !== "event-loop") await closeAsync(fd);
  }
}

async function* readStdin(options: ReadSourcesOptions): AsyncGenerator<Buffer> {
  refuseCopyOntoItself(0, STDIN_NAME, options);
  try {
    yield* chunksOf(0, readingFor(0), options.readAheadBytes);
  } catch (error) {
    // A non-blocking terminal (set so by another program) cannot be read with
    // read(2) from the thread pool: let Node's stream poll it.
    if ((error as NodeJS.ErrnoException).code !== "EAGAIN" || !options.stdinStream) throw error;
    yield* options.stdinStream();
  }
}

/** An open source, for a copy that moves its bytes without reading them (splice). */
export interface SourceDescriptor {
  name: string;
  fd: number;
}

/**
 * Each named source in turn as an open descriptor (standard input as 0), with
 * readSources' checks: a source that cannot be opened or is the output goes
 * to `onError` and is skipped. A descriptor is closed when the consumer asks
 * for the next.
 */
export async function* sourceDescriptors(names: readonly string[], options: Pick<ReadSourcesOptions, "onError" | "outputFd">): AsyncGenerator<SourceDescriptor> {
  for (const name of names) {
    let fd: number;
    try {
      fd = name === STDIN_NAME ? 0 : await openAsync(name, "r");
      try {
        refuseCopyOntoItself(fd, name, options);
      } catch (error) {
        if (fd !== 0) await closeAsync(fd);
        throw error;
      }
    } catch (error) {
      options.onError(name, error as NodeJS.ErrnoException);
      continue;
    }
    try {
      yield { name, fd };
    } finally {
      if (fd !== 0) await closeAsync(fd);
    }
  }
}

/**
 * The bytes of an open descriptor, which stays open: as readSources reads it,
 * except a pipe, read in the thread pool (PipeReadAhead would close it).
 */
export function readDescriptor(fd: number, readAheadBytes: number): Iterable<Buffer> | AsyncIterable<Buffer> {
  const reading = readingFor(fd);
  return chunksOf(fd, reading === "event-loop" ? "thread-pool" : reading, readAheadBytes);
}

/** Whether a descriptor is a pipe (a FIFO): one side of every splice(2). */
export function isPipe(fd: number): boolean {
  return safeFstat(fd)?.isFIFO() ?? false;
}

/** One buffer at a time, synchronously. */
function* readInline(fd: number, bufferBytes: number): Generator<Buffer> {
  const buffer = Buffer.allocUnsafeSlow(bufferBytes);
  for (;;) {
    const bytesRead = readSync(fd, buffer, 0, bufferBytes, null);
    if (bytesRead === 0) return;
    yield buffer.subarray(0, bytesRead);
  }
}

/** The total size of the named sources when all are regular files; undefined otherwise. */
export function knownTotalBytes(names: readonly string[], statPath: (name: string) => Stats | undefined): number | undefined {
  let total = 0;
  for (const name of names) {
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
