import { fstatSync, statSync, write, writeSync } from "node:fs";
import type { Emit } from "./throttle.js";

/** How long to wait before trying a full non-blocking descriptor again. */
const RETRY_MS = 1;

/** An Emit to a file descriptor, which can tell whether a write is under way in the thread pool. */
export interface FdWriter extends Emit {
  /** Resolves when the write under way in the thread pool is done (or failed); undefined when none is. */
  inFlight(): Promise<void> | undefined;
  /** Starts no more writes: each one asked for from now on waits for ever (the process is ending). */
  hold(): void;
}

/**
 * An Emit that writes each slice whole to a file descriptor with write(2).
 *
 * A pipe, a terminal or a socket is written from Node's thread pool: a blocking
 * descriptor (as the shell hands them over) blocks there while the reader is
 * slow or stalled, which is the backpressure, and the event loop stays free to
 * handle Ctrl-C, SIGTERM and the progress line meanwhile. A regular file or a
 * disk (or /dev/null) never waits for a reader, and a hop to another thread
 * for each write would cost more than the write: those are written inline.
 *
 * A descriptor that some other program made non-blocking answers EAGAIN when
 * full; then the rest is retried after a short timer rather than spinning.
 * `onWritten` hears of every byte the descriptor took, so that a failed write
 * can say how far it got.
 */
export function createFdWriter(fd: number, onWritten?: (bytes: number) => void): FdWriter {
  const inline = writesWithoutWaiting(fd);
  const written = (bytes: number): void => onWritten?.(bytes);
  const retryLater = (segment: Buffer, from: number): Promise<void> =>
    new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS)).then(() => writeFrom(segment, from));

  const writeFrom = (segment: Buffer, from: number): void | Promise<void> => {
    if (!inline) return writeInPool(segment, from);
    let offset = from;
    while (offset < segment.length) {
      try {
        const bytes = writeSync(fd, segment, offset, segment.length - offset);
        offset += bytes;
        written(bytes);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        return retryLater(segment, offset);
      }
    }
  };

  let inFlight: Promise<void> | undefined;
  const writeInPool = (segment: Buffer, from: number): Promise<void> => {
    const writing = writeOnceInPool(segment, from);
    const done = writing.then(
      () => undefined,
      () => undefined,
    );
    inFlight = done;
    void done.then(() => {
      if (inFlight === done) inFlight = undefined;
    });
    return writing;
  };

  const writeOnceInPool = (segment: Buffer, from: number): Promise<void> =>
    new Promise<number>((resolve, reject) => {
      write(fd, segment, from, segment.length - from, null, (error, bytes) => (error ? reject(error) : resolve(bytes)));
    }).then(
      (bytes) => {
        written(bytes);
        const offset = from + bytes;
        if (offset < segment.length) return writeInPool(segment, offset);
      },
      (error: NodeJS.ErrnoException) => {
        if (error.code !== "EAGAIN") throw error;
        return retryLater(segment, from);
      },
    );

  let held = false;
  const emit = (segment: Buffer) => (held ? new Promise<void>(() => {}) : writeFrom(segment, 0));
  return Object.assign(emit, {
    inFlight: () => inFlight,
    hold: () => {
      held = true;
    },
  });
}

/** A regular file, a block device or /dev/null: a write never waits for a reader. */
export function writesWithoutWaiting(fd: number): boolean {
  try {
    const stats = fstatSync(fd);
    return stats.isFile() || stats.isBlockDevice() || (stats.isCharacterDevice() && stats.rdev === devNullRdev());
  } catch {
    return false;
  }
}

function devNullRdev(): number | undefined {
  try {
    return statSync("/dev/null").rdev;
  } catch {
    return undefined;
  }
}

/**
 * Writes all of `bytes` to a file descriptor before returning, for short
 * output (help, a report) that must be out or have failed when the call
 * returns. A non-blocking descriptor that is full is waited out in short sleeps.
 */
export function writeAllSync(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
      Atomics.wait(SLEEPER, 0, 0, RETRY_MS);
    }
  }
}

const SLEEPER = new Int32Array(new SharedArrayBuffer(4));
