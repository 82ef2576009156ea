import { alignColumns, humanDuration, plural } from "../core/format.js";
import { formatCountRate } from "../core/units.js";
import type { RunCounts, RunResult } from "./job-runner.js";

/** The one-line summary: `12 started, 10 succeeded, 1 failed, 1 skipped, 2 retried`. */
export function formatSummary(counts: Readonly<RunCounts>): string {
  return `${counts.started} started, ${counts.succeeded} succeeded, ${counts.failed} failed, ${counts.skipped} skipped, ${counts.retried} retried`;
}

export interface RunStats {
  started: number;
  succeeded: number;
  failed: number;
  skipped: number;
  retried: number;
  /** Launches, retries included: each took one token. */
  launches: number;
  elapsedSeconds: number;
  /** Launches per second over the run. */
  launchRate: number;
  /** The limit, tokens per second (null for no limit). */
  rate: number | null;
  burst: number;
  /** Total time jobs spent waiting for tokens. */
  waitSeconds: number;
  /** Job output that could not be written (a full disk, a reader gone): bytes, and newlines among them. */
  lostBytes: number;
  lostLines: number;
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

export function runStats(result: RunResult, rate: number, burst: number, lost: LostOutput = { bytes: 0, lines: 0 }): RunStats {
  const { counts } = result;
  const launches = counts.started + counts.retried;
  const elapsedSeconds = result.elapsedMs / 1000;
  return {
    started: counts.started,
    succeeded: counts.succeeded,
    failed: counts.failed,
    skipped: counts.skipped,
    retried: counts.retried,
    launches,
    elapsedSeconds: round3(elapsedSeconds),
    launchRate: elapsedSeconds > 0 ? round3(launches / elapsedSeconds) : 0,
    rate: rate === Infinity ? null : rate,
    burst,
    waitSeconds: round3(result.waitMs / 1000),
    lostBytes: lost.bytes,
    lostLines: lost.lines,
  };
}

/** `--stats text`: a few aligned lines. */
export function formatStatsText(stats: RunStats): string {
  const limit = stats.rate === null ? "none" : `${formatCountRate(stats.rate)}, burst ${stats.burst}`;
  const rows = [
    ["jobs:", `${stats.started} started, ${stats.succeeded} succeeded, ${stats.failed} failed, ${stats.skipped} skipped, ${stats.retried} retried`],
    ["launches:", `${stats.launches} in ${humanDuration(stats.elapsedSeconds * 1000)} (${stats.launchRate}/s; limit ${limit})`],
    ["waited:", `${humanDuration(stats.waitSeconds * 1000)} for tokens in total`],
    ...(stats.lostBytes > 0 ? [["lost:", describeLostOutput({ lines: stats.lostLines, bytes: stats.lostBytes })]] : []),
  ];
  return alignColumns(rows, { gap: " " }).join("\n") + "\n";
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
