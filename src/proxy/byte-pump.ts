import type { Socket } from "node:net";
import type { Limiter } from "../core/limiter.js";
import { Throttle } from "../stream/throttle.js";

export interface BytePumpOptions {
  source: Socket;
  target: Socket;
  /** The bucket this direction pays into; undefined: unlimited. */
  limiter: Limiter | undefined;
  /** Told of every slice written to the target. */
  onBytes(bytes: number): void;
  /** Aborted when the connection is torn down: a wait for tokens or for a drain ends. */
  signal: AbortSignal;
  /** The bucket failed (its store was lost, and no private bucket took over): the connection must go. */
  onFailure(error: unknown): void;
}

/**
 * BytePump moves one direction of a TCP connection, from `source` to
 * `target`, paying for each slice before writing it. While it pays or the
 * target is full it stops reading the source (`pause`), so the kernel's
 * buffers fill and TCP flow control slows the sender: no more than the chunk
 * of one read is ever held here. When the source ends, the target is ended
 * after the last slice (a half-close passes through).
 */
export class BytePump {
  readonly #source: Socket;
  readonly #target: Socket;
  readonly #throttle: Throttle | undefined;
  readonly #onBytes: (bytes: number) => void;
  readonly #signal: AbortSignal;
  readonly #onFailure: (error: unknown) => void;
  #busy = false;
  #ended = false;

  constructor(options: BytePumpOptions) {
    this.#source = options.source;
    this.#target = options.target;
    this.#throttle = options.limiter ? new Throttle({ limiter: options.limiter }) : undefined;
    this.#onBytes = options.onBytes;
    this.#signal = options.signal;
    this.#onFailure = options.onFailure;
  }

  /** True while a chunk is being paid for or written: the connection is not idle. */
  get busy(): boolean {
    return this.#busy;
  }

  /** Starts reading the source. */
  start(): void {
    this.#source.on("data", this.#onData);
    // A source read while its connection was held may have ended before the pump came: its 'end' has passed.
    if (this.#source.readableEnded) this.#onEnd();
    else this.#source.on("end", this.#onEnd);
    this.#source.resume();
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#source.pause();
    this.#busy = true;
    const done = () => {
      this.#busy = false;
      if (this.#signal.aborted) return;
      if (this.#ended) this.#target.end();
      else this.#source.resume();
    };
    const passing = this.#throttle ? this.#throttle.pass(chunk, this.#write, this.#signal) : this.#write(chunk);
    // After the connection's teardown (aborted) nothing is left to do.
    if (passing) passing.then(done, (error: unknown) => this.#signal.aborted || this.#onFailure(error));
    else done();
  };

  readonly #onEnd = (): void => {
    this.#ended = true;
    if (!this.#busy && !this.#signal.aborted) this.#target.end();
  };

  /** Writes a paid slice; when the target's buffer is full, holds the next one until it drains. */
  readonly #write = (slice: Buffer): Promise<void> | undefined => {
    if (this.#signal.aborted || this.#target.destroyed) return Promise.reject(new Error("connection closed"));
    this.#onBytes(slice.length);
    if (this.#target.write(slice)) return undefined;
    return new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        this.#target.off("drain", onDrain);
        this.#signal.removeEventListener("abort", onAbort);
        if (error) reject(error);
        else resolve();
      };
      const onDrain = () => finish();
      const onAbort = () => finish(new Error("connection closed"));
      this.#target.on("drain", onDrain);
      this.#signal.addEventListener("abort", onAbort);
    });
  };
}
