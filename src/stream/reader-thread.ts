import { Worker } from "node:worker_threads";

/**
 * How the two threads share their state: slots of an Int32Array. Byte counts
 * are kept modulo 2^30, so the difference of two is exact while the ring holds less.
 */
const LAYOUT = {
  slot: { written: 0, consumed: 1, status: 2, readerWaiting: 3, consumerWaiting: 4, go: 5 },
  slots: 6,
  status: { reading: 0, ended: 1, failed: 2 },
  countMask: 2 ** 30 - 1,
} as const;
type Layout = typeof LAYOUT;
const { slot: SLOT, status: STATUS, countMask: COUNT_MASK } = LAYOUT;

/** The reader waits for at least this much room (or a quarter of the ring) before reading again. */
const MIN_READ_BYTES = 64 * 1024;

/**
 * Runs in the thread, from its source text, so it may use only its arguments
 * (`load` is the thread's `require`, passed in so that bundlers leave it
 * alone). Blocking reads land in the ring one after another; the thread waits
 * on the state while the ring is full and wakes the consumer only when that
 * one waits, so a steady copy costs one read(2) a pipe-full and nothing more.
 */
function readIntoRing(
  load: NodeJS.Require,
  layout: Layout,
  fd: number,
  ringMemory: SharedArrayBuffer,
  stateMemory: SharedArrayBuffer,
  minReadBytes: number,
): void {
  const { readSync } = load("node:fs") as typeof import("node:fs");
  const { parentPort } = load("node:worker_threads") as typeof import("node:worker_threads");
  const { slot, status, countMask } = layout;
  const ring = Buffer.from(ringMemory);
  const state = new Int32Array(stateMemory);
  const capacity = ring.length;
  const finish = (value: number) => {
    Atomics.store(state, slot.status, value);
    Atomics.notify(state, slot.written);
  };
  while (Atomics.load(state, slot.go) === 0) Atomics.wait(state, slot.go, 0);
  for (;;) {
    const written = Atomics.load(state, slot.written);
    let consumed = Atomics.load(state, slot.consumed);
    if (capacity - ((written - consumed) & countMask) < minReadBytes) {
      Atomics.store(state, slot.readerWaiting, 1);
      consumed = Atomics.load(state, slot.consumed);
      if (capacity - ((written - consumed) & countMask) < minReadBytes) Atomics.wait(state, slot.consumed, consumed);
      Atomics.store(state, slot.readerWaiting, 0);
      continue;
    }
    const at = written & (capacity - 1);
    const room = Math.min(capacity - ((written - consumed) & countMask), capacity - at);
    let bytesRead: number;
    try {
      bytesRead = readSync(fd, ring, at, room, null);
    } catch (error) {
      const { code, errno, syscall, message } = error as NodeJS.ErrnoException;
      parentPort!.postMessage({ code, errno, syscall, message });
      finish(status.failed);
      return;
    }
    if (bytesRead === 0) {
      finish(status.ended);
      return;
    }
    Atomics.store(state, slot.written, (written + bytesRead) & countMask);
    if (Atomics.load(state, slot.consumerWaiting) === 1) Atomics.notify(state, slot.written);
  }
}

/**
 * Reads a file descriptor in a thread of its own, with plain blocking reads
 * into a ring of shared memory, and hands over what has arrived in views of
 * that ring. Reading in the thread pool costs a hop between threads for every
 * read, and a pipe gives at most 64 KiB a read: at 100 MiB/s that is 1,600
 * hops a second, which cost more CPU than the copying. Here the copy runs
 * like `cat`'s loop, and the threads meet only when one must wait for the other.
 *
 * Starting a thread costs about 0.1 s of CPU, so this pays only for a fast
 * stream: `readSources` starts one for a pipe that gives 32 MiB within a
 * second, reads on in the thread pool until the thread is `ready`, and then
 * lets it `start` where the thread pool stopped.
 *
 * The contract is ReadAhead's: a chunk handed over is a view of the ring, at
 * most `maxChunkBytes`, and the consumer must be done with it when it asks
 * for the next.
 */
export class ReaderThread implements AsyncIterableIterator<Buffer> {
  readonly #ring: Buffer;
  readonly #state: Int32Array;
  readonly #maxChunkBytes: number;
  readonly #minReadBytes: number;
  readonly #worker: Worker;
  /** Settles when the thread stops, with its read error or with why it stopped. */
  readonly #stopped: Promise<Error>;
  #gone = false;
  #started = false;
  /** Resolves when the thread runs, waiting for `start()`. */
  readonly ready: Promise<void>;
  /** Bytes of the last chunk handed over, given back to the ring at the next `next()`. */
  #lent = 0;

  /** `ringBytes` (by default four chunks) is rounded up to a power of two, and to at least two chunks. */
  constructor(fd: number, options: { maxChunkBytes: number; ringBytes?: number }) {
    this.#maxChunkBytes = options.maxChunkBytes;
    const wanted = options.ringBytes ?? 4 * options.maxChunkBytes;
    const ringBytes = 2 ** Math.ceil(Math.log2(Math.max(wanted, 2 * options.maxChunkBytes, 4096)));
    this.#minReadBytes = Math.min(MIN_READ_BYTES, ringBytes / 4);
    const ringMemory = new SharedArrayBuffer(ringBytes);
    const stateMemory = new SharedArrayBuffer(LAYOUT.slots * Int32Array.BYTES_PER_ELEMENT);
    this.#ring = Buffer.from(ringMemory);
    this.#state = new Int32Array(stateMemory);
    const source = `(${readIntoRing.toString()})(require, ${JSON.stringify(LAYOUT)}, ${fd}, ...require("node:worker_threads").workerData, ${this.#minReadBytes})`;
    this.#worker = new Worker(source, {
      eval: true,
      workerData: [ringMemory, stateMemory],
      // stdout and stderr of its own: sharing ours would make descriptor 1 non-blocking.
      stdout: true,
      stderr: true,
      // The loop allocates next to nothing: small heaps keep about 3 MB of memory.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8, stackSizeMb: 1 },
    });
    this.#stopped = new Promise<Error>((resolve) => {
      // A read error comes as a message, which Node delivers before the thread's exit.
      this.#worker.once("message", (error: NodeJS.ErrnoException) => resolve(Object.assign(new Error(error.message), error)));
      this.#worker.once("error", resolve);
      this.#worker.once("exit", (code) => resolve(new Error(`the reading thread stopped with code ${code}`)));
    }).finally(() => (this.#gone = true));
    this.ready = new Promise((resolve, reject) => {
      this.#worker.once("online", resolve);
      void this.#stopped.then(reject);
    });
    this.ready.catch(() => {});
  }

  /** Whether `start()` was called. */
  get started(): boolean {
    return this.#started;
  }

  /** Lets the thread read; nothing is read before. */
  start(): void {
    this.#started = true;
    Atomics.store(this.#state, SLOT.go, 1);
    Atomics.notify(this.#state, SLOT.go);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    if (!this.#started) this.start();
    const state = this.#state;
    this.#giveBack();
    for (;;) {
      const consumed = Atomics.load(state, SLOT.consumed);
      const written = Atomics.load(state, SLOT.written);
      const available = (written - consumed) & COUNT_MASK;
      if (available > 0) {
        const at = consumed & (this.#ring.length - 1);
        const length = Math.min(available, this.#ring.length - at, this.#maxChunkBytes);
        this.#lent = length;
        return { value: this.#ring.subarray(at, at + length), done: false };
      }
      const status = Atomics.load(state, SLOT.status);
      if (status !== STATUS.reading) {
        // The last bytes are counted before the status is set: look once more.
        if (Atomics.load(state, SLOT.written) !== written) continue;
        if (status === STATUS.ended) return { value: undefined, done: true };
        throw await this.#stopped;
      }
      if (this.#gone) throw await this.#stopped;
      Atomics.store(state, SLOT.consumerWaiting, 1);
      if (Atomics.load(state, SLOT.written) === written && Atomics.load(state, SLOT.status) === STATUS.reading) {
        const wait = Atomics.waitAsync(state, SLOT.written, written);
        if (wait.async) await Promise.race([wait.value, this.#stopped]);
      }
      Atomics.store(state, SLOT.consumerWaiting, 0);
    }
  }

  /**
   * Stops early. The thread is let go, not waited for: one blocked in read(2)
   * ends only when that read returns, and must not hold up the caller.
   */
  async return(): Promise<IteratorResult<Buffer>> {
    this.#worker.unref();
    void this.#worker.terminate();
    return { value: undefined, done: true };
  }

  #giveBack(): void {
    if (this.#lent === 0) return;
    const state = this.#state;
    const consumed = (Atomics.load(state, SLOT.consumed) + this.#lent) & COUNT_MASK;
    this.#lent = 0;
    Atomics.store(state, SLOT.consumed, consumed);
    if (Atomics.load(state, SLOT.readerWaiting) !== 1) return;
    const free = this.#ring.length - ((Atomics.load(state, SLOT.written) - consumed) & COUNT_MASK);
    if (free >= this.#minReadBytes) Atomics.notify(state, SLOT.consumed);
  }
}
