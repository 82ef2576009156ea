import type { OutputSink } from "./output-sink.js";

/**
 * How a job's output reaches the terminal:
 * - `line`: whole lines as they come; lines of two jobs never mix.
 * - `group`: all of a job's output at once when it ends.
 * - `raw`: the job writes to our standard output and error directly.
 */
export type OutputMode = "line" | "group" | "raw";

/**
 * An unfinished line is held until it is this long; past that it is streamed
 * through while its job holds the output lock, so a line stays whole however
 * long it is and a job holds at most this much (plus one chunk read) per stream.
 */
export const MAX_HELD_LINE_BYTES = 64 * 1024;

const NEWLINE = 0x0a;

/** The output of one stream (stdout or stderr) of one job. */
export interface StreamCollector {
  /** Takes a chunk; false when the source should pause until `resume` is called. */
  push(chunk: Buffer, resume: () => void): boolean;
  /** The job ended: pass on what is left; resolves once it is all written or queued. */
  end(): Promise<void>;
}

/** Puts `tag` before every line of `text`. */
function tagLines(text: Buffer, tag: string): Buffer {
  const parts: Buffer[] = [];
  const prefix = Buffer.from(tag);
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf(NEWLINE, start);
    const end = newline === -1 ? text.length : newline + 1;
    parts.push(prefix, text.subarray(start, end));
    start = end;
  }
  return Buffer.concat(parts);
}

/**
 * Line mode: writes each run of complete lines in one call and holds the
 * unfinished last line back until its newline arrives. A line that grows past
 * MAX_HELD_LINE_BYTES is written as it comes, its tag first, while this job
 * holds the sink's lock; other jobs pause until its newline. At the end an
 * unfinished line is written as it is, and the sink decides whether what
 * follows needs a newline first (OutputSink's `unfinishedLines`).
 */
export class LineCollector implements StreamCollector {
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** In the middle of a long line: this job holds the lock until the line's newline. */
  #streaming = false;
  /** A chunk that came while another job held the lock; its source is paused meanwhile. */
  #pending: { chunk: Buffer; resume: () => void } | undefined;

  /** `owner` names the job; its two streams share it, so one can write while the other holds the lock. */
  constructor(
    private readonly sink: OutputSink,
    private readonly tag: string | undefined,
    private readonly owner: object = {},
  ) {}

  push(chunk: Buffer, resume: () => void): boolean {
    if (this.#pending) {
      // A drain woke the source before the lock came free: keep the order, wait on.
      this.#pending.chunk = Buffer.concat([this.#pending.chunk, chunk]);
      return false;
    }
    if (!this.sink.lock.isFreeFor(this.owner)) {
      // Copy: the chunk's memory may be reused by the stream.
      this.#pending = { chunk: Buffer.from(chunk), resume };
      this.sink.lock.whenFree(() => this.#retryPending());
      return false;
    }
    if (this.#streaming) return this.#continueLine(chunk, resume);
    const lastNewline = chunk.lastIndexOf(NEWLINE);
    if (lastNewline === -1) {
      this.#hold(chunk);
      return this.#heldBytes < MAX_HELD_LINE_BYTES || this.#startStreaming(resume);
    }
    const complete = this.#take(chunk.subarray(0, lastNewline + 1));
    let ok = this.#write(this.tag === undefined ? complete : tagLines(complete, this.tag), resume);
    if (lastNewline + 1 < chunk.length) {
      this.#hold(chunk.subarray(lastNewline + 1));
      if (this.#heldBytes >= MAX_HELD_LINE_BYTES) ok = this.#startStreaming(resume) && ok;
    }
    return ok;
  }

  end(): Promise<void> {
    return new Promise((resolve) => this.#finish(resolve));
  }

  #finish(done: () => void): void {
    if (this.#pending || !this.sink.lock.isFreeFor(this.owner)) {
      this.sink.lock.whenFree(() => {
        this.#retryPending();
        this.#finish(done);
      });
      return;
    }
    if (this.#streaming) {
      // Before the lock is free: the next job's output must see the line as unfinished.
      this.sink.jobEndedMidLine();
      this.#endLine();
    } else if (this.#heldBytes > 0) {
      const rest = this.#take();
      this.sink.write(this.tag === undefined ? rest : tagLines(rest, this.tag));
      this.sink.jobEndedMidLine();
    }
    done();
  }

  #retryPending(): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = undefined;
    if (this.push(pending.chunk, pending.resume)) pending.resume();
  }

  /** The held line is too long to hold: take the lock and write it as it comes. */
  #startStreaming(resume: () => void): boolean {
    this.sink.lock.take(this.owner);
    this.#streaming = true;
    const start = this.#take();
    return this.#write(this.tag === undefined ? start : Buffer.concat([Buffer.from(this.tag), start]), resume);
  }

  #continueLine(chunk: Buffer, resume: () => void): boolean {
    const newline = chunk.indexOf(NEWLINE);
    if (newline === -1) return this.#write(chunk, resume);
    const ok = this.#write(chunk.subarray(0, newline + 1), resume);
    this.#endLine();
    if (newline + 1 === chunk.length) return ok;
    // The rest is new lines, taken like any chunk: another job may have the lock first.
    return this.push(chunk.subarray(newline + 1), resume) && ok;
  }

  #endLine(): void {
    this.#streaming = false;
    this.sink.lock.release(this.owner);
  }

  #hold(chunk: Buffer): void {
    // Copy: the chunk's memory may be reused by the stream.
    this.#held.push(Buffer.from(chunk));
    this.#heldBytes += chunk.length;
  }

  #take(tail?: Buffer): Buffer {
    const parts = tail ? [...this.#held, tail] : this.#held;
    this.#held = [];
    this.#heldBytes = 0;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  #write(text: Buffer, resume: () => void): boolean {
    const ok = this.sink.write(text);
    if (!ok) this.sink.whenDrained(resume);
    return ok;
  }
}

/**
 * Group mode: keeps everything, writes it in one call when the job ends.
 * Untagged, the bytes are passed on exactly as the job wrote them. This holds
 * a job's whole output in memory: that is what the mode is for.
 */
export class GroupCollector implements StreamCollector {
  #parts: Buffer[] = [];

  constructor(
    private readonly sink: OutputSink,
    private readonly tag: string | undefined,
  ) {}

  push(chunk: Buffer): boolean {
    this.#parts.push(Buffer.from(chunk));
    return true;
  }

  async end(): Promise<void> {
    if (this.#parts.length === 0) return;
    const text = Buffer.concat(this.#parts);
    this.#parts = [];
    if (this.tag === undefined) {
      this.sink.write(text);
      return;
    }
    this.sink.write(tagLines(text, this.tag));
    // Tagged output is lines: the next job's tag must not run into an unfinished last one.
    if (text[text.length - 1] !== NEWLINE) this.sink.jobEndedMidLine();
  }
}

/** The collector for one stream of one job, per mode; none in raw mode (the job writes directly). */
export function createCollector(mode: OutputMode, sink: OutputSink, tag: string | undefined, owner?: object): StreamCollector | undefined {
  if (mode === "line") return new LineCollector(sink, tag, owner);
  if (mode === "group") return new GroupCollector(sink, tag);
  return undefined;
}
