/**
 * The one grammar for rates, sizes and durations. Values are parsed once, at
 * the edge, into plain numbers whose unit is in their name: bytes per second,
 * tokens per second, milliseconds, bytes, counts.
 */

/** Thrown for text that is not a valid value; the message quotes it and shows a valid example. */
export class UnitError extends RangeError {
  readonly code = "EUNIT";
  constructor(message: string) {
    super(message);
    this.name = "UnitError";
  }
}

const NUMBER = String.raw`(\d+(?:\.\d+)?|\.\d+)(?:e([+-]?\d+))?`;
/** Past this, whole numbers stop being exact in a double: 2^53 - 1. */
const MAX_VALUE = Number.MAX_SAFE_INTEGER;

/** Byte units are binary whatever their case, as in pv and curl. */
const BYTE_UNITS: Record<string, number> = {
  "": 1, b: 1,
  k: 1024, kb: 1024, kib: 1024,
  m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2,
  g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3,
  t: 1024 ** 4, tb: 1024 ** 4, tib: 1024 ** 4,
};

/** Bit units are decimal, as in tc and networking; the factor is in bytes. */
const BIT_UNITS: Record<string, number> = {
  bit: 1 / 8, kbit: 1e3 / 8, mbit: 1e6 / 8, gbit: 1e9 / 8, tbit: 1e12 / 8,
  bps: 1 / 8, kbps: 1e3 / 8, mbps: 1e6 / 8, gbps: 1e9 / 8, tbps: 1e12 / 8,
};

const DURATION_UNITS_MS: Record<string, number> = {
  ms: 1,
  "": 1000, s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
  m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
  h: 3_600_000, hr: 3_600_000, hour: 3_600_000, hours: 3_600_000,
  d: 86_400_000, day: 86_400_000, days: 86_400_000,
};

const RATE_EXAMPLE = `try "1mb" or "5/s"`;
const BYTE_RATE_EXAMPLE = `try "1mb", "512k/s" or "10mbit"`;
const COUNT_RATE_EXAMPLE = `try "5", "300/m" or "1/10s"`;
const DURATION_EXAMPLE = `try "250ms", "2s" or "1.5m"`;
const BYTE_SIZE_EXAMPLE = `try "8k", "4mb" or "1000"`;
const COUNT_EXAMPLE = `try "1" or "10"`;

function isUnlimited(text: string): boolean {
  return /^(inf|infinity|unlimited)$/i.test(text.trim());
}

interface Split {
  value: number;
  /** The number as written, without its exponent. */
  digits: string;
  unit: string;
  period: string | undefined;
}

/** Splits "1.5MiB/s" into 1.5, "mib" and "s"; undefined when the shape is wrong. */
function split(text: string): Split | undefined {
  const match = new RegExp(`^${NUMBER}\\s*([a-z]*)(?:\\s*/\\s*(.+))?$`, "i").exec(text.trim());
  if (!match) return undefined;
  const [, digits, exponent, unit, period] = match;
  const value = Number(exponent === undefined ? digits : `${digits}e${exponent}`);
  return { value, digits: digits!, unit: unit!.toLowerCase(), period: period?.trim() };
}

/**
 * Refuses a value that is zero or below, or past MAX_VALUE. `1e309` reads as Infinity and `1e-400` as 0: those are too
 * large and too small, not zero. `largest` is the most accepted, as the user would write it.
 */
function checkMagnitude(value: number, parts: Split, text: string, what: string, example: string, largest: string, allowZero = false): number {
  if (value > MAX_VALUE || Number.isNaN(value)) {
    throw new UnitError(`"${text}" is not ${what}: it is too large (at most ${largest}); ${example}`);
  }
  if (allowZero && value === 0 && !/[1-9]/.test(parts.digits)) return 0;
  if (value <= 0) {
    const why = parts.value === 0 && /[1-9]/.test(parts.digits) ? "it is too small" : "it must be more than zero";
    throw new UnitError(`"${text}" is not ${what}: ${why}; ${example}`);
  }
  return value;
}

/** A period after the slash (of a rate, of a window): a unit alone ("s", "min") or a duration ("10s", "1.5m"); undefined if none, zero or endless. */
export function parsePeriodMs(period: string): number | undefined {
  const unitOnly = DURATION_UNITS_MS[period.toLowerCase()];
  if (unitOnly !== undefined && period !== "") return unitOnly;
  const parts = split(period);
  if (!parts || parts.period !== undefined) return undefined;
  const factor = DURATION_UNITS_MS[parts.unit];
  if (factor === undefined) return undefined;
  const periodMs = parts.value * factor;
  // A zero or endless period makes no rate.
  if (!(periodMs > 0 && periodMs < Infinity)) return undefined;
  return periodMs;
}

/** For rates where 0 means something (a shared key paused): `allowZero` accepts a written zero. */
export interface RateParseOptions {
  allowZero?: boolean;
}

/**
 * A byte rate in bytes per second: `1mb`, `512k`, `1.5MiB/s`, `10mbit`,
 * `250kbps`, `100`, `6gb/h`; `inf` for no limit.
 */
export function parseByteRate(text: string, options: RateParseOptions = {}): number {
  if (isUnlimited(text)) return Infinity;
  const parts = split(text);
  const bad = () => new UnitError(`"${text}" is not a byte rate; ${BYTE_RATE_EXAMPLE}`);
  if (!parts) throw bad();
  const byteFactor = BYTE_UNITS[parts.unit];
  const bitFactor = BIT_UNITS[parts.unit];
  const factor = byteFactor ?? bitFactor;
  if (factor === undefined) throw bad();
  let periodMs = 1000;
  if (parts.period !== undefined) {
    // "kbps" already says "per second".
    if (parts.unit.endsWith("ps")) throw bad();
    const parsed = parsePeriodMs(parts.period);
    if (parsed === undefined) throw bad();
    periodMs = parsed;
  }
  return checkMagnitude((parts.value * factor) / (periodMs / 1000), parts, text, "a byte rate", BYTE_RATE_EXAMPLE, `${MAX_VALUE} bytes/s`, options.allowZero);
}

/**
 * A count rate in events per second: `5`, `5/s`, `300/m`, `1000/h`,
 * `20000/d`, `1/10s`, `100/15m`; `inf` for no limit.
 */
export function parseCountRate(text: string, options: RateParseOptions = {}): number {
  if (isUnlimited(text)) return Infinity;
  const parts = split(text);
  if (!parts || parts.unit !== "") {
    const looksLikeBytes = parts !== undefined && (parts.unit in BYTE_UNITS || parts.unit in BIT_UNITS);
    const why = looksLikeBytes ? "a byte rate, not a count rate" : "not a count rate";
    throw new UnitError(`"${text}" is ${why}; ${COUNT_RATE_EXAMPLE}`);
  }
  let periodMs = 1000;
  if (parts.period !== undefined) {
    const parsed = parsePeriodMs(parts.period);
    if (parsed === undefined) throw new UnitError(`"${text}" is not a count rate; ${COUNT_RATE_EXAMPLE}`);
    periodMs = parsed;
  }
  return checkMagnitude(parts.value / (periodMs / 1000), parts, text, "a count rate", COUNT_RATE_EXAMPLE, `${MAX_VALUE}/s`, options.allowZero);
}

export type RateKind = "bytes" | "count";

export interface ParsedRate {
  kind: RateKind;
  perSecond: number;
}

/**
 * A rate of either kind, for places that take both (`--lines`, `simulate`):
 * a plain count rate ("5/s", "100") is a count; anything with a byte or bit
 * unit is bytes.
 */
export function parseAnyRate(text: string, options: RateParseOptions = {}): ParsedRate {
  if (isUnlimited(text)) return { kind: "count", perSecond: Infinity };
  // The unit decides the kind, so that a count or byte rate's own message (too large, zero) is kept.
  const kind = rateKindOf(text);
  if (kind === "count") return { kind, perSecond: parseCountRate(text, options) };
  if (kind === "bytes") return { kind, perSecond: parseByteRate(text, options) };
  throw new UnitError(`"${text}" is not a rate; ${RATE_EXAMPLE}`);
}

/**
 * The kind of rate the text's unit names, the rest unchecked: bytes for a byte
 * or bit unit, count for none; undefined when it has no unit of either (or is
 * `inf`, which is of any kind).
 */
export function rateKindOf(text: string): RateKind | undefined {
  const unit = split(text)?.unit;
  if (unit === "") return "count";
  if (unit !== undefined && (unit in BYTE_UNITS || unit in BIT_UNITS)) return "bytes";
  return undefined;
}

/** A rate of a known kind: a byte rate for bytes, a count rate for counts. */
export function parseRateOfKind(kind: RateKind, text: string, options: RateParseOptions = {}): number {
  return kind === "bytes" ? parseByteRate(text, options) : parseCountRate(text, options);
}

/** A bucket size of a known kind: whole bytes, or a whole count of at least 1. */
export function parseSizeOfKind(kind: RateKind, text: string): number {
  return kind === "bytes" ? parseByteSize(text) : parseCount(text);
}

/** A sliding window: at most `n` (a count, or bytes) in any interval of `windowMs`. */
export interface ParsedWindow {
  n: number;
  windowMs: number;
}

const WINDOW_EXAMPLE = {
  count: `try "100/1m", "1000/h" or "10/1.5s"`,
  bytes: `try "2mb/1s", "50gb/d" or "512k/10s"`,
  any: `try "1000/h" (lines) or "2mb/1s" (bytes)`,
} as const;

/**
 * A window `N/W` of a known kind: N a whole count (or a size in bytes, as
 * `--burst` takes it), W a duration after the slash, as a rate's period is
 * written (`1000/h`, `100/15m`, `2mb/1s`).
 */
export function parseWindowOfKind(kind: RateKind, text: string): ParsedWindow {
  return parseWindowText(text, kind, WINDOW_EXAMPLE[kind]);
}

/**
 * A window of either kind, for places that take both (`--lines`): N with a
 * byte unit counts bytes, a plain N counts (lines), as parseAnyRate decides.
 */
export function parseAnyWindow(text: string): ParsedWindow & { kind: RateKind } {
  const kind = rateKindOf(text) === "bytes" ? "bytes" : "count";
  return { kind, ...parseWindowText(text, kind, WINDOW_EXAMPLE.any) };
}

function parseWindowText(text: string, kind: RateKind, example: string): ParsedWindow {
  const written = text.trim();
  const slash = written.indexOf("/");
  if (slash <= 0 || slash === written.length - 1) throw new UnitError(`"${text}" is not a window: write N/W, at most N in any W; ${example}`);
  const amount = written.slice(0, slash).trim();
  const period = written.slice(slash + 1).trim();
  const windowMs = parsePeriodMs(period);
  if (windowMs === undefined) throw new UnitError(`"${text}" is not a window: "${period}" is not a duration longer than zero; ${example}`);
  // Shorter, a record would leave the window at the instant it was made (times are epoch milliseconds) and timers cannot wait it out.
  if (windowMs < 1) throw new UnitError(`"${text}" is not a window: "${period}" is shorter than 1 ms, the least a window may be; ${example}`);
  // A plain number is a size in bytes as it is a count: only a byte unit in a count window is the wrong kind.
  if (kind === "count" && rateKindOf(amount) === "bytes") throw new UnitError(`"${text}" is a window of bytes, not of counts; ${example}`);
  let n: number;
  try {
    n = kind === "bytes" ? parseByteSize(amount) : parseCount(amount);
  } catch (error) {
    // Zero and too large are said as such: "0" is a whole number, only not one a window can be.
    const reason = /: it (is too large \(at most [^)]*\)|must be more than zero)/.exec((error as Error).message)?.[1];
    const what = kind === "bytes" ? "a whole number of bytes" : "a whole number 1 or more";
    throw new UnitError(`"${text}" is not a window: "${amount}" ${reason ?? `is not ${what}`}; ${example}`);
  }
  return { n, windowMs };
}

/** A duration in milliseconds: `250ms`, `2s`, `1.5m`, `1h`, or a bare number of seconds. */
export function parseDuration(text: string): number {
  const parts = split(text);
  const factor = parts && parts.period === undefined ? DURATION_UNITS_MS[parts.unit] : undefined;
  if (!parts || factor === undefined) throw new UnitError(`"${text}" is not a duration; ${DURATION_EXAMPLE}`);
  if (parts.value === 0 && !/[1-9]/.test(parts.digits)) return 0;
  return checkMagnitude(parts.value * factor, parts, text, "a duration", DURATION_EXAMPLE, formatDuration(MAX_VALUE));
}

/** A size in whole bytes: `8k`, `4mb`, `1000`; binary units, as for rates. */
export function parseByteSize(text: string): number {
  const parts = split(text);
  const factor = parts && parts.period === undefined ? BYTE_UNITS[parts.unit] : undefined;
  if (!parts || factor === undefined) throw new UnitError(`"${text}" is not a size; ${BYTE_SIZE_EXAMPLE}`);
  const bytes = checkMagnitude(parts.value * factor, parts, text, "a size", BYTE_SIZE_EXAMPLE, `${MAX_VALUE} bytes`);
  if (!Number.isInteger(bytes)) {
    throw new UnitError(`"${text}" is not a whole number of bytes (${bytes}); ${BYTE_SIZE_EXAMPLE}`);
  }
  return bytes;
}

/**
 * A whole count of at least `min`: bursts in count mode, `--count`, `--jobs`.
 * Written in digits or with an exponent (`1e6`); at most MAX_VALUE.
 */
export function parseCount(text: string, min = 1): number {
  const parts = split(text);
  const value = parts && parts.unit === "" && parts.period === undefined ? parts.value : NaN;
  const example = min === 0 ? `try "0" or "8"` : COUNT_EXAMPLE;
  if (value > MAX_VALUE) {
    throw new UnitError(`"${text}" is not a whole number: it is too large (at most ${MAX_VALUE}); ${example}`);
  }
  if (!Number.isInteger(value) || value < min) {
    throw new UnitError(`"${text}" is not a whole number ${min} or more; ${example}`);
  }
  return value;
}

const BINARY_STEPS: Array<[string, number]> = [
  ["tib", 1024 ** 4],
  ["gib", 1024 ** 3],
  ["mib", 1024 ** 2],
  ["kib", 1024],
];

/** The exact canonical text of a byte count: `1mib`, `1536` — it parses back to the same number. */
export function formatByteSize(bytes: number): string {
  for (const [unit, factor] of BINARY_STEPS) {
    if (bytes >= factor && Number.isInteger(bytes / factor)) return `${bytes / factor}${unit}`;
  }
  return String(bytes);
}

/** The exact canonical text of a byte rate: `1mib/s`; it parses back to the same number. */
export function formatByteRate(bytesPerSecond: number): string {
  if (bytesPerSecond === Infinity) return "inf";
  return `${formatByteSize(bytesPerSecond)}/s`;
}

/** The exact canonical text of a count rate: `5/s`. */
export function formatCountRate(perSecond: number): string {
  if (perSecond === Infinity) return "inf";
  return `${perSecond}/s`;
}

/** The exact canonical text of a duration: `250ms`. */
export function formatDuration(ms: number): string {
  return `${ms}ms`;
}
