import { type OnReadOpts, Socket, type SocketConstructorOpts } from "node:net";

/**
 * Reads a pipe or a socket ahead of the consumer on the event loop itself:
 * libuv reads straight into our buffers whenever the pipe has data, and stops
 * while they are full. No thread hands anything over, so a steady copy costs
 * about what `cat`'s loop costs: one wake-up and one read(2) a pipe-full.
 *
 * Reads land one after another in two buffers of `bufferBytes`, used in turn,
 * and a chunk handed over is a view of one of them. As with ReadAhead, the
 * consumer must be done with a chunk when it asks for the next: reading goes
 * back into a buffer only once everything in it has been handed over and let go.
 *
 * Reading this way makes the descriptor non-blocking, as `process.stdin` does
 * for a pipe; Node.js puts standard input's flags back when it exits.
 */
export class PipeReadAhead implements AsyncIterableIterator<Buffer> {
  readonly #buffers: [Buffer, Buffer];
  readonly #bufferBytes: number;
  readonly #socket: Socket;
  /**
   * Positions in the endless sequence of bytes read, buffer after buffer:
   * `#written` is read up to, `#handedOver` handed over up to, and
   * `#released` let go of up to (the consumer asked for more after it).
   */
  #written = 0;
  #handedOver = 0;
  #released = 0;
  #paused = false;
  #ended = false;
  #error: Error | undefined;
  #wake: (() => void) | undefined;

  constructor(fd: number, bufferBytes: number) {
    this.#bufferBytes = bufferBytes;
    this.#buffers = [Buffer.allocUnsafeSlow(bufferBytes), Buffer.allocUnsafeSlow(bufferBytes)];
    // `onread` is taken by the constructor too, though only connect()'s options declare it.
    const options: SocketConstructorOpts & { onread: OnReadOpts } = {
      fd,
      readable: true,
      writable: false,
      // The read side ending must not shut down a write side this never uses.
      allowHalfOpen: true,
      onread: { buffer: () => this.#readRoom(), callback: (bytesRead) => this.#onRead(bytesRead) },
    };
    this.#socket = new Socket(options);
    this.#socket.on("end", () => this.#finish());
    this.#socket.on("error", (error) => this.#finish(error));
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<Buffer>> {
    this.#release();
    for (;;) {
      if (this.#written > this.#handedOver) {
        const start = this.#handedOver;
        const offset = start % this.#bufferBytes;
        const end = Math.min(this.#written, start - offset + this.#bufferBytes);
        this.#handedOver = end;
        return { value: this.#bufferAt(start).subarray(offset, offset + end - start), done: false };
      }
      if (this.#error) throw this.#error;
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  /** Stops reading and closes the descriptor. */
  async return(): Promise<IteratorResult<Buffer>> {
    this.#socket.destroy();
    return { value: undefined, done: true };
  }

  /** The consumer asked for more: whatever was handed over is free again, and reading may go on. */
  #release(): void {
    this.#released = this.#handedOver;
    if (this.#paused && this.#mayFillNextBuffer()) {
      this.#paused = false;
      this.#socket.resume();
    }
  }

  /** Where the next read lands: the rest of the buffer being filled, or the other buffer. */
  #readRoom(): Buffer {
    const offset = this.#written % this.#bufferBytes;
    return this.#bufferAt(this.#written).subarray(offset);
  }

  /** Counts a read; returning false stops reading until the next buffer is free. */
  #onRead(bytesRead: number): boolean {
    this.#written += bytesRead;
    this.#wakeConsumer();
    if (this.#written % this.#bufferBytes !== 0 || this.#mayFillNextBuffer()) return true;
    this.#paused = true;
    return false;
  }

  /** At a buffer's end: the next one may be filled once the consumer has let go of all it held there. */
  #mayFillNextBuffer(): boolean {
    return this.#released >= this.#written - this.#bufferBytes;
  }

  #bufferAt(position: number): Buffer {
    return this.#buffers[Math.floor(position / this.#bufferBytes) % 2]!;
  }

  #finish(error?: Error): void {
    this.#ended = true;
    // Reading is over: close the descriptor now (libuv never closes standard input's).
    this.#socket.destroy();
    this.#error ??= error;
    this.#wakeConsumer();
  }

  #wakeConsumer(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
