import { Transform, type TransformCallback, type TransformOptions } from "node:stream";
import type { Clock } from "../core/clock.js";
import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";

/**
 * What one token pays for:
 * - `bytes`: a byte; chunks are sliced anywhere.
 * - `records`: a record (a line, or a NUL-terminated record), whatever its length.
 * - `record-bytes`: a byte, but slices end on record boundaries where they can.
 */
export type CostMode = "bytes" | "records" | "record-bytes";

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
  /** Passed to the underlying Transform. */
  highWaterMark?: number;
}

export interface ThrottleStats {
  bytes: number;
  records: number;
  /** Time spent waiting for tokens. */
  waitedMs: number;
}

const DEFAULT_SLICE_MS = 10;

/**
 * ThrottleStream passes bytes through unchanged, no faster than its bucket
 * allows. It waits for tokens inside `_transform` and calls back only when the
 * whole chunk is out, so the writer upstream is held back (backpressure), and
 * it takes no tokens while the reader downstream is not asking for more.
 * Destroying the stream cancels a pending wait.
 */
export class ThrottleStream extends Transform {
  readonly limiter: Limiter;
  readonly cost: CostMode;
  readonly delimiter: number;
  readonly #sliceMs: number;
  readonly #abort = new AbortController();
  readonly #countRecords: boolean;
  #inRecord = false;
  #readWaiter: (() => void) | undefined;
  #readWanted = true;
  #stats: ThrottleStats = { bytes: 0, records: 0, waitedMs: 0 };

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
    this.cost = options.cost ?? "bytes";
    this.delimiter = options.delimiter ?? 10;
    this.#sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
    this.#countRecords = options.countRecords ?? false;
  }

  /** What has gone through so far. */
  get stats(): Readonly<ThrottleStats> {
    return this.#stats;
  }

  override _read(size: number): void {
    this.#readWanted = true;
    const waiter = this.#readWaiter;
    this.#readWaiter = undefined;
    waiter?.();
    super._read(size);
  }

  override _transform(chunk: Buffer | string, encoding: BufferEncoding, callback: TransformCallback): void {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk, encoding) : chunk;
    this.#pass(buffer).then(
      () => callback(),
      (error: unknown) => callback(this.#abort.signal.aborted ? null : (error as Error)),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#abort.abort();
    this.#readWaiter?.();
    super._destroy(error, callback);
  }

  async #pass(chunk: Buffer): Promise<void> {
    let position = 0;
    while (position < chunk.length) {
      if (this.destroyed) return;
      // Take no tokens for bytes the reader is not ready for.
      if (!this.#readWanted) await new Promise<void>((resolve) => (this.#readWaiter = resolve));
      if (this.destroyed) return;
      const { end, cost } = this.#planSegment(chunk, position);
      const segment = chunk.subarray(position, end);
      const burst = this.limiter.burst;
      if (cost <= burst) {
        await this.#take(cost);
        this.#emit(segment);
      } else {
        // Too costly for the bucket: wait for a full bucket, send, then pay off the debt
        // before anything else goes out, so the long-run rate still holds.
        await this.#take(burst);
        this.#emit(segment);
        for (let owed = cost - burst; owed > 0; owed -= burst) await this.#take(Math.min(owed, burst));
      }
      position = end;
    }
  }

  #emit(segment: Buffer): void {
    this.#stats.bytes += segment.length;
    if (this.cost === "bytes" && this.#countRecords) this.#countRecordStarts(segment);
    if (!this.push(segment)) this.#readWanted = false;
  }

  /** A record starts at the first byte and after every delimiter, like the record modes count. */
  #countRecordStarts(segment: Buffer): void {
    let position = 0;
    while (position < segment.length) {
      if (!this.#inRecord) {
        this.#stats.records++;
        this.#inRecord = true;
      }
      const next = segment.indexOf(this.delimiter, position);
      if (next === -1) break;
      this.#inRecord = false;
      position = next + 1;
    }
  }

  async #take(n: number): Promise<void> {
    if (n <= 0 || this.limiter.rate === Infinity) return;
    const started = performance.now();
    await this.limiter.wait(n, this.#abort.signal);
    this.#stats.waitedMs += performance.now() - started;
  }

  /** Where the next write ends and what it costs. */
  #planSegment(chunk: Buffer, start: number): { end: number; cost: number } {
    const { rate, burst } = this.limiter;
    const unlimited = rate === Infinity;
    const sliceTokens = unlimited ? Infinity : Math.max(1, Math.min(burst, Math.floor((rate * this.#sliceMs) / 1000)));
    switch (this.cost) {
      case "bytes": {
        const end = unlimited ? chunk.length : Math.min(chunk.length, start + sliceTokens);
        return { end, cost: end - start };
      }
      case "records":
        return this.#planRecords(chunk, start, sliceTokens);
      case "record-bytes":
        return this.#planRecordBytes(chunk, start, sliceTokens);
    }
  }

  /** Up to `maxRecords` record starts; the rest of a record already paid for is free. */
  #planRecords(chunk: Buffer, start: number, maxRecords: number): { end: number; cost: number } {
    let position = start;
    let starts = 0;
    while (position < chunk.length) {
      if (!this.#inRecord) {
        if (starts === maxRecords) break;
        starts++;
        this.#inRecord = true;
      }
      const next = chunk.indexOf(this.delimiter, position);
      if (next === -1) {
        position = chunk.length;
        break;
      }
      position = next + 1;
      this.#inRecord = false;
    }
    this.#stats.records += starts;
    return { end: position, cost: starts };
  }

  /** Whole records up to `sliceBytes`; a single longer record goes whole, as far as the chunk holds it. */
  #planRecordBytes(chunk: Buffer, start: number, sliceBytes: number): { end: number; cost: number } {
    const limit = Math.min(chunk.length, start + sliceBytes);
    let end = start;
    let position = start;
    for (;;) {
      const next = chunk.indexOf(this.delimiter, position);
      if (next === -1 || next + 1 > limit) break;
      if (!this.#inRecord) this.#stats.records++;
      this.#inRecord = false;
      end = next + 1;
      position = end;
    }
    if (end === start) {
      // No whole record fits in a slice: send through the end of the first record, or the chunk.
      const next = chunk.indexOf(this.delimiter, start);
      if (!this.#inRecord) this.#stats.records++;
      end = next === -1 ? chunk.length : next + 1;
      this.#inRecord = next === -1;
    }
    return { end, cost: end - start };
  }
}
