import { HUMAN_COUNT_RATE_WIDEST, HUMAN_DURATION_WIDEST, humanCountRate, humanDuration } from "../core/format.js";
import type { RunCounts } from "./job-runner.js";
import type { ClassShare } from "./run-report.js";

/** What the run's progress line shows besides the counts. */
export interface RunProgressView {
  /** Launches per second lately (the launch-rate meter). */
  launchesPerSecond: number;
  /** The limit, launches per second: Infinity for none, 0 when paused. */
  limitPerSecond: number;
  /** Jobs in all, when known (--count, or the lines of an --input file). */
  total?: number;
  /** Most jobs running at once (--jobs); Infinity: no limit. */
  jobs?: number;
  /** The shared bucket's key (--key), said next to the limit. */
  key?: string;
  /** The run is over (done, or stopped by a signal): the line shows no ETA. */
  ended?: boolean;
  /** --adaptive: the configured rate; the limit is then the rate followed now (`adaptive 41.2/s of 50/s`). */
  adaptiveCeiling?: number;
  /** With classes: each class's share of the launches so far (`web 75%, batch 25%`). */
  classes?: readonly ClassShare[];
  /** The server's pause still to wait, in ms (`paused by the server: 12 s`); 0 or absent when launches are not held. */
  serverPauseMs?: number;
}

/** A field of the line; the lowest dropRank goes first when the line is too wide (see cli/progress-line.ts). */
export interface RunProgressField {
  text: string;
  dropRank?: number;
  /** The most columns the text can take as its figure changes; an empty text keeps the room of a field that is away. */
  widest?: number;
}

/**
 * The progress line's fields: counts (`12/30 started` when the total is
 * known), the recent launch rate, the limit, and the time until the last
 * launch (ETA) at the pace of the recent launches, never above the limit.
 * Each says the widest it can be (a count as wide as the total, `59.9/min`
 * for a rate), so that the fields that fit hold from one redraw to the next
 * (issue 19: running and done were shown until the first launch, then went).
 */
export function runProgressFields(counts: Readonly<RunCounts>, view: RunProgressView): RunProgressField[] {
  const done = counts.succeeded + counts.failed + counts.interrupted;
  const total = view.total !== undefined && Number.isFinite(view.total) ? view.total : undefined;
  const mostRunning = Math.min(view.jobs ?? Infinity, total ?? Infinity);
  // No count passes the total (nor running --jobs), so each keeps room for its digits; without one a count only grows.
  const count = (value: number, noun: string, most = total ?? Infinity): RunProgressField =>
    Number.isFinite(most) ? { text: `${value} ${noun}`, widest: `${most} ${noun}`.length } : { text: `${value} ${noun}` };
  const key = view.key === undefined ? "" : `, key "${view.key}"`;
  const limit =
    view.limitPerSecond === Infinity
      ? "no limit"
      : view.limitPerSecond === 0
        ? "paused"
        : view.adaptiveCeiling !== undefined
          ? `adaptive ${humanCountRate(view.limitPerSecond)} of ${humanCountRate(view.adaptiveCeiling)}`
          : `limit ${humanCountRate(view.limitPerSecond)}`;
  const limitWidest = (view.adaptiveCeiling !== undefined ? "adaptive  of ".length + 2 * HUMAN_COUNT_RATE_WIDEST : "limit ".length + HUMAN_COUNT_RATE_WIDEST) + key.length;
  const fields: RunProgressField[] = [
    total === undefined ? { text: `${counts.started} started` } : { text: `${counts.started}/${total} started`, widest: `${total}/${total} started`.length },
    { ...count(counts.running, "running", mostRunning), dropRank: 5 },
    { ...count(done, "done"), dropRank: 6 },
    // None failed is the news a narrow line can spare; failures stay.
    counts.failed === 0 ? { ...count(0, "failed"), dropRank: 4 } : count(counts.failed, "failed"),
    ...(counts.interrupted > 0 ? [count(counts.interrupted, "interrupted")] : []),
    ...(counts.skipped > 0 ? [count(counts.skipped, "skipped")] : []),
    { text: humanCountRate(view.launchesPerSecond), widest: HUMAN_COUNT_RATE_WIDEST },
    view.limitPerSecond === 0 ? { text: `${limit}${key}` } : { text: `${limit}${key}`, widest: limitWidest, dropRank: 3 },
  ];
  // The server's word holds every launch: said before the figures a narrow line drops.
  if (view.serverPauseMs !== undefined && view.serverPauseMs > 0) fields.push({ text: serverPauseText(view.serverPauseMs) });
  if (view.classes !== undefined) {
    const shares = view.classes.map((c) => `${c.name} ${c.share === null ? "-" : `${Math.round(c.share * 100)}%`}`).join(", ");
    // Each share at most "100%": the field keeps the room of its widest.
    fields.push({ text: shares, widest: view.classes.reduce((sum, c) => sum + c.name.length + 5, 0) + 2 * (view.classes.length - 1), dropRank: 2 });
  }
  const pace = Math.min(view.limitPerSecond, view.launchesPerSecond);
  // Its room is kept while launches remain (none yet, a paused key); the last line has none.
  if (total !== undefined && counts.started < total && !view.ended) {
    const eta = pace > 0 ? `ETA ${humanDuration(((total - counts.started) / pace) * 1000)}` : "";
    fields.push({ text: eta, widest: "ETA ".length + HUMAN_DURATION_WIDEST });
  }
  return fields;
}

/** What the line (or, on a terminal, the spinner) says while the server's pause holds launches: whole seconds left, rounded up. */
export function serverPauseText(leftMs: number): string {
  return `paused by the server: ${Math.ceil(leftMs / 1000)} s`;
}

/** The progress line, whole: `12/30 started · 2 running · 9 done · 1 failed · 5.0/s · limit 5.0/s · ETA 3.6 s`. */
export function formatProgress(counts: Readonly<RunCounts>, view: RunProgressView): string {
  return runProgressFields(counts, view)
    .filter((field) => field.text !== "")
    .map((field) => field.text)
    .join(PROGRESS_SEPARATOR);
}

export const PROGRESS_SEPARATOR = " · ";
