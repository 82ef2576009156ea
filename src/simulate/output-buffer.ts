import type { Writable } from "node:stream";

/**
 * Collects output text and hands it to a stream in pieces of about 64 KiB,
 * and waits for 'drain' between batches when the reader is slow: per-event
 * output of ten million lines then streams in bounded memory, and the many
 * small strings die young.
 */
export class OutputBuffer {
  #text = "";

  constructor(
    readonly stream: Writable,
    readonly highWaterChars = 1 << 16,
  ) {}

  write(text: string): void {
    this.#text += text;
    if (this.#text.length >= this.highWaterChars) {
      this.stream.write(this.#text);
      this.#text = "";
    }
  }

  /** Waits while the stream holds more than it wants (a slow reader). */
  async maybeFlush(): Promise<void> {
    if (this.stream.writableNeedDrain) await waitForDrain(this.stream);
  }

  async flush(): Promise<void> {
    if (this.#text.length > 0) {
      const text = this.#text;
      this.#text = "";
      if (!this.stream.write(text)) await waitForDrain(this.stream);
    } else if (this.stream.writableNeedDrain) {
      await waitForDrain(this.stream);
    }
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
