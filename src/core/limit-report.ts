import { humanAmount, humanDuration, humanRate, type TokenKind } from "./format.js";
import type { LimitSpec } from "./limit-spec.js";

/** One limit of a set in `--stats`: its settings, resolved, and how long the waits it set took. */
export interface LimitReport {
  /** From 1, in command-line order. */
  limit: number;
  /** How the command line gave it: `--rate 4mb`, `--window 2mb/1s`. */
  flag?: string;
  kind: LimitSpec["kind"];
  /** What it counts; absent for concurrency (items, one slot each). */
  unit?: string;
  /** A bucket's units a second (null: no limit) and burst. */
  rate?: number | null;
  burst?: number;
  /** A window's most in any `windowSeconds`, or concurrency's slots. */
  n?: number;
  windowSeconds?: number;
  /** Time spent in waits this limit set (waits several limits set count for each). */
  waitedSeconds: number;
  /** Items it refused (a wait past --max-wait); absent when none. */
  refused?: number;
}

/** Each limit's settings and the time of the waits it set, by index. */
export function limitReports(
  specs: readonly LimitSpec[],
  waitedMsBy: (index: number) => number,
  flags: readonly string[] = [],
  refusedBy: (index: number) => number = () => 0,
): LimitReport[] {
  return specs.map((spec, index) => {
    const head = { limit: index + 1, ...(flags[index] === undefined ? {} : { flag: flags[index] }), kind: spec.kind };
    const waitedSeconds = Math.round(waitedMsBy(index)) / 1000;
    const refused = refusedBy(index);
    const tail = { waitedSeconds, ...(refused > 0 ? { refused } : {}) };
    if (spec.kind === "bucket") return { ...head, unit: spec.unit, rate: spec.rate === Infinity ? null : spec.rate, burst: spec.burst, ...tail };
    if (spec.kind === "window") return { ...head, unit: spec.unit, n: spec.n, windowSeconds: spec.windowMs / 1000, ...tail };
    return { ...head, n: spec.n, ...tail };
  });
}

/** The limits that bound (set a wait or refused), the one that held longest first, then the one that refused most: `limitedBy`. */
export function limitedBy(reports: readonly LimitReport[]): number[] {
  return reports
    .filter((report) => report.waitedSeconds > 0 || (report.refused ?? 0) > 0)
    .sort((a, b) => b.waitedSeconds - a.waitedSeconds || (b.refused ?? 0) - (a.refused ?? 0) || a.limit - b.limit)
    .map((report) => report.limit);
}

/** A limit's settings for people: `4.00 MiB/s, burst 400.00 KiB`, `2.00 MiB in any 1.0 s`, `4 at once`. */
export function describeLimit(report: LimitReport): string {
  if (report.kind === "concurrency") return `${report.n} at once`;
  const kind: TokenKind = report.unit === "bytes" ? "bytes" : "count";
  const what = report.unit === "bytes" || report.unit === "count" ? "" : ` ${report.unit}`;
  if (report.kind === "bucket") return `${humanRate(kind, report.rate ?? Infinity)}${what}, burst ${humanAmount(kind, report.burst!)}`;
  return `${humanAmount(kind, report.n!)}${what} in any ${humanDuration(report.windowSeconds! * 1000)}`;
}

/**
 * `--stats` text of a set: `1 --rate 4mb (4.00 MiB/s, burst 409.60 KiB) waited
 * 0.2 s, 2 --window 2mb/1s (2.00 MiB in any 1.0 s) waited 1.4 s; limited by 2, 1`.
 */
export function formatLimitsText(reports: readonly LimitReport[]): string {
  const each = reports.map((report) => {
    const waited = report.waitedSeconds > 0 ? ` waited ${humanDuration(report.waitedSeconds * 1000)}` : "";
    const refused = report.refused === undefined ? "" : ` refused ${report.refused}`;
    return `${report.limit}${report.flag === undefined ? "" : ` ${report.flag}`} (${describeLimit(report)})${waited}${refused}`;
  });
  const bound = limitedBy(reports);
  return `${each.join(", ")}; ${bound.length === 0 ? "none set a wait" : `limited by ${bound.join(", ")}`}`;
}
