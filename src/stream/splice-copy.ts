import { constants } from "node:os";
import type { NativeIo } from "./native-io.js";
import type { EventLoopTurns } from "./event-loop-turns.js";
import type { Throttle } from "./throttle.js";

/** A pipe empty or full (splice); the end of the input (bytesReadable). */
const { EAGAIN, ENODATA } = constants.errno;

/**
 * How much one splice job moves when unlimited: enough that handing jobs to
 * the thread pool costs nothing next to the copy (4 MiB is 4 to 64 splice(2)
 * calls), little enough that --stats and progress stay current.
 */
const UNLIMITED_JOB_BYTES = 4 * 1024 * 1024;

/** splice(2) cannot move between these two descriptors (neither is a pipe, or a file system without it). */
export class SpliceUnsupported extends Error {}

/**
 * Copies `fdIn` to `fdOut` through the throttle without the bytes ever
 * entering this process: each slice (at most what the input holds) is paid
 * for first, then moved whole in the kernel with splice(2): on this thread
 * while no pipe would block, in the thread pool otherwise, so a blocked side
 * never holds the event loop. Resolves at the end of the input; rejects with the
 * errno error of a failed move, or SpliceUnsupported if the very first move
 * finds splice(2) refused (nothing has moved then: copy another way).
 *
 * `moving.bytes` is what the move under way has moved so far (a signal may end
 * the process in the middle of one). An aborted `signal` rejects with its reason.
 */
export async function spliceThrough(io: NativeIo, fdIn: number, fdOut: number, options: SpliceThroughOptions): Promise<void> {
  const { throttle, moving, onMoved, turns, signal } = options;
  let first = true;
  for (;;) {
    // Pay for what is there to move, as the JavaScript path pays for what it read: a slice
    // granted for the last few bytes of the input would hold them back a slice's time.
    const ready = io.bytesReadable(fdIn);
    if (ready === -ENODATA) return;
    // With nothing there yet, a slice is paid ahead; paused (rate 0), a slice is what is left of
    // the burst, which nothing refills: one byte waits for the input instead, lest an input that
    // then ends early leave the rest paid for and unused.
    const ahead = throttle.limiter.rate === 0 ? 1 : UNLIMITED_JOB_BYTES;
    const granted = await throttle.grant(ready > 0 ? Math.min(ready, UNLIMITED_JOB_BYTES) : ahead, signal);
    if (throttle.lastTakeWaited) turns.mark();
    for (let left = granted; left > 0; ) {
      const pending = spliceOnce(io, fdIn, fdOut, left, moving.counter, first);
      // A move in the thread pool is waited for on the event loop.
      if (pending instanceof Promise) turns.mark();
      const { moved, eof } = await pending;
      first &&= moved === 0;
      moving.counter[0] = 0;
      throttle.sent(moved);
      onMoved(moved);
      if (eof) return;
      left -= moved;
      // Moves that never wait (pipes that keep up) still let signals and progress through.
      await turns.next();
    }
  }
}

export interface SpliceThroughOptions {
  throttle: Throttle;
  /** What the move under way has moved so far. */
  moving: SpliceProgress;
  /** Hears of each move once done. */
  onMoved(bytes: number): void;
  /** Gives the event loop a turn between moves that never wait. */
  turns: EventLoopTurns;
  /** Ends the copy before the next slice, and a wait for tokens under way (a move under way ends first). */
  signal?: AbortSignal;
}

/** What the splice(2) under way has moved so far, written by the thread that moves. */
export class SpliceProgress {
  readonly counter = new Float64Array(1);

  get bytes(): number {
    return this.counter[0]!;
  }
}

/**
 * Moves up to `bytes`: on this thread as far as the pipes allow without
 * waiting, which in a steady copy is all of it; if nothing can move now, in
 * the thread pool, where waiting for a reader or writer blocks no one.
 */
function spliceOnce(io: NativeIo, fdIn: number, fdOut: number, bytes: number, counter: Float64Array, first: boolean): { moved: number; eof: boolean } | Promise<{ moved: number; eof: boolean }> {
  const [moved, negativeErrno, eof] = io.spliceNow(fdIn, fdOut, bytes);
  if (moved > 0 || eof) return { moved, eof };
  if (negativeErrno === -EAGAIN) return spliceInPool(io, fdIn, fdOut, bytes, counter, first);
  const error = errnoError(-negativeErrno);
  if (first && error.code === "EINVAL") throw new SpliceUnsupported(error.message);
  throw error;
}

function spliceInPool(io: NativeIo, fdIn: number, fdOut: number, bytes: number, counter: Float64Array, first: boolean): Promise<{ moved: number; eof: boolean }> {
  return new Promise((resolve, reject) => {
    io.splice(fdIn, fdOut, bytes, counter, (negativeErrno, moved, eof) => {
      if (negativeErrno === 0) return resolve({ moved, eof });
      const error = errnoError(-negativeErrno);
      if (first && moved === 0 && error.code === "EINVAL") return reject(new SpliceUnsupported(error.message));
      // What moved before the failure went out, and counts.
      if (moved > 0) resolve({ moved, eof: false });
      else reject(error);
    });
  });
}

/** Each errno's name (EPIPE for 32), from the system's own table. */
const ERRNO_CODES: Record<number, string> = Object.fromEntries(Object.entries(constants.errno).map(([code, errno]) => [errno, code]));

/** An error shaped as Node's own for a failed system call. */
function errnoError(errno: number): NodeJS.ErrnoException {
  const code = ERRNO_CODES[errno] ?? `E${errno}`;
  const error: NodeJS.ErrnoException = new Error(`${code}: splice failed`);
  error.errno = -errno;
  error.code = code;
  error.syscall = "splice";
  return error;
}
