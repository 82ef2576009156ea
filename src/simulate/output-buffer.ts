import type { Writable } from "node:stream";

/** The output stream failed (its reader left, its disk is full): `failure` is the stream's own error. */
export class OutputStreamError extends Error {
  readonly code = "EOUTPUT";
  constructor(readonly failure: NodeJS.ErrnoException) {
    super(failure.message);
    this.name = "OutputStreamError";
  }
}

/**
 * Collects output text and hands it to a stream in pieces of about 64 KiB,
 * and waits for 'drain' between batches when the reader is slow: per-event
 * output of ten million lines then streams in bounded memory, and the many
 * small strings die young.
 *
 * A failed write (EPIPE, ENOSPC) is never an unhandled 'error' event: the
 * stream's first error is kept and thrown as an OutputStreamError by the
 * next write or flush, so that a run whose output has nowhere to go stops
 * early; `flush` waits until the last piece is written or has failed.
 */
export class OutputBuffer {
  #text = "";
  #failure: NodeJS.ErrnoException | undefined;

  constructor(
    readonly stream: Writable,
    readonly highWaterChars = 1 << 16,
  ) {
    // Left attached: a write failing after the run must not crash the process either.
    stream.on("error", (error: NodeJS.ErrnoException) => {
      this.#failure ??= error;
    });
  }

  write(text: string): void {
    this.#throwIfFailed();
    this.#text += text;
    if (this.#text.length >= this.highWaterChars) {
      this.stream.write(this.#text);
      this.#text = "";
    }
  }

  /** Waits while the stream holds more than it wants (a slow reader). */
  async maybeFlush(): Promise<void> {
    this.#throwIfFailed();
    if (this.stream.writableNeedDrain) await this.#waitForDrain();
  }

  /** Writes what is held and waits until the stream has taken it, or throws why it could not. */
  async flush(): Promise<void> {
    this.#throwIfFailed();
    const text = this.#text;
    this.#text = "";
    await new Promise<void>((resolve) => {
      this.stream.write(text, (error) => {
        if (error) this.#failure ??= error;
        resolve();
      });
    });
    this.#throwIfFailed();
  }

  #throwIfFailed(): void {
    if (this.#failure) throw new OutputStreamError(this.#failure);
  }

  #waitForDrain(): Promise<void> {
    const stream = this.stream;
    return new Promise((resolve, reject) => {
      const done = () => {
        stream.off("drain", done);
        stream.off("error", done);
        stream.off("close", done);
        if (this.#failure) reject(new OutputStreamError(this.#failure));
        else resolve();
      };
      stream.on("drain", done);
      stream.on("error", done);
      stream.on("close", done);
    });
  }
}
