import { humanCountRate, humanDuration } from "../core/format.js";
import type { RunCounts } from "./job-runner.js";

/** What the run's progress line shows besides the counts. */
export interface RunProgressView {
  /** Launches per second lately (the launch-rate meter). */
  launchesPerSecond: number;
  /** The limit, launches per second: Infinity for none, 0 when paused. */
  limitPerSecond: number;
  /** Jobs in all, when known (--count, or the lines of an --input file). */
  total?: number;
  /** The shared bucket's key (--key), said next to the limit. */
  key?: string;
  /** The run is over (done, or stopped by a signal): the line shows no ETA. */
  ended?: boolean;
}

/** A field of the line; the lowest dropRank goes first when the line is too wide (see cli/progress-line.ts). */
export interface RunProgressField {
  text: string;
  dropRank?: number;
}

/**
 * The progress line's fields: counts (`12/30 started` when the total is
 * known), the recent launch rate, the limit, and the time until the last
 * launch (ETA) at the pace of the recent launches, never above the limit.
 */
export function runProgressFields(counts: Readonly<RunCounts>, view: RunProgressView): RunProgressField[] {
  const done = counts.succeeded + counts.failed + counts.interrupted;
  const total = view.total !== undefined && Number.isFinite(view.total) ? view.total : undefined;
  const key = view.key === undefined ? "" : `, key "${view.key}"`;
  const limit = view.limitPerSecond === Infinity ? "no limit" : view.limitPerSecond === 0 ? "paused" : `limit ${humanCountRate(view.limitPerSecond)}`;
  const fields: RunProgressField[] = [
    { text: `${counts.started}${total === undefined ? "" : `/${total}`} started` },
    { text: `${counts.running} running`, dropRank: 5 },
    { text: `${done} done`, dropRank: 6 },
    // None failed is the news a narrow line can spare; failures stay.
    counts.failed === 0 ? { text: "0 failed", dropRank: 4 } : { text: `${counts.failed} failed` },
    ...(counts.interrupted > 0 ? [{ text: `${counts.interrupted} interrupted` }] : []),
    ...(counts.skipped > 0 ? [{ text: `${counts.skipped} skipped` }] : []),
    { text: humanCountRate(view.launchesPerSecond) },
    view.limitPerSecond === 0 ? { text: `${limit}${key}` } : { text: `${limit}${key}`, dropRank: 3 },
  ];
  const pace = Math.min(view.limitPerSecond, view.launchesPerSecond);
  if (total !== undefined && counts.started < total && pace > 0 && !view.ended) {
    fields.push({ text: `ETA ${humanDuration(((total - counts.started) / pace) * 1000)}` });
  }
  return fields;
}

/** The progress line, whole: `12/30 started · 2 running · 9 done · 1 failed · 5.0/s · limit 5.0/s · ETA 3.6 s`. */
export function formatProgress(counts: Readonly<RunCounts>, view: RunProgressView): string {
  return runProgressFields(counts, view)
    .map((field) => field.text)
    .join(PROGRESS_SEPARATOR);
}

export const PROGRESS_SEPARATOR = " · ";
