/** The little of a writable stream that job output needs. */
export interface WritableLike {
  write(chunk: Buffer | string): boolean;
  once(event: "drain", listener: () => void): unknown;
}

/**
 * Where the output of every job goes (standard output, or standard error).
 * Each `write` is one call on the stream, so what is written together stays
 * together: that is how whole lines never mix. When the stream is full,
 * callers pause their source until `whenDrained` calls back; one drain
 * listener serves them all.
 */
export class OutputSink {
  readonly #stream: WritableLike;
  readonly #aroundWrite: ((write: () => boolean) => boolean) | undefined;
  #waiting: Array<() => void> = [];

  /** `aroundWrite` lets a progress display clear itself before output and redraw after. */
  constructor(stream: WritableLike, aroundWrite?: (write: () => boolean) => boolean) {
    this.#stream = stream;
    this.#aroundWrite = aroundWrite;
  }

  /** Writes the chunk; false when the stream asks the writer to wait for `whenDrained`. */
  write(chunk: Buffer | string): boolean {
    if (chunk.length === 0) return true;
    const write = () => this.#stream.write(chunk);
    return this.#aroundWrite ? this.#aroundWrite(write) : write();
  }

  whenDrained(callback: () => void): void {
    this.#waiting.push(callback);
    if (this.#waiting.length > 1) return;
    this.#stream.once("drain", () => {
      const waiting = this.#waiting;
      this.#waiting = [];
      for (const resume of waiting) resume();
    });
  }
}
