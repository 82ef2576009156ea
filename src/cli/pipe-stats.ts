import { exactByteRate, humanByteRate, humanBytes, humanCountRate, humanDuration } from "../core/format.js";
import { formatLimitsText, type LimitReport, limitedBy } from "../core/limit-report.js";
import type { RateKind } from "../core/units.js";
import type { StatsFormat } from "./report-options.js";

/** What a pipe did, for --stats and the last progress line. */
export interface PipeStats {
  bytes: number;
  /** Lines (records) that went out, in line mode; undefined when not counted (byte mode, or splice). */
  records: number | undefined;
  elapsedMs: number;
  waitedMs: number;
  /** The bucket's rate and burst at the end, resolved to numbers. */
  rate: number;
  burst: number;
  kind: RateKind;
  /** The bytes went from input to output inside the kernel (splice(2)), never through tbucket's memory. */
  zeroCopy?: boolean;
  /**
   * Set when the burst is smaller than a slice and one timer tick of the rate:
   * the smallest burst that can keep the rate, which this one may not.
   */
  smallestSteadyBurst?: number;
  /** A set of limits: each one's settings and waits (rate, burst and kind are then its main unit's). */
  limits?: LimitReport[];
  /** A class of a shared key (`--class`): its name and the rate the key's classes share. */
  class?: { name: string; sharedRate: number };
}

/**
 * The average past the burst, in the limit's tokens a second: (tokens − burst) / time.
 * A bucket that starts full lets out at most burst + rate × time, so this
 * figure stays at or below the limit where the plain average (burst
 * included) may be far above it. Undefined without a limit, before the
 * burst is spent, or when the tokens are lines that were not counted.
 */
export function steadyRate(stats: PipeStats): number | undefined {
  const tokens = stats.kind === "count" ? stats.records : stats.bytes;
  if (!Number.isFinite(stats.rate) || tokens === undefined || tokens <= stats.burst || stats.elapsedMs <= 0) return undefined;
  return ((tokens - stats.burst) * 1000) / stats.elapsedMs;
}

/** Every token fitted in the bucket's burst, so the limit never set the pace (as run's --stats says). */
function allWithinBurst(stats: PipeStats): boolean {
  const tokens = stats.kind === "count" ? stats.records : stats.bytes;
  return Number.isFinite(stats.rate) && tokens !== undefined && tokens > 0 && tokens <= stats.burst;
}

/** The --stats summary: one text line, or one JSON object, each ending in a newline. */
export function formatPipeStats(stats: PipeStats, format: StatsFormat): string {
  const seconds = stats.elapsedMs / 1000;
  const averageBytesPerSecond = seconds > 0 ? stats.bytes / seconds : 0;
  const linesPerSecond = stats.records === undefined ? undefined : seconds > 0 ? stats.records / seconds : 0;
  // Past the burst means nothing against a set: a window lets its n through at once.
  const steady = stats.limits === undefined ? steadyRate(stats) : undefined;
  if (format === "json") {
    return `${JSON.stringify({
      bytes: stats.bytes,
      lines: stats.records ?? null,
      seconds: round(seconds, 6),
      averageBytesPerSecond: round(averageBytesPerSecond, 3),
      averageLinesPerSecond: linesPerSecond === undefined ? null : round(linesPerSecond, 3),
      // In the limit's unit (rateUnit): the figure to hold against the limit.
      averagePastBurst: steady === undefined ? null : round(steady, 3),
      waitedSeconds: round(stats.waitedMs / 1000, 6),
      rate: stats.rate === Infinity ? null : stats.rate,
      rateUnit: stats.kind === "bytes" ? "bytes/s" : "lines/s",
      burst: stats.burst,
      zeroCopy: stats.zeroCopy ?? false,
      ...(stats.smallestSteadyBurst === undefined ? {} : { burstBelowTimerTick: true, smallestSteadyBurst: stats.smallestSteadyBurst }),
      ...(stats.limits === undefined ? {} : { limits: stats.limits, limitedBy: limitedBy(stats.limits) }),
      ...(stats.class === undefined ? {} : { class: stats.class.name, share: round(classShare(stats, averageBytesPerSecond, linesPerSecond), 4) }),
    })}\n`;
  }
  const limit =
    stats.limits !== undefined
      ? `limits ${formatLimitsText(stats.limits)}`
      : stats.rate === Infinity
      ? "no limit"
      : stats.kind === "bytes"
        ? `limit ${humanByteRate(stats.rate)} = ${exactByteRate(stats.rate)}, burst ${stats.burst.toLocaleString("en-US")} B`
        : `limit ${stats.rate}/s, burst ${stats.burst}`;
  // Without a figure past the burst, an average far above the limit needs its reason next to it.
  const pastBurst =
    steady !== undefined
      ? `, ${stats.kind === "bytes" ? humanByteRate(steady) : humanCountRate(steady).replace("/", " lines/")} past the burst`
      : stats.limits === undefined && allWithinBurst(stats)
        ? ", all within the burst"
        : "";
  const lineRate = linesPerSecond === undefined ? "" : `${humanCountRate(linesPerSecond).replace("/", " lines/")} and `;
  return (
    `tbucket: ${stats.bytes.toLocaleString("en-US")} bytes (${humanBytes(stats.bytes)})` +
    (stats.records === undefined ? " " : `, ${stats.records.toLocaleString("en-US")} lines `) +
    `in ${humanDuration(stats.elapsedMs)}, average ${lineRate}${humanByteRate(averageBytesPerSecond)}` +
    ` (${exactByteRate(averageBytesPerSecond)})${pastBurst}; waited ${humanDuration(stats.waitedMs)} for tokens; ${limit}` +
    (stats.class === undefined
      ? ""
      : `; class ${stats.class.name}, ${(classShare(stats, averageBytesPerSecond, linesPerSecond) * 100).toFixed(1)}% of the ${stats.kind === "bytes" ? humanByteRate(stats.class.sharedRate) : humanCountRate(stats.class.sharedRate)} the classes share`) +
    (stats.smallestSteadyBurst === undefined
      ? ""
      : `; burst smaller than one timer tick of the rate, which it may not keep: --burst ${Math.ceil(stats.smallestSteadyBurst / 1024)}k can`) +
    "\n"
  );
}

/** What the class's pipe moved on average, as a fraction of the rate the key's classes share. */
function classShare(stats: PipeStats, bytesPerSecond: number, linesPerSecond: number | undefined): number {
  const rate = stats.kind === "bytes" ? bytesPerSecond : (linesPerSecond ?? 0);
  return stats.class && stats.class.sharedRate > 0 ? rate / stats.class.sharedRate : 0;
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
