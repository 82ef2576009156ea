/**
 * Numbers, sizes, rates and durations for people, and aligned tables: the
 * one place every layer formats its output from. The exact texts that parse
 * back (`1mib/s`, `250ms`) belong to the grammar, in units.ts.
 */

/** What a token is: an event (a line, a launch) or a byte. The same as units.ts's RateKind. */
export type TokenKind = "count" | "bytes";

/** Rounds away float noise (3.5000000000000004 → 3.5) for printing; 9 decimals keep nanoseconds. */
export function round9(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}

/** Milliseconds to seconds, through whole nanoseconds so that 3125 ms prints as 3.125. */
export function msToSeconds(ms: number): number {
  return Math.round(ms * 1e6) / 1e9;
}

/** `value` to `digits` significant digits, without trailing zeros: 6.125 → "6.13", 2.0 → "2". */
export function significant(value: number, digits: number): string {
  return String(Number(value.toPrecision(digits)));
}

/** A whole number with thousands separators, the same on every machine: 1,048,576. */
export function grouped(value: number): string {
  return value.toLocaleString("en-US");
}

/** A count and its noun, plural unless the count is 1: `1 line`, `3 lines`, `0 bytes`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

/** A share as a percentage with two decimals: 23.33%. */
export function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

const HUMAN_STEPS: Array<[string, number]> = [
  ["TiB", 1024 ** 4],
  ["GiB", 1024 ** 3],
  ["MiB", 1024 ** 2],
  ["KiB", 1024],
];

/** A byte count for people: `1.50 MiB`, `512 B`. */
export function humanBytes(bytes: number): string {
  for (const [unit, factor] of HUMAN_STEPS) {
    if (Math.abs(bytes) >= factor) return `${(bytes / factor).toFixed(2)} ${unit}`;
  }
  return `${Math.round(bytes)} B`;
}

/** A byte rate for people: `1.00 MiB/s`, `512 B/s`, `0.1 B/s`; `unlimited` for Infinity. The exact figure is the caller's to add (exactByteRate). */
export function humanByteRate(bytesPerSecond: number): string {
  if (bytesPerSecond === Infinity) return "unlimited";
  return smallByteRate(bytesPerSecond) ?? `${humanBytes(bytesPerSecond)}/s`;
}

/** A byte rate in bytes a second, grouped: `1,048,576 B/s`, `512 B/s`, `0.1 B/s`. */
export function exactByteRate(bytesPerSecond: number): string {
  return smallByteRate(bytesPerSecond) ?? `${grouped(Math.round(bytesPerSecond))} B/s`;
}

/** Below 100 B/s, three significant digits: whole bytes would show 0.1 B/s as 0 B/s. */
function smallByteRate(bytesPerSecond: number): string | undefined {
  return Math.abs(bytesPerSecond) < 100 ? `${significant(bytesPerSecond, 3)} B/s` : undefined;
}

/** A count rate for people, to a tenth: `120/s`, `2.5/s`, or per minute below one a second: `30.0/min`; `0/s` for none; `inf` for Infinity. */
export function humanCountRate(perSecond: number): string {
  if (perSecond === Infinity) return "inf";
  // Nothing yet (a progress line's first draw, a paused key): not "0.0/min", which reads as a slow rate.
  if (perSecond === 0) return "0/s";
  if (perSecond >= 100) return `${Math.round(perSecond)}/s`;
  if (perSecond >= 1) return `${perSecond.toFixed(1)}/s`;
  return `${(perSecond * 60).toFixed(1)}/min`;
}

/** `5` → `05`: minutes and seconds in `3m05s`. */
function twoDigits(value: number): string {
  return String(value).padStart(2, "0");
}

/** Whole seconds past a minute: `2m05s`, `1h02m05s`. */
function clockDuration(ms: number): string {
  const whole = Math.round(ms / 1000);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = twoDigits(whole % 60);
  return h > 0 ? `${h}h${twoDigits(m)}m${s}s` : `${m}m${s}s`;
}

/** An elapsed time for people, coarse: `350 ms`, `1.2 s`, `3m05s`. */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "∞";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return clockDuration(ms);
}

/** The most columns `format` takes over `samples`, its widest figures (what a progress line lays its fields out from). */
export function widestOf(format: (value: number) => string, samples: readonly number[]): number {
  return Math.max(...samples.map((value) => format(value).length));
}

/** humanBytes below 1024 TiB: `1023.99 KiB`. */
export const HUMAN_BYTES_WIDEST = widestOf(humanBytes, [1023.99 * 1024]);
export const HUMAN_BYTE_RATE_WIDEST = widestOf(humanByteRate, [1023.99 * 1024]);
/** humanCountRate below 100,000 a second: `59.9/min`, `99.9/s`, `99999/s`. */
export const HUMAN_COUNT_RATE_WIDEST = widestOf(humanCountRate, [0.999, 99.9, 99_999]);
/** humanDuration under an hour: `999 ms`, `59.9 s`, `59m59s`. */
export const HUMAN_DURATION_WIDEST = widestOf(humanDuration, [999, 59_900, 3_599_000]);

/** A wait for people, to three significant digits down to microseconds: 0, 350 µs, 12.5 ms, 3.13 s, 2m05s. */
export function humanWait(ms: number): string {
  if (ms === 0) return "0";
  if (!Number.isFinite(ms)) return "∞";
  if (ms < 1) return `${significant(ms * 1000, 3)} µs`;
  if (ms < 1000) return `${significant(ms, 3)} ms`;
  if (ms < 60_000) return `${significant(ms / 1000, 3)} s`;
  return clockDuration(ms);
}

/** An exact time in seconds: 3.125 s. */
export function exactSeconds(ms: number): string {
  return `${msToSeconds(ms)} s`;
}

/** Enough decimals to tell times `stepMs` apart, in seconds. */
export function secondsDecimals(stepMs: number): number {
  return Math.max(0, Math.min(9, Math.ceil(-Math.log10(stepMs / 1000) - 1e-9)));
}

/** A rate of tokens of either kind, exact: `5/s`, `512 B/s`, or `1.00 MiB/s (1048576 B/s)`. */
export function describeRate(kind: TokenKind, perSecond: number): string {
  if (kind === "count") return perSecond === Infinity ? "inf" : `${round9(perSecond)}/s`;
  if (perSecond === Infinity) return "unlimited";
  if (perSecond < 1024) return `${round9(perSecond)} B/s`;
  return `${humanByteRate(perSecond)} (${round9(perSecond)} B/s)`;
}

/** A number of tokens of either kind, exact: `8`, `512 B`, or `1.00 MiB (1048576 B)`. */
export function describeSize(kind: TokenKind, tokens: number): string {
  return kind === "count" ? String(tokens) : tokens >= 1024 ? `${humanBytes(tokens)} (${tokens} B)` : `${tokens} B`;
}

/** A rate set on a bucket, of either kind, as the progress line shows a limit: `2.00 MiB/s`, `5/s`, `0 (paused)`, `unlimited`. */
export function humanRate(kind: TokenKind, perSecond: number): string {
  if (perSecond === 0) return "0 (paused)";
  if (perSecond === Infinity) return "unlimited";
  return kind === "count" ? `${round9(perSecond)}/s` : humanByteRate(perSecond);
}

/** A number of tokens of either kind, rounded: `53.25 KiB` or `2.5`. */
export function humanAmount(kind: TokenKind, tokens: number): string {
  return kind === "count" ? String(Math.round(tokens * 100) / 100) : humanBytes(tokens);
}

/** A measured rate of either kind, rounded: `6.13/s` or `1.20 MiB/s`. */
export function describeThroughput(kind: TokenKind, perSecond: number): string {
  return kind === "count" ? `${significant(perSecond, 3)}/s` : humanByteRate(perSecond);
}

export type Alignment = "left" | "right";

export interface ColumnOptions {
  /** One alignment for every column, or one per column (default left). */
  align?: Alignment | readonly Alignment[];
  /** Between columns (default two spaces). */
  gap?: string;
}

/**
 * Rows of cells in aligned columns, one line per row, each column as wide as
 * its widest cell. Right-aligned cells are padded on the left; left-aligned
 * cells on the right, except in the last column, which needs no padding.
 */
export function alignColumns(rows: ReadonlyArray<readonly string[]>, options: ColumnOptions = {}): string[] {
  const gap = options.gap ?? "  ";
  const columns = rows.reduce((most, row) => Math.max(most, row.length), 0);
  const widths: number[] = [];
  for (let column = 0; column < columns; column++) {
    widths.push(rows.reduce((width, row) => Math.max(width, row[column]?.length ?? 0), 0));
  }
  const alignOf = (column: number): Alignment => (typeof options.align === "string" ? options.align : (options.align?.[column] ?? "left"));
  return rows.map((row) =>
    row
      .map((cell, column) => {
        if (alignOf(column) === "right") return cell.padStart(widths[column]!);
        return column === row.length - 1 ? cell : cell.padEnd(widths[column]!);
      })
      .join(gap),
  );
}
