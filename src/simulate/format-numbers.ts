import { formatCountRate, humanByteRate, humanBytes } from "../core/units.js";
import { msToSeconds } from "./event-batch.js";

/** What a token is: one event, or one byte with `--cost bytes`. */
export type CostUnit = "count" | "bytes";

/** Rounds away float noise (3.5000000000000004 → 3.5) for printing; 9 decimals keep nanoseconds. */
export function round9(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}

/** A duration for people: 0, 350 µs, 12.5 ms, 3.13 s, 2m05s. */
export function humanWait(ms: number): string {
  if (ms === 0) return "0";
  if (!Number.isFinite(ms)) return "∞";
  if (ms < 1) return `${trim(ms * 1000, 3)} µs`;
  if (ms < 1000) return `${trim(ms, 3)} ms`;
  if (ms < 60_000) return `${trim(ms / 1000, 3)} s`;
  const whole = Math.round(ms / 1000);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}h${String(m).padStart(2, "0")}m${s}s` : `${m}m${s}s`;
}

/** An exact time on the timeline, in seconds: 3.125 s. */
export function exactSeconds(ms: number): string {
  return `${msToSeconds(ms)} s`;
}

function trim(value: number, significant: number): string {
  return String(Number(value.toPrecision(significant)));
}

/** The rate under test, resolved: `5/s`, or `1.00 MiB/s (1048576 B/s)`. */
export function describeRate(unit: CostUnit, perSecond: number): string {
  if (unit === "count") return formatCountRate(round9(perSecond));
  if (perSecond === Infinity) return "unlimited";
  if (perSecond < 1024) return `${round9(perSecond)} B/s`;
  return `${humanByteRate(perSecond)} (${round9(perSecond)} B/s)`;
}

export function describeSize(unit: CostUnit, tokens: number): string {
  return unit === "count" ? String(tokens) : tokens >= 1024 ? `${humanBytes(tokens)} (${tokens} B)` : `${tokens} B`;
}

/** A throughput: `6.13/s` or `1.20 MiB/s`. */
export function describeThroughput(unit: CostUnit, perSecond: number): string {
  return unit === "count" ? `${trim(perSecond, 3)}/s` : humanByteRate(perSecond);
}

/** A share as a percentage with two decimals: 23.33%. */
export function percent(share: number): string {
  return `${(share * 100).toFixed(2)}%`;
}

/** Enough decimals to tell steps of `stepMs` apart. */
export function secondsDecimals(stepMs: number): number {
  return Math.max(0, Math.min(9, Math.ceil(-Math.log10(stepMs / 1000) - 1e-9)));
}
