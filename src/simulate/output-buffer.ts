import type { Writable } from "node:stream";

/**
 * Collects output text and hands it to a stream in large pieces, waiting for
 * 'drain' when the stream is full: per-event output of ten million lines
 * then streams in constant memory instead of piling up in the stream.
 */
export class OutputBuffer {
  #parts: string[] = [];
  #length = 0;

  constructor(
    readonly stream: Writable,
    readonly highWaterChars = 1 << 16,
  ) {}

  write(text: string): void {
    this.#parts.push(text);
    this.#length += text.length;
  }

  /** Writes out what is buffered once it is large, waiting while the stream is full. */
  async maybeFlush(): Promise<void> {
    if (this.#length >= this.highWaterChars) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.#length === 0) return;
    const text = this.#parts.join("");
    this.#parts = [];
    this.#length = 0;
    if (!this.stream.write(text)) await waitForDrain(this.stream);
  }
}

function waitForDrain(stream: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      stream.off("drain", onDrain);
      stream.off("error", done);
      stream.off("close", onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done();
    stream.on("drain", onDrain);
    stream.on("error", done);
    stream.on("close", onClose);
  });
}
