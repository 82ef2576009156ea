import { OutputLock } from "./output-lock.js";

/** The little of a writable stream that job output needs. */
export interface WritableLike {
  write(chunk: Buffer | string, callback?: (error?: Error | null) => void): boolean;
  once(event: "drain", listener: () => void): unknown;
  on?(event: "error", listener: (error: Error) => void): unknown;
}

export interface OutputSinkOptions {
  /** Lets a progress display clear itself before output and redraw after. */
  aroundWrite?: (write: () => boolean) => boolean;
  /** Shared with the other sink, so a job streaming a long line holds both. */
  lock?: OutputLock;
  /**
   * Refuse output that holds a NUL byte, as binary bound for a terminal (curl refuses
   * it there): the sink fails with code BINARY_OUTPUT, and that output and all after it are lost.
   */
  refuseBinary?: boolean;
  /** The first write that failed (a full disk, a reader gone); later output is counted as lost. */
  onFailure?: (error: NodeJS.ErrnoException) => void;
  /**
   * What follows a job's output that does not end in a newline (see `jobEndedMidLine`):
   * `none` (the default) passes the bytes as they are, as when jobs run one at a time;
   * `between` starts what is written next on a line of its own, so another job's
   * output cannot run into it, and adds nothing when nothing follows;
   * `now` ends the line at once (a progress line is redrawn below the output).
   */
  unfinishedLines?: "none" | "between" | "now";
}

const NEWLINE = 0x0a;
const NEWLINE_BYTE = Buffer.from("\n");

/** The code of the failure a sink that refuses binary output has (see OutputSinkOptions.refuseBinary). */
export const BINARY_OUTPUT = "EBINARY";

/**
 * Where the output of every job goes (standard output, or standard error).
 * Each `write` is one call on the stream, so what is written together stays
 * together: that is how whole lines never mix. When the stream is full,
 * callers pause their source until `whenDrained` calls back; one drain
 * listener serves them all.
 *
 * Once a write fails, the sink takes everything without waiting and counts
 * it as lost (`lostBytes`, `lostLines`), so jobs are never left blocked on
 * output that can no longer go anywhere.
 */
export class OutputSink {
  readonly lock: OutputLock;
  readonly #stream: WritableLike;
  readonly #options: OutputSinkOptions;
  #waiting: Array<() => void> = [];
  #failure: NodeJS.ErrnoException | undefined;
  #lostBytes = 0;
  #lostLines = 0;
  /** The last job's output ended mid-line and nothing has been written since. */
  #midLine = false;

  constructor(stream: WritableLike, options: OutputSinkOptions = {}) {
    this.#stream = stream;
    this.#options = options;
    this.lock = options.lock ?? new OutputLock();
    // A stream that failed also emits 'error'; the write's callback has the facts, this keeps it from being fatal.
    stream.on?.("error", (error) => this.#fail(error as NodeJS.ErrnoException));
  }

  /** The first failed write's error, if any. */
  get failure(): NodeJS.ErrnoException | undefined {
    return this.#failure;
  }

  /** Bytes of job output that could not be written. */
  get lostBytes(): number {
    return this.#lostBytes;
  }

  /** Newlines among the lost bytes: lines, or the ends of lines, that were not written. */
  get lostLines(): number {
    return this.#lostLines;
  }

  /** A job's output on this stream ended without a newline: see OutputSinkOptions.unfinishedLines. */
  jobEndedMidLine(): void {
    const mode = this.#options.unfinishedLines ?? "none";
    if (mode === "now") this.write("\n");
    else this.#midLine = true;
  }

  /** tbucket's own line, on a line of its own even after a job's unfinished one. */
  writeLine(text: string): boolean {
    return this.write(this.startLine() + text);
  }

  /** What a line of tbucket's own written to this stream must start with: a newline after a job's unfinished line, once. */
  startLine(): string {
    const prefix = this.#midLine ? "\n" : "";
    this.#midLine = false;
    return prefix;
  }

  /** Writes the chunk; false when the stream asks the writer to wait for `whenDrained`. */
  write(chunk: Buffer | string): boolean {
    if (chunk.length === 0) return true;
    if (this.#midLine) {
      this.#midLine = false;
      if (this.#options.unfinishedLines === "between") chunk = typeof chunk === "string" ? `\n${chunk}` : Buffer.concat([NEWLINE_BYTE, chunk]);
    }
    if (this.#failure) {
      this.#lose(chunk);
      return true;
    }
    if (this.#options.refuseBinary && (typeof chunk === "string" ? chunk.includes("\0") : chunk.includes(0))) {
      this.#fail(Object.assign(new Error("binary output"), { code: BINARY_OUTPUT }), chunk);
      return true;
    }
    const write = () => this.#stream.write(chunk, (error) => error && this.#fail(error as NodeJS.ErrnoException, chunk));
    const ok = this.#options.aroundWrite ? this.#options.aroundWrite(write) : write();
    return ok || this.#failure !== undefined;
  }

  whenDrained(callback: () => void): void {
    if (this.#failure) {
      callback();
      return;
    }
    this.#waiting.push(callback);
    if (this.#waiting.length > 1) return;
    this.#stream.once("drain", () => this.#wakeWriters());
  }

  #fail(error: NodeJS.ErrnoException, chunk?: Buffer | string): void {
    if (chunk !== undefined) this.#lose(chunk);
    if (this.#failure) return;
    this.#failure = error;
    this.#options.onFailure?.(error);
    this.#wakeWriters();
  }

  #lose(chunk: Buffer | string): void {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    this.#lostBytes += bytes.length;
    for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, at + 1)) this.#lostLines++;
  }

  #wakeWriters(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resume of waiting) resume();
  }
}
