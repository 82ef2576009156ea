import { writeSync } from "node:fs";
import type { Emit } from "./throttle.js";

/** How long to wait before trying a full non-blocking descriptor again. */
const RETRY_MS = 1;

/**
 * An Emit that writes each slice whole to a file descriptor with write(2).
 * A blocking descriptor (a file, or a pipe or terminal as the shell hands
 * them over) blocks while the reader is slow: that is the backpressure, and
 * the slice's buffer is free again as soon as the call returns. A descriptor
 * that some other program made non-blocking answers EAGAIN when full; then
 * the rest is retried after a short timer rather than spinning.
 * `onWritten` hears of every byte the descriptor took, so that a failed
 * write can say how far it got.
 */
export function createFdWriter(fd: number, onWritten?: (bytes: number) => void): Emit {
  const write = (segment: Buffer, from: number): void | Promise<void> => {
    let offset = from;
    while (offset < segment.length) {
      try {
        const written = writeSync(fd, segment, offset, segment.length - offset);
        offset += written;
        onWritten?.(written);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") throw error;
        const resumeAt = offset;
        return new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS)).then(() => write(segment, resumeAt));
      }
    }
  };
  return (segment) => write(segment, 0);
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
