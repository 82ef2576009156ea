/**
 * Parsing one line of a trace. Two shapes are recognised from the first
 * event line of a file:
 *
 * - fields separated by spaces, tabs or commas, the time first: seconds from
 *   the start (`12.5`), epoch seconds (`1760104536.25`, any number of 10^8 or
 *   more) or ISO-8601 (`2026-10-10T13:55:36.250Z`; without a zone it is UTC, so
 *   that output does not depend on the machine's time zone);
 * - web server access logs in Common or Combined Log Format, the time taken
 *   from `[10/Oct/2026:13:55:36 +0000]`, or with a fraction of a second as
 *   `tbucket proxy` and Apache's `%{msec_frac}t` write it
 *   (`[10/Oct/2026:13:55:36.250 +0000]`), the client address first, the
 *   response size after the status.
 *
 * Times are split into whole seconds and nanoseconds so that epoch times keep
 * their fraction exactly; the reader rebases them to the first event.
 */

import { plural } from "../core/format.js";
import { type CalendarTime, calendarProblem, epochSecondsOf } from "./calendar.js";

export type TraceShape = "fields" | "access-log";
export type TimeKind = "seconds" | "epoch" | "iso";

/** What one line holds, written into a reused object to keep parsing allocation-free. */
export interface ParsedLine {
  wholeSeconds: number;
  fractionNs: number;
  timeKind: TimeKind;
  cost: number;
  key: string | undefined;
}

export interface LineOptions {
  /** 1-based field holding the cost (fields shape). */
  costField: number | undefined;
  /** 1-based field holding the key (fields shape). */
  keyField: number | undefined;
  /** Access logs: cost is the response size instead of 1. */
  costBytes: boolean;
  /** Access logs: keep the client address as the key. */
  wantKeys: boolean;
}

/**
 * What is wrong with a line, as data: a caller that names the options its own
 * way (the CLI's --cost-field) words the field problems itself.
 *
 * - `time`: the time is not one (`text` quoted), or not a valid date, or of
 *   another kind than the first event's;
 * - `access-log`: the line is not an access log line, or its time is not valid;
 * - `missing-field`: the line has `fieldCount` fields, fewer than `field.index`;
 * - `cost`: the cost field holds `text`, not a number of 0 or more;
 * - `too-long`: the line is longer than the limit; `text` is its start.
 */
export type BadLineKind = "time" | "access-log" | "missing-field" | "cost" | "too-long";

/** The option that names a field: `costField` or `keyField`, and the field's 1-based index. */
export interface FieldOption {
  option: "costField" | "keyField";
  index: number;
}

export interface BadLineDetail {
  kind: BadLineKind;
  /** The text at fault, unquoted (`quote` it to show it). */
  text?: string;
  /** missing-field and cost: the option naming the field. */
  field?: FieldOption;
  /** missing-field: how many fields the line has. */
  fieldCount?: number;
}

/** A line that cannot be read; the message says what is wrong and what was expected. */
export class BadLine extends Error {
  readonly kind: BadLineKind;
  readonly text: string | undefined;
  readonly field: FieldOption | undefined;
  readonly fieldCount: number | undefined;
  constructor(message: string, detail: BadLineDetail) {
    super(message);
    this.name = "BadLine";
    this.kind = detail.kind;
    this.text = detail.text;
    this.field = detail.field;
    this.fieldCount = detail.fieldCount;
  }
}

const EPOCH_THRESHOLD_SECONDS = 1e8;
/** How much of a line's text a message quotes. */
export const QUOTED_CHARS = 200;
const ACCESS_LOG =
  /^(\S+) \S+ (?:\S+|"[^"]*") \[(\d{2})\/([A-Za-z]{3})\/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? ([+-])(\d{2})(\d{2})\] "(?:[^"\\]|\\.)*" (\d{3}|-) (\d+|-)/;
/**
 * The end of a line `tbucket proxy --access-log` wrote for a request the limit
 * never saw: `invalid` (a 400, 431 or 501 before the limit, for bad framing, a
 * bad path or coding) and `failed` (the store was lost, the limit not
 * consulted). A `cancelled` request is not one of them: its client hung up
 * while queued, after its token was taken (and then given back), so the queue
 * saw it arrive. The quote before the decision ends the user agent, whose own
 * quotes are escaped: a client cannot write this end into a line.
 */
const PROXY_NOT_LIMITED = /" (?:invalid|failed) \d+$/;
const MONTHS: Record<string, number> = {
  jan: 0, feb: 1, mar: 2, apr: 3, may: 4, jun: 5, jul: 6, aug: 7, sep: 8, oct: 9, nov: 10, dec: 11,
};
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2})(?::?(\d{2}))?)?$/i;
const PLAIN_SECONDS = /^(\d+)(?:\.(\d*))?$/;

const TIME_EXPECTED = `expected seconds from the start (12.5), epoch seconds (1760104536.25) or an ISO-8601 time (2026-10-10T13:55:36.25Z)`;
const ACCESS_LOG_EXPECTED = `expected an access log line like 127.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326`;

/**
 * `"text"`, cut to QUOTED_CHARS characters, control characters escaped: a
 * message never repeats a whole line, nor sends a trace's escape sequences
 * to the terminal.
 */
export function quote(text: string): string {
  let cut = text.length <= QUOTED_CHARS ? text : text.slice(0, QUOTED_CHARS);
  // Do not leave half of a surrogate pair.
  if (cut.length < text.length && /[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  const shown = cut.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `"${shown}${cut.length < text.length ? "…" : ""}"`;
}

/** Which shape a file has, judged from its first event line. */
export function detectShape(line: string): TraceShape {
  return ACCESS_LOG.test(line) ? "access-log" : "fields";
}

/** A first line that does not start like a time but like a word is a header ("time,cost,key"). */
export function looksLikeHeader(line: string): boolean {
  return /^\s*"?[A-Za-z_]/.test(line);
}

/**
 * Reads an access log line into `out`; false for a line of the proxy's whose
 * request never reached the limit (see PROXY_NOT_LIMITED), which is no arrival.
 */
export function parseAccessLogLine(line: string, options: LineOptions, out: ParsedLine): boolean {
  const match = ACCESS_LOG.exec(line);
  if (!match) throw new BadLine(ACCESS_LOG_EXPECTED, { kind: "access-log", text: line });
  const month = MONTHS[match[3]!.toLowerCase()];
  if (month === undefined) throw new BadLine(`${quote(match[3]!)} is not a month; ${ACCESS_LOG_EXPECTED}`, { kind: "access-log", text: match[3]! });
  const time: CalendarTime = {
    year: Number(match[4]),
    month: month + 1,
    day: Number(match[2]),
    hour: Number(match[5]),
    minute: Number(match[6]),
    second: Number(match[7]),
    offsetSign: match[9] === "-" ? -1 : 1,
    offsetHours: Number(match[10]),
    offsetMinutes: Number(match[11]),
  };
  const fraction = match[8];
  const problem = calendarProblem(time);
  if (problem !== undefined) {
    const written = `${match[2]}/${match[3]}/${match[4]}:${match[5]}:${match[6]}:${match[7]}${fraction === undefined ? "" : `.${fraction}`} ${match[9]}${match[10]}${match[11]}`;
    throw new BadLine(`${quote(written)} is not a valid time: ${problem}; ${ACCESS_LOG_EXPECTED}`, { kind: "access-log", text: written });
  }
  out.wholeSeconds = epochSecondsOf(time);
  out.fractionNs = fraction === undefined ? 0 : Number(fraction.padEnd(9, "0"));
  out.timeKind = "epoch";
  if (options.costBytes) {
    const size = match[13]!;
    out.cost = size === "-" ? 0 : Number(size);
  } else {
    out.cost = 1;
  }
  out.key = options.wantKeys ? match[1] : undefined;
  return !PROXY_NOT_LIMITED.test(line);
}

/** Splits a line's fields on spaces, tabs and commas, keeping only those asked for. */
function field(line: string, wanted: number): string | undefined {
  let index = 0;
  let position = 0;
  const length = line.length;
  while (position < length) {
    while (position < length && isSeparator(line.charCodeAt(position))) position++;
    if (position >= length) break;
    const start = position;
    while (position < length && !isSeparator(line.charCodeAt(position))) position++;
    if (++index === wanted) return line.slice(start, position);
  }
  return undefined;
}

function isSeparator(code: number): boolean {
  return code === 32 || code === 9 || code === 44;
}

/** In one pass: asking field() for each index in turn would be quadratic on a line of many fields. */
function countFields(line: string): number {
  let count = 0;
  let inField = false;
  for (let position = 0; position < line.length; position++) {
    const separator = isSeparator(line.charCodeAt(position));
    if (!separator && !inField) count++;
    inField = !separator;
  }
  return count;
}

export function parseFieldsLine(line: string, options: LineOptions, out: ParsedLine): void {
  const time = field(line, 1);
  if (time === undefined) throw new BadLine(`the line is empty; ${TIME_EXPECTED}`, { kind: "time", text: "" });
  parseTime(time, out);
  out.cost = 1;
  if (options.costField !== undefined) {
    const text = field(line, options.costField);
    const costField: FieldOption = { option: "costField", index: options.costField };
    if (text === undefined) throw missingField(line, costField);
    const cost = Number(text);
    if (text === "" || !Number.isFinite(cost) || cost < 0) {
      throw new BadLine(`${describeNotACost(text, options.costField)} (costField ${options.costField})`, { kind: "cost", text, field: costField });
    }
    out.cost = cost;
  }
  out.key = undefined;
  if (options.keyField !== undefined) {
    const text = field(line, options.keyField);
    if (text === undefined) throw missingField(line, { option: "keyField", index: options.keyField });
    out.key = text;
  }
}

/** `field 2 "x" is not a cost; ...`: the words, without the option that named the field. */
export function describeNotACost(text: string, index: number): string {
  return `field ${index} ${quote(text)} is not a cost; expected a number of 0 or more`;
}

/** `has 1 field, expected at least 2`: the words, without the option that named the field. */
export function describeMissingField(fieldCount: number, index: number): string {
  return `has ${plural(fieldCount, "field")}, expected at least ${index}`;
}

function missingField(line: string, field: FieldOption): BadLine {
  const fieldCount = countFields(line);
  return new BadLine(`${describeMissingField(fieldCount, field.index)} (${field.option} ${field.index})`, { kind: "missing-field", field, fieldCount });
}

function parseTime(text: string, out: ParsedLine): void {
  const plain = PLAIN_SECONDS.exec(text);
  if (plain) {
    const whole = Number(plain[1]);
    out.wholeSeconds = whole;
    out.fractionNs = fractionToNs(plain[2]);
    out.timeKind = whole >= EPOCH_THRESHOLD_SECONDS ? "epoch" : "seconds";
    return;
  }
  const iso = ISO_TIME.exec(text);
  if (iso) {
    // Without a zone the time is UTC, so that output does not depend on the machine.
    const time: CalendarTime = {
      year: Number(iso[1]),
      month: Number(iso[2]),
      day: Number(iso[3]),
      hour: Number(iso[4]),
      minute: Number(iso[5]),
      second: Number(iso[6]),
      offsetSign: iso[8] === "-" ? -1 : 1,
      offsetHours: iso[9] === undefined ? 0 : Number(iso[9]),
      offsetMinutes: iso[10] === undefined ? 0 : Number(iso[10]),
    };
    const problem = calendarProblem(time);
    if (problem !== undefined) throw new BadLine(`${quote(text)} is not a valid date: ${problem}; ${TIME_EXPECTED}`, { kind: "time", text });
    out.wholeSeconds = epochSecondsOf(time);
    out.fractionNs = fractionToNs(iso[7]);
    out.timeKind = "iso";
    return;
  }
  // Exponents and the like: rounded to whole nanoseconds.
  const seconds = /^[0-9.]+e[+-]?\d+$/i.test(text) ? Number(text) : NaN;
  if (Number.isFinite(seconds) && seconds >= 0) {
    out.wholeSeconds = Math.floor(seconds);
    out.fractionNs = Math.round((seconds - out.wholeSeconds) * 1e9);
    out.timeKind = out.wholeSeconds >= EPOCH_THRESHOLD_SECONDS ? "epoch" : "seconds";
    return;
  }
  throw new BadLine(`${quote(text)} is not a time; ${TIME_EXPECTED}`, { kind: "time", text });
}

/** ".25" → 250,000,000 ns; digits past the ninth are truncated, as Go's time parsing does. */
function fractionToNs(digits: string | undefined): number {
  if (!digits) return 0;
  return Number(digits.length >= 9 ? digits.slice(0, 9) : digits.padEnd(9, "0"));
}

export function describeTimeKind(kind: TimeKind): string {
  return kind === "seconds" ? "seconds from the start" : kind === "epoch" ? "epoch seconds" : "an ISO-8601 time";
}

function isSeparatorByte(byte: number): boolean {
  return byte === 32 || byte === 9 || byte === 44;
}

/**
 * The common case read straight from the bytes, without making strings:
 * plain seconds (`12.5`, `1760104536.25`), an optional whole-number cost and
 * a key. Answers false for anything else, which then takes the general path
 * (that also produces the error messages).
 */
export function parseFieldsFast(bytes: Uint8Array, start: number, end: number, options: LineOptions, out: ParsedLine): boolean {
  let i = start;
  let whole = 0;
  let digits = 0;
  while (i < end) {
    const d = bytes[i]! - 48;
    if (d < 0 || d > 9) break;
    whole = whole * 10 + d;
    digits++;
    i++;
  }
  if (digits === 0 || digits > 15) return false;
  let fractionNs = 0;
  if (i < end && bytes[i] === 46 /* . */) {
    i++;
    let scale = 1e8;
    while (i < end) {
      const d = bytes[i]! - 48;
      if (d < 0 || d > 9) break;
      // Digits past the ninth are truncated, as in the general path.
      if (scale >= 1) fractionNs += d * scale;
      scale /= 10;
      i++;
    }
  }
  if (i < end && !isSeparatorByte(bytes[i]!)) return false;
  out.wholeSeconds = whole;
  out.fractionNs = fractionNs;
  out.timeKind = whole >= EPOCH_THRESHOLD_SECONDS ? "epoch" : "seconds";
  out.cost = 1;
  out.key = undefined;
  const { costField, keyField } = options;
  if (costField === undefined && keyField === undefined) return true;
  const last = Math.max(costField ?? 0, keyField ?? 0);
  let index = 1;
  while (index < last) {
    while (i < end && isSeparatorByte(bytes[i]!)) i++;
    if (i >= end) return false;
    const fieldStart = i;
    while (i < end && !isSeparatorByte(bytes[i]!)) i++;
    index++;
    if (index === costField) {
      let cost = 0;
      for (let j = fieldStart; j < i; j++) {
        const d = bytes[j]! - 48;
        if (d < 0 || d > 9) return false;
        cost = cost * 10 + d;
      }
      if (i - fieldStart > 15) return false;
      out.cost = cost;
    }
    if (index === keyField) out.key = latin1OrUtf8(bytes, fieldStart, i);
  }
  return true;
}

const decoder = new TextDecoder();

/** A key's text: ASCII keys, the usual case, are made without a UTF-8 decoder. */
function latin1OrUtf8(bytes: Uint8Array, start: number, end: number): string {
  let ascii = true;
  for (let j = start; j < end; j++) {
    if (bytes[j]! >= 128) {
      ascii = false;
      break;
    }
  }
  // fromCharCode.apply passes each byte as an argument: long keys would overflow the stack.
  if (!ascii || end - start > 256) return decoder.decode(bytes.subarray(start, end));
  return String.fromCharCode.apply(null, bytes.subarray(start, end) as unknown as number[]);
}
