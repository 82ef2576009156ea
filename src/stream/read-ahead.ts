import { read } from "node:fs";

/**
 * Reads a file descriptor in the background, one read(2) at a time in the
 * thread pool, while the consumer is busy (sleeping for tokens, writing), and
 * hands over everything read so far in one buffer. A pipe gives at most
 * 64 KiB a read: collected this way, a pacer at 100 MiB/s makes one write per
 * slice instead of one sleep per 64 KiB. Reading stops while `limitBytes` are
 * waiting, so memory stays bounded and a slow consumer slows the reading.
 */
export class ReadAhead implements AsyncIterableIterator<Buffer> {
  readonly #fd: number;
  readonly #readBytes: number;
  readonly #limitBytes: number;
  #scratch: Buffer;
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
    for (;;) {
      if (this.#completed.length > 0) {
        const value = this.#completed.length === 1 ? this.#completed[0]! : Buffer.concat(this.#completed, this.#completedBytes);
        this.#completed = [];
        this.#completedBytes = 0;
        this.#readMore();
        return { value, done: false };
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
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
      this.#scratch = Buffer.allocUnsafeSlow(this.#readBytes);
    }
    this.#completedBytes += bytesRead;
  }
}
