import type { OutputSink } from "./output-sink.js";

/**
 * How a job's output reaches the terminal:
 * - `line`: whole lines as they come; lines of two jobs never mix.
 * - `group`: all of a job's output at once when it ends.
 * - `raw`: the job writes to our standard output and error directly.
 */
export type OutputMode = "line" | "group" | "raw";

/** A line longer than this is passed on in pieces rather than held without bound. */
export const MAX_HELD_LINE_BYTES = 1024 * 1024;

const NEWLINE = 0x0a;

/** The output of one stream (stdout or stderr) of one job. */
export interface StreamCollector {
  /** Takes a chunk; false when the source should pause until `resume` is called. */
  push(chunk: Buffer, resume: () => void): boolean;
  /** The job ended: pass on what is left. */
  end(): void;
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
 * unfinished last line back until its newline arrives. At the end an
 * unfinished line gets a newline, so the next job's output cannot run into it.
 */
export class LineCollector implements StreamCollector {
  #held: Buffer[] = [];
  #heldBytes = 0;

  constructor(
    private readonly sink: OutputSink,
    private readonly tag: string | undefined,
  ) {}

  push(chunk: Buffer, resume: () => void): boolean {
    const lastNewline = chunk.lastIndexOf(NEWLINE);
    if (lastNewline === -1) {
      this.#hold(chunk);
      if (this.#heldBytes < MAX_HELD_LINE_BYTES) return true;
      return this.#write(this.#take(), resume);
    }
    const complete = this.#take(chunk.subarray(0, lastNewline + 1));
    if (lastNewline + 1 < chunk.length) this.#hold(chunk.subarray(lastNewline + 1));
    return this.#write(complete, resume);
  }

  end(): void {
    if (this.#heldBytes === 0) return;
    this.#write(Buffer.concat([this.#take(), Buffer.from("\n")]), () => {});
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
    const ok = this.sink.write(this.tag === undefined ? text : tagLines(text, this.tag));
    if (!ok) this.sink.whenDrained(resume);
    return ok;
  }
}

/**
 * Group mode: keeps everything, writes it in one call when the job ends.
 * Untagged, the bytes are passed on exactly as the job wrote them.
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

  end(): void {
    if (this.#parts.length === 0) return;
    let text = Buffer.concat(this.#parts);
    this.#parts = [];
    if (this.tag === undefined) {
      this.sink.write(text);
      return;
    }
    // Tagged output is lines: an unfinished last line is finished, or the next job's tag would run into it.
    if (text[text.length - 1] !== NEWLINE) text = Buffer.concat([text, Buffer.from("\n")]);
    this.sink.write(tagLines(text, this.tag));
  }
}

/** The collector for one stream of one job, per mode; none in raw mode (the job writes directly). */
export function createCollector(mode: OutputMode, sink: OutputSink, tag: string | undefined): StreamCollector | undefined {
  if (mode === "line") return new LineCollector(sink, tag);
  if (mode === "group") return new GroupCollector(sink, tag);
  return undefined;
}
