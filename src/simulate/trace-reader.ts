import { addressKey } from "../core/address-key.js";
import { type ArrivalSource, BatchBuilder } from "./event-batch.js";
import {
  BadLine,
  describeTimeKind,
  detectShape,
  type LineOptions,
  looksLikeHeader,
  parseAccessLogLine,
  parseFieldsFast,
  parseFieldsLine,
  type ParsedLine,
  QUOTED_CHARS,
  quote,
  type TimeKind,
  type TraceShape,
} from "./trace-line.js";

export interface TraceOptions extends LineOptions {
  /** Count and report bad lines instead of stopping at the first. */
  skipBad: boolean;
  /** Keep each event's key (per-key simulation). */
  withKeys: boolean;
  /** A key that is an IPv6 address is keyed by its network of this many bits (addressKey), as the proxy keys its clients; default: every key as it is. */
  ipv6Prefix?: number;
  batchSize?: number;
  /** Longer lines are bad lines (default MAX_LINE_BYTES). */
  maxLineBytes?: number;
}

/** No trace line needs more; a file without newlines would otherwise be held whole. */
export const MAX_LINE_BYTES = 1 << 20;

/** What reading the trace found, filled in as it goes. */
export interface TraceReport {
  lines: number;
  events: number;
  shape: TraceShape | undefined;
  timeKind: TimeKind | undefined;
  /** Lines skipped because `skipBad` is on, and the first few of them with what was wrong. */
  skipped: number;
  skippedExamples: SkippedLine[];
  /** Events whose time was before the previous event's: taken at the previous event's time. */
  outOfOrder: number;
}

/** A bad line and where it is. */
export interface SkippedLine {
  lineNumber: number;
  bad: BadLine;
}

/** A bad line when `skipBad` is off: the message names the line and what was wrong. */
export class TraceError extends Error implements SkippedLine {
  readonly code = "ETRACE";
  constructor(
    readonly lineNumber: number,
    readonly bad: BadLine,
  ) {
    super(`line ${lineNumber}: ${bad.message}`, { cause: bad });
    this.name = "TraceError";
  }
}

/**
 * The options do not suit the kind of trace found: a usage mistake, not a bad line.
 * `option` is the one at fault; `shape` the kind of trace found.
 */
export class TraceOptionError extends Error {
  readonly code = "ETRACEOPTION";
  constructor(
    readonly option: "costField" | "keyField" | "costBytes" | "withKeys",
    readonly shape: TraceShape,
    message: string,
  ) {
    super(message);
    this.name = "TraceOptionError";
  }
}

/** Checks, once the trace's shape is known, that the options make sense for it. */
function checkOptionsForShape(shape: TraceShape, options: TraceOptions): void {
  if (shape === "access-log") {
    if (options.costField !== undefined) {
      throw new TraceOptionError("costField", shape, `costField: not with an access log, whose fields are known; set costBytes to take the response size`);
    }
    if (options.keyField !== undefined) {
      throw new TraceOptionError("keyField", shape, `keyField: not with an access log, whose fields are known; withKeys keys on the client address`);
    }
    return;
  }
  if (options.costBytes && options.costField === undefined) {
    throw new TraceOptionError("costBytes", shape, `costBytes: this trace is not an access log; name the field holding each size with costField`);
  }
  if (options.withKeys && options.keyField === undefined) {
    throw new TraceOptionError("withKeys", shape, `withKeys: this trace is not an access log; name the field holding each key with keyField`);
  }
}

export function createTraceReport(): TraceReport {
  return { lines: 0, events: 0, shape: undefined, timeKind: undefined, skipped: 0, skippedExamples: [], outOfOrder: 0 };
}

const MAX_EXAMPLES = 3;
/** IPv6 keys whose network key is remembered; past it the memory starts again. */
const MAX_NETWORK_KEYS = 65_536;

/**
 * Streams a trace into batches of events, a chunk at a time, so that a file
 * of any length runs in bounded memory. Blank lines and lines starting with #
 * are ignored, as is a header line before the first event and a line of
 * the proxy's whose request never reached the limit. Epoch and ISO
 * times are rebased so that the first event is at 0; events with equal times
 * keep the order of the file. Batches are reused: consume each before asking
 * for the next.
 */
export async function* traceArrivals(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>, options: TraceOptions, report: TraceReport): ArrivalSource {
  const builder = new BatchBuilder(options.batchSize ?? 65_536, options.withKeys);
  const parsed: ParsedLine = { wholeSeconds: 0, fractionNs: 0, timeKind: "seconds", cost: 1, key: undefined };
  let shape: TraceShape | undefined;
  let firstEventLine = 0;
  let originWholeSeconds = 0;
  let originFractionNs = 0;
  let lastMs = 0;
  let lineNumber = 0;
  let timeKind: TimeKind | undefined;

  /** A bad line stops the reading, or with `skipBad` is counted and skipped. */
  const reject = (bad: BadLine): void => {
    if (!options.skipBad) throw new TraceError(lineNumber, bad);
    report.skipped++;
    if (report.skippedExamples.length < MAX_EXAMPLES) report.skippedExamples.push({ lineNumber, bad });
  };

  const maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
  const ipv6Prefix = options.ipv6Prefix;
  /** The network key of each IPv6 key seen lately: a log names its clients again and again, and addressKey costs microseconds. */
  const networkKeys = new Map<string, string>();
  const keyOf = (key: string | undefined): string | undefined => {
    // Only a key with a colon may be an IPv6 address: IPv4 and other keys are not looked at again.
    if (ipv6Prefix === undefined || key === undefined || !key.includes(":")) return key;
    let network = networkKeys.get(key);
    if (network === undefined) {
      if (networkKeys.size >= MAX_NETWORK_KEYS) networkKeys.clear();
      network = addressKey(key, ipv6Prefix);
      networkKeys.set(key, network);
    }
    return network;
  };
  /** A line past the limit: only its start is kept, for the message. */
  const rejectLong = (head: Buffer): void => {
    lineNumber++;
    const text = head.toString("utf8", 0, Math.min(head.length, QUOTED_CHARS * 4));
    reject(new BadLine(`the line is longer than ${maxLineBytes} bytes, more than any trace line needs; it starts ${quote(text)}`, { kind: "too-long", text }));
  };

  /** Parses one line (bytes start..end, no newline) into the builder, if it holds an event. */
  const handle = (bytes: Buffer, start: number, end: number): void => {
    lineNumber++;
    if (end > start && bytes[end - 1] === 13) end--;
    if (start === end || bytes[start] === 35 /* # */) return;
    try {
      if (shape === "fields" && parseFieldsFast(bytes, start, end, options, parsed)) {
        // The common case: no string was made for the line.
      } else {
        const line = bytes.toString("utf8", start, end);
        if (line.trim() === "") return;
        if (shape === undefined) {
          shape = detectShape(line);
          report.shape = shape;
          checkOptionsForShape(shape, options);
          // Only the very first line that is not a comment may be a header.
          if (shape === "fields" && looksLikeHeader(line)) return;
        }
        if (shape === "access-log") {
          if (!parseAccessLogLine(line, options, parsed)) return;
        } else parseFieldsLine(line, options, parsed);
      }
      if (parsed.timeKind !== timeKind) {
        if (timeKind === undefined) {
          timeKind = parsed.timeKind;
          report.timeKind = timeKind;
          firstEventLine = lineNumber;
          if (timeKind !== "seconds") {
            originWholeSeconds = parsed.wholeSeconds;
            originFractionNs = parsed.fractionNs;
          }
        } else {
          throw new BadLine(
            `the time is ${describeTimeKind(parsed.timeKind)} but line ${firstEventLine} had ${describeTimeKind(timeKind)}; use one kind of time in a trace`,
            { kind: "time" },
          );
        }
      }
    } catch (error) {
      if (!(error instanceof BadLine)) throw error;
      reject(error);
      return;
    }
    const ns = (parsed.wholeSeconds - originWholeSeconds) * 1e9 + (parsed.fractionNs - originFractionNs);
    let timeMs = ns / 1e6;
    if (timeMs < lastMs) {
      report.outOfOrder++;
      timeMs = lastMs;
    }
    lastMs = timeMs;
    report.events++;
    builder.push(timeMs, parsed.cost, keyOf(parsed.key));
  };

  // The part of a line cut by the end of a chunk, in pieces joined once when the line ends: each
  // byte is copied once, however many chunks a line spans. Past the limit only its start is kept.
  let carry: Buffer[] = [];
  let carryLength = 0;
  let longHead: Buffer | undefined;
  const keep = (bytes: Buffer, start: number, end: number): void => {
    if (longHead !== undefined || end === start) return;
    if (carryLength + (end - start) > maxLineBytes) {
      longHead = Buffer.concat([...carry, bytes.subarray(start, Math.min(end, start + QUOTED_CHARS * 4))]).subarray(0, QUOTED_CHARS * 4);
      carry = [];
      carryLength = 0;
      return;
    }
    carry.push(Buffer.from(bytes.subarray(start, end)));
    carryLength += end - start;
  };
  const endCarried = (): void => {
    if (longHead !== undefined) {
      rejectLong(longHead);
      longHead = undefined;
      return;
    }
    const line = carry.length === 1 ? carry[0]! : Buffer.concat(carry, carryLength);
    carry = [];
    carryLength = 0;
    handle(line, 0, line.length);
  };

  for await (const chunk of input) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let start = 0;
    if (carryLength > 0 || longHead !== undefined) {
      const newline = bytes.indexOf(10);
      if (newline < 0) {
        keep(bytes, 0, bytes.length);
        continue;
      }
      keep(bytes, 0, newline);
      endCarried();
      start = newline + 1;
      if (builder.full) yield builder.take();
    }
    for (;;) {
      const newline = bytes.indexOf(10, start);
      if (newline < 0) break;
      if (newline - start > maxLineBytes) rejectLong(bytes.subarray(start, start + QUOTED_CHARS * 4));
      else handle(bytes, start, newline);
      start = newline + 1;
      if (builder.full) yield builder.take();
    }
    keep(bytes, start, bytes.length);
  }
  if (carryLength > 0 || longHead !== undefined) endCarried();
  report.lines = lineNumber;
  if (builder.count > 0) yield builder.take();
}
