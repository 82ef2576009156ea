import { read } from "node:fs";

/**
 * Reads a file descriptor in the background, one read(2) at a time in the
 * thread pool, while the consumer is busy (sleeping for tokens, writing), and
 * hands over everything read so far in one buffer. A pipe gives at most
 * 64 KiB a read: collected this way, a pacer at 100 MiB/s makes one write per
 * slice instead of one sleep per 64 KiB. Reading stops while `limitBytes` are
 * waiting, so memory stays bounded and a slow consumer slows the reading.
 *
 * The consumer must be done with a chunk when it asks for the next (the CLI
 * writes synchronously): its buffer is then read into again, so a long copy
 * allocates nothing.
 */
export class ReadAhead implements AsyncIterableIterator<Buffer> {
  readonly #fd: number;
  readonly #readBytes: number;
  readonly #limitBytes: number;
  #scratch: Buffer;
  /** Full-size buffers handed out whole, free again at the next `next()`. */
  #lent: Buffer[] = [];
  #free: Buffer[] = [];
  #completed: Buffer[] = [];
  #completedBytes = 0;
  #reading = false;
  #ended = false;
  #error: unknown;
  #wake: (() => void) | undefined;

  constructor(fd: number, readBytes: number, limitBytes: number) {
    this.#fd = fd;
    this.#readBytes = readBytes;
    this.#limitBytes = Math.max(limitBytes, readBytes);
    this.#scratch = Buffer.allocUnsafeSlow(readBytes);
    this.#readMore();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    this.#free.push(...this.#lent);
    this.#lent = [];
    for (;;) {
      if (this.#completed.length > 0) {
        const value = this.#take();
        this.#readMore();
        return { value, done: false };
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** A full read as it is; small reads (a pipe's) gathered into one buffer. */
  #take(): Buffer {
    const first = this.#completed[0]!;
    let count = 1;
    if (first.length < this.#readBytes / 4) {
      while (count < this.#completed.length && this.#completed[count]!.length < this.#readBytes / 4) count++;
    }
    const taken = this.#completed.splice(0, count);
    const value = count === 1 ? first : Buffer.concat(taken);
    if (count === 1 && first.buffer.byteLength === this.#readBytes) this.#lent.push(Buffer.from(first.buffer));
    this.#completedBytes -= value.length;
    return value;
  }

  #readMore(): void {
    if (this.#reading || this.#ended || this.#error !== undefined || this.#completedBytes >= this.#limitBytes) return;
    this.#reading = true;
    read(this.#fd, this.#scratch, 0, this.#readBytes, null, (error, bytesRead) => {
      this.#reading = false;
      if (error) this.#error = error;
      else if (bytesRead === 0) this.#ended = true;
      else this.#keep(bytesRead);
      const wake = this.#wake;
      this.#wake = undefined;
      wake?.();
      this.#readMore();
    });
  }

  #keep(bytesRead: number): void {
    if (bytesRead < this.#readBytes / 4) {
      // A short read: copy it out and keep reading into the big buffer.
      this.#completed.push(Buffer.from(this.#scratch.subarray(0, bytesRead)));
    } else {
      this.#completed.push(this.#scratch.subarray(0, bytesRead));
      this.#scratch = this.#free.pop() ?? Buffer.allocUnsafeSlow(this.#readBytes);
    }
    this.#completedBytes += bytesRead;
  }
}
