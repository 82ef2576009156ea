import { Transform, type TransformCallback, type TransformOptions } from "node:stream";
import type { Clock } from "../core/clock.js";
import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";
import { type CostMode, Throttle, type ThrottleStats } from "./throttle.js";

export type { CostMode, ThrottleStats } from "./throttle.js";

export interface ThrottleStreamOptions {
  /** The bucket to draw from; or give `rate` and `burst` for a private one. */
  limiter?: Limiter;
  rate?: number;
  burst?: number;
  clock?: Clock;
  cost?: CostMode;
  /** The byte that ends a record: `\n` (10) by default, 0 for NUL. */
  delimiter?: number;
  /** How much time one output write represents at the full rate; smaller is smoother. */
  sliceMs?: number;
  /** In `bytes` mode, count records too (for statistics); record modes always count. */
  countRecords?: boolean;
  /**
   * In `record-bytes` mode with a `LimitSetLimiter` that limits lines as
   * well as bytes: the most lines one slice may hold, `limiter.mostAtOnce("count")`.
   * Each slice then pays its lines too; without it only bytes are paid.
   */
  recordsAtOnce?: number;
  /** Passed to the underlying Transform. */
  highWaterMark?: number;
}

/**
 * ThrottleStream passes bytes through unchanged, no faster than its bucket
 * allows. It waits for tokens inside `_transform` and calls back only when the
 * whole chunk is out, so the writer upstream is held back (backpressure), and
 * it takes no tokens while the reader downstream is not asking for more.
 * Destroying the stream cancels a pending wait.
 */
export class ThrottleStream extends Transform {
  readonly limiter: Limiter;
  readonly #throttle: Throttle;
  readonly #abort = new AbortController();
  #readWaiter: (() => void) | undefined;

  constructor(options: ThrottleStreamOptions) {
    const transformOptions: TransformOptions = {};
    if (options.highWaterMark !== undefined) transformOptions.highWaterMark = options.highWaterMark;
    super(transformOptions);
    if (options.limiter) {
      this.limiter = options.limiter;
    } else {
      if (options.rate === undefined || options.burst === undefined) {
        throw new TypeError("Expected `limiter`, or both `rate` and `burst`");
      }
      this.limiter = new TokenBucket({ rate: options.rate, burst: options.burst, clock: options.clock });
    }
    this.#throttle = new Throttle({ ...options, limiter: this.limiter });
  }

  /** What has gone through so far. */
  get stats(): Readonly<ThrottleStats> {
    return this.#throttle.stats;
  }

  override _read(size: number): void {
    const waiter = this.#readWaiter;
    this.#readWaiter = undefined;
    waiter?.();
    super._read(size);
  }

  override _transform(chunk: Buffer | string, encoding: BufferEncoding, callback: TransformCallback): void {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk;
    this.#throttle.pass(buffer, this.#emit, this.#abort.signal).then(
      () => callback(),
      (error: unknown) => callback(this.#abort.signal.aborted ? null : (error as Error)),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#abort.abort();
    this.#readWaiter?.();
    super._destroy(error, callback);
  }

  /** Pushes a paid slice; when the reader has enough, holds the next take until it asks for more. */
  readonly #emit = (segment: Buffer): Promise<void> | undefined => {
    if (this.destroyed || this.push(segment)) return undefined;
    return new Promise<void>((resolve) => (this.#readWaiter = resolve));
  };
}
