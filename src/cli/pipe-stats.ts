import { humanByteRate, humanBytes, humanDuration } from "../core/format.js";
import type { RateKind } from "../core/units.js";
import type { StatsFormat } from "./report-options.js";

/** What a pipe did, for --stats and the last progress line. */
export interface PipeStats {
  bytes: number;
  /** Lines (records) that went out; undefined when the bytes went through the kernel unseen (splice). */
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
}

/** The --stats summary: one text line, or one JSON object, each ending in a newline. */
export function formatPipeStats(stats: PipeStats, format: StatsFormat): string {
  const seconds = stats.elapsedMs / 1000;
  const averageBytesPerSecond = seconds > 0 ? stats.bytes / seconds : 0;
  if (format === "json") {
    return `${JSON.stringify({
      bytes: stats.bytes,
      lines: stats.records ?? null,
      seconds: round(seconds, 6),
      averageBytesPerSecond: round(averageBytesPerSecond, 3),
      waitedSeconds: round(stats.waitedMs / 1000, 6),
      rate: stats.rate === Infinity ? null : stats.rate,
      rateUnit: stats.kind === "bytes" ? "bytes/s" : "lines/s",
      burst: stats.burst,
      zeroCopy: stats.zeroCopy ?? false,
      ...(stats.smallestSteadyBurst === undefined ? {} : { burstBelowTimerTick: true, smallestSteadyBurst: stats.smallestSteadyBurst }),
    })}\n`;
  }
  const limit =
    stats.rate === Infinity
      ? "no limit"
      : stats.kind === "bytes"
        ? `limit ${humanByteRate(stats.rate)} = ${Math.round(stats.rate).toLocaleString("en-US")} B/s, burst ${stats.burst.toLocaleString("en-US")} B`
        : `limit ${stats.rate}/s, burst ${stats.burst}`;
  return (
    `tbucket: ${stats.bytes.toLocaleString("en-US")} bytes (${humanBytes(stats.bytes)})` +
    (stats.records === undefined ? " " : `, ${stats.records.toLocaleString("en-US")} lines `) +
    `in ${humanDuration(stats.elapsedMs)}, average ${humanByteRate(averageBytesPerSecond)}` +
    ` (${Math.round(averageBytesPerSecond).toLocaleString("en-US")} B/s); waited ${humanDuration(stats.waitedMs)} for tokens; ${limit}` +
    (stats.smallestSteadyBurst === undefined
      ? ""
      : `; burst smaller than one timer tick of the rate, which it may not keep: --burst ${Math.ceil(stats.smallestSteadyBurst / 1024)}k can`) +
    "\n"
  );
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
