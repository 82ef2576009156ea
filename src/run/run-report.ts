import { alignColumns, describeThroughput, humanDuration, percent, plural } from "../core/format.js";
import { formatCountRate } from "../core/units.js";
import type { RunCounts, RunResult } from "./job-runner.js";

/** The one-line summary: `12 started, 10 succeeded, 1 failed, 1 skipped, 2 retried`; `N interrupted` only when some were. */
export function formatSummary(counts: Readonly<RunCounts>): string {
  const interrupted = counts.interrupted > 0 ? `, ${counts.interrupted} interrupted` : "";
  return `${counts.started} started, ${counts.succeeded} succeeded, ${counts.failed} failed${interrupted}, ${counts.skipped} skipped, ${counts.retried} retried`;
}

export interface RunStats {
  started: number;
  succeeded: number;
  failed: number;
  /** Jobs that did not succeed after a signal was passed on to them. */
  interrupted: number;
  skipped: number;
  retried: number;
  /** Launches, retries included: each took one token. */
  launches: number;
  elapsedSeconds: number;
  /**
   * Launches beyond the burst per second, from the first launch to the last: the figure to
   * hold against `rate`, which it never exceeds on a correct run. Null when every launch fit in the burst.
   */
  steadyRate: number | null;
  /** Launches per second over the whole run, burst and the time after the last launch included: not a figure to compare with `rate`. */
  overallRate: number;
  /** The limit, tokens per second (null for no limit). */
  rate: number | null;
  burst: number;
  /** Total time jobs spent waiting for tokens. */
  waitSeconds: number;
  /** Job output that could not be written (a full disk, a reader gone): bytes, and newlines among them. */
  lostBytes: number;
  lostLines: number;
  /** --adaptive: the configured ceiling (also `rate`), the rate followed at the end and the lowest, and the server's throttles and the cuts they made. */
  adaptive?: AdaptiveStats;
}

export interface AdaptiveStats {
  ceiling: number;
  rate: number;
  lowest: number;
  throttles: number;
  cuts: number;
}

/** Job output that could not be written. */
export interface LostOutput {
  bytes: number;
  lines: number;
}

/** `3 lines (12 bytes) of job output not written`. */
export function describeLostOutput(lost: LostOutput): string {
  return `${plural(lost.lines, "line")} (${plural(lost.bytes, "byte")}) of job output not written`;
}

/** `steadyRate` comes from the run's LaunchRateMeter (launches per second beyond the burst). */
export function runStats(
  result: RunResult,
  rate: number,
  burst: number,
  steadyRate: number | undefined,
  lost: LostOutput = { bytes: 0, lines: 0 },
  adaptive?: AdaptiveStats,
): RunStats {
  const { counts } = result;
  const launches = counts.started + counts.retried;
  const elapsedSeconds = result.elapsedMs / 1000;
  return {
    started: counts.started,
    succeeded: counts.succeeded,
    failed: counts.failed,
    interrupted: counts.interrupted,
    skipped: counts.skipped,
    retried: counts.retried,
    launches,
    elapsedSeconds: round3(elapsedSeconds),
    steadyRate: steadyRate === undefined ? null : round3(steadyRate),
    overallRate: elapsedSeconds > 0 ? round3(launches / elapsedSeconds) : 0,
    rate: rate === Infinity ? null : rate,
    burst,
    waitSeconds: round3(result.waitMs / 1000),
    lostBytes: lost.bytes,
    lostLines: lost.lines,
    ...(adaptive && { adaptive: { ...adaptive, rate: round3(adaptive.rate), lowest: round3(adaptive.lowest) } }),
  };
}

/** A class's part of the launches (--class): how many, and their share of all (null when none launched). */
export interface ClassShare {
  name: string;
  launches: number;
  share: number | null;
}

/** Each class's launches (retries included) and its share of them all. */
export function classShares(names: readonly string[], launches: ArrayLike<number>): ClassShare[] {
  let total = 0;
  for (let i = 0; i < names.length; i++) total += launches[i]!;
  return names.map((name, i) => ({ name, launches: launches[i]!, share: total > 0 ? Math.round((launches[i]! / total) * 10_000) / 10_000 : null }));
}

/** `web 45 (75%), batch 15 (25%)`. */
export function formatClassesText(shares: readonly ClassShare[]): string {
  return shares.map((c) => `${c.name} ${c.launches}${c.share === null ? "" : ` (${percent(c.share)})`}`).join(", ");
}

/**
 * `--stats text`: a few aligned lines. With a set of limits, `limits` describes
 * them (one line) and the launches line points to it instead of naming one rate.
 */
export function formatStatsText(stats: RunStats, limits?: string, classes?: readonly ClassShare[]): string {
  const launchRate = limits === undefined ? describeLaunchRate(stats) : stats.launches > 0 ? " (limits below)" : "";
  const rows = [
    ["jobs:", formatSummary({ ...stats, running: 0 })],
    ["launches:", `${stats.launches} in ${humanDuration(stats.elapsedSeconds * 1000)}${launchRate}`],
    ["waited:", `${humanDuration(stats.waitSeconds * 1000)} for tokens in total`],
    ...(stats.lostBytes > 0 ? [["lost:", describeLostOutput({ lines: stats.lostLines, bytes: stats.lostBytes })]] : []),
    ...(limits === undefined ? [] : [["limits:", limits]]),
    ...(classes === undefined ? [] : [["classes:", formatClassesText(classes)]]),
    ...(stats.adaptive === undefined ? [] : [["adaptive:", describeAdaptive(stats.adaptive)]]),
  ];
  return alignColumns(rows, { gap: " " }).join("\n") + "\n";
}

/**
 * The rate part of the launches line: `, 5/s after the burst (limit 5/s, burst 1)`. Only the
 * rate after the burst is shown, the one figure a correct run keeps at or under the limit.
 */
function describeLaunchRate(stats: RunStats): string {
  const steady = stats.steadyRate === null ? undefined : describeThroughput("count", stats.steadyRate);
  if (stats.rate === null) return steady === undefined ? " (no limit)" : `, ${steady} (no limit)`;
  const limit = `(limit ${formatCountRate(stats.rate)}, burst ${stats.burst})`;
  if (steady !== undefined) return `, ${steady} after the burst ${limit}`;
  return stats.launches > 1 && stats.launches <= stats.burst ? `, all within the burst ${limit}` : ` ${limit}`;
}

/** `12.4/s at the end, lowest 9.8/s, of 20/s; 5 throttles, 2 cuts`. */
function describeAdaptive(adaptive: AdaptiveStats): string {
  const throttles = `${plural(adaptive.throttles, "throttle")}, ${plural(adaptive.cuts, "cut")}`;
  return `${formatCountRate(adaptive.rate)} at the end, lowest ${formatCountRate(adaptive.lowest)}, of ${formatCountRate(adaptive.ceiling)}; ${throttles}`;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
