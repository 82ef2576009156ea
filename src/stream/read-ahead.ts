import { read } from "node:fs";

/**
 * Reads a file descriptor in the background, one read(2) at a time in the
 * thread pool, while the consumer is busy (sleeping for tokens, writing), and
 * hands over everything read so far in one buffer. This is for descriptors
 * libuv cannot poll (a terminal, a character device), where a read may wait
 * for input. Reading pauses while a full buffer is waiting, so memory stays
 * bounded and a slow consumer slows the reading.
 *
 * Reads land one after another in a buffer of `bufferBytes`; a chunk handed over
 * is a view of it. The consumer must be done with a chunk when it asks for the
 * next (the CLI writes synchronously): a full buffer is then read into again,
 * so a long copy allocates nothing.
 */
export class ReadAhead implements AsyncIterableIterator<Buffer> {
  readonly #fd: number;
  readonly #bufferBytes: number;
  #buffer: Buffer;
  /** Handed over up to here. */
  #taken = 0;
  /** Read up to here. */
  #filled = 0;
  /** Full buffers whose last chunk the consumer may still hold, free at the next `next()`. */
  #retired: Buffer[] = [];
  #free: Buffer[] = [];
  #reading = false;
  #ended = false;
  #error: unknown;
  #wake: (() => void) | undefined;

  constructor(fd: number, bufferBytes: number) {
    this.#fd = fd;
    this.#bufferBytes = bufferBytes;
    this.#buffer = Buffer.allocUnsafeSlow(bufferBytes);
    this.#readMore();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    this.#free.push(...this.#retired);
    this.#retired = [];
    for (;;) {
      if (this.#filled > this.#taken) {
        const value = this.#buffer.subarray(this.#taken, this.#filled);
        this.#taken = this.#filled;
        this.#readMore();
        return { value, done: false };
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return { value: undefined, done: true };
      this.#readMore();
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  #readMore(): void {
    if (this.#reading || this.#ended || this.#error !== undefined) return;
    if (this.#filled === this.#bufferBytes) {
      // Full: once all of it is handed over, go on in another buffer.
      if (this.#taken < this.#filled) return;
      this.#retired.push(this.#buffer);
      this.#buffer = this.#free.pop() ?? Buffer.allocUnsafeSlow(this.#bufferBytes);
      this.#taken = 0;
      this.#filled = 0;
    }
    this.#reading = true;
    const buffer = this.#buffer;
    read(this.#fd, buffer, this.#filled, this.#bufferBytes - this.#filled, null, (error, bytesRead) => {
      this.#reading = false;
      if (error) this.#error = error;
      else if (bytesRead === 0) this.#ended = true;
      else this.#filled += bytesRead;
      const wake = this.#wake;
      this.#wake = undefined;
      wake?.();
      this.#readMore();
    });
  }
}
