import {
  HUMAN_BYTE_RATE_WIDEST,
  HUMAN_BYTES_WIDEST,
  HUMAN_COUNT_RATE_WIDEST,
  HUMAN_DURATION_WIDEST,
  humanByteRate,
  humanBytes,
  humanCountRate,
  humanDuration,
} from "../core/format.js";
import type { PipeStats } from "./pipe-stats.js";
import { steadyRate } from "./pipe-stats.js";
import { DROP, fitFields, type ProgressField, progressStyle, startProgressLine } from "./progress-line.js";
import { joinProgressRows } from "./progress-rows.js";
import { RateWindow } from "./rate-window.js";

export interface ProgressOptions {
  read(): PipeStats;
  /** The expected total, for the percentage and ETA. */
  totalBytes: number | undefined;
  /** The bucket's level, where known. */
  level(): number | undefined;
  /** The shared bucket's key (--key), said next to the limit. */
  key?: string;
  /** -N: the line's name. */
  name?: string;
  stream: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
}

export interface ProgressDisplay {
  /**
   * Output is about to go to the terminal the line is on (stdout and stderr
   * one terminal, with -p): the line clears itself, and is drawn again after
   * output that ends a line, so the two never overwrite each other.
   */
  aroundOutput(write: () => void | Promise<void>, endsLine: boolean): void | Promise<void>;
  stop(final: PipeStats): void;
}

/** The current rate is measured over about this window. */
export const CURRENT_RATE_WINDOW_MS = 1000;
/**
 * The ETA's rate: the rate over this window, as pv's --average-rate-window: it
 * follows a change of the limit (key set) or of the share of a key within
 * seconds, where the lifetime average would take as long as the run so far.
 */
export const ETA_RATE_WINDOW_MS = 5000;

/** What the line shows besides the stats: rates measured over windows, the bucket, the total. */
export interface ProgressView {
  /** Tokens (bytes, or lines for a line rate) per second over the last second. */
  currentRate: number;
  /** Bytes per second over the ETA's window. */
  etaBytesPerSecond: number;
  /** The copy is over: the line shows no ETA. */
  ended?: boolean;
  level: number | undefined;
  totalBytes: number | undefined;
  key?: string;
}

/** Samples the stats as the line is drawn and keeps the windows' rates. */
export class PipeProgressMeter {
  #tokens = new RateWindow(CURRENT_RATE_WINDOW_MS);
  #bytes = new RateWindow(ETA_RATE_WINDOW_MS);
  #last: PipeStats | undefined;

  record(stats: PipeStats): { currentRate: number; etaBytesPerSecond: number } {
    this.#tokens.record(stats.elapsedMs, stats.kind === "count" ? (stats.records ?? 0) : stats.bytes);
    // A new limit (key set, --key --rate elsewhere) makes the window's older samples another pace:
    // the ETA's window starts again from the last sample, so it follows at once, not a window later.
    if (this.#last !== undefined && this.#last.rate !== stats.rate) {
      this.#bytes = new RateWindow(ETA_RATE_WINDOW_MS);
      this.#bytes.record(this.#last.elapsedMs, this.#last.bytes);
    }
    this.#last = stats;
    this.#bytes.record(stats.elapsedMs, stats.bytes);
    return { currentRate: this.#tokens.rateOver(CURRENT_RATE_WINDOW_MS), etaBytesPerSecond: this.#bytes.rateOver(ETA_RATE_WINDOW_MS) };
  }
}

/**
 * Progress on standard error (progress-line.ts): redrawn in place on a
 * terminal, or a plain line a second where it cannot redraw.
 */
export function startProgressDisplay(options: ProgressOptions): ProgressDisplay {
  const meter = new PipeProgressMeter();
  let read = options.read;
  // The last line: the copy is over (done, or its reader gone), so no ETA is left to give.
  let ended = false;
  // A first sample at the start: the first plain line, a second later, has a rate.
  meter.record(read());
  const line = startProgressLine({
    stream: options.stream,
    env: options.env,
    name: options.name,
    row: options.name !== undefined && progressStyle(options.stream, options.env) === "redraw" ? joinProgressRows(options.stream, options.env) : undefined,
    describe(width) {
      const stats = read();
      return describeProgress(stats, { ...meter.record(stats), level: options.level(), totalBytes: options.totalBytes, key: options.key, ended }, width);
    },
  });
  return {
    aroundOutput(write, endsLine) {
      // Cleared once until the output ends a line: a redraw (from column 0) would cover a part of one.
      line.clear();
      const redraw = () => {
        if (endsLine) line.draw();
      };
      const written = write();
      return written ? written.then(redraw) : redraw();
    },
    stop(final) {
      read = () => final;
      ended = true;
      line.stop();
    },
  };
}

const LINES = " lines";
const lineRate = (perSecond: number) => humanCountRate(perSecond).replace("/", `${LINES}/`);
/** `59.9 lines/min`, `99999 lines/s`. */
const LINE_RATE_WIDEST = HUMAN_COUNT_RATE_WIDEST + LINES.length;

/**
 * One progress line, fitted to `width`: the amount, the current rate, the
 * average past the burst (the figure a user can hold against the limit), the
 * limit (and its key), the bucket's level, the time, the percentage and ETA.
 * For a line rate, lines come first and bytes last. Which fields fit is
 * decided from the widest each figure can be, so that the layout holds from
 * one redraw to the next (issue 19: the percentage came and went as the rate
 * read 1.09 MiB/s, then 1022.56 KiB/s).
 */
export function describeProgress(stats: PipeStats, view: ProgressView, width = Infinity): string {
  const lines = stats.kind === "count";
  const perSecond = lines ? lineRate : humanByteRate;
  const rateWidest = lines ? LINE_RATE_WIDEST : HUMAN_BYTE_RATE_WIDEST;
  const limited = Number.isFinite(stats.rate);
  const fields: ProgressField[] = [lines ? { text: `${stats.records ?? 0} lines` } : { text: humanBytes(stats.bytes), widest: HUMAN_BYTES_WIDEST }];
  // Above the limit only while the burst goes out: said so, not left to look like a broken limit.
  const inBurst = limited && stats.rate > 0 && view.currentRate > stats.rate * 1.02;
  fields.push({ text: perSecond(view.currentRate), widest: rateWidest });
  // Goes with the limit: without the limit on the line there is nothing to explain. Its room is kept while it is away.
  if (limited && stats.rate > 0) fields.push({ text: inBurst ? "(burst)" : "", widest: "(burst)".length, dropRank: DROP.limit });
  const average = steadyRate(stats);
  if (average !== undefined) fields.push({ text: `avg ${perSecond(average)}`, widest: "avg ".length + rateWidest, dropRank: DROP.average });
  const key = view.key === undefined ? "" : `, key "${view.key}"${stats.class ? ` as ${stats.class.name}` : ""}`;
  if (stats.rate === 0) {
    fields.push({ text: `paused${key}` });
  } else {
    const limit = !limited ? "no limit" : `limit ${lines ? humanCountRate(stats.rate) : humanByteRate(stats.rate)}`;
    fields.push({ text: `${limit}${key}`, dropRank: DROP.limit });
  }
  if (view.level !== undefined && limited) {
    fields.push({ text: `bucket ${Math.round((Math.max(0, view.level) / stats.burst) * 100)}%`, widest: "bucket 100%".length, dropRank: DROP.bucket });
  }
  fields.push({ text: humanDuration(stats.elapsedMs), widest: HUMAN_DURATION_WIDEST, dropRank: DROP.elapsed });
  // The other unit last: bytes for a line rate, lines for --lines with a byte rate.
  if (lines) fields.push({ text: humanBytes(stats.bytes), widest: HUMAN_BYTES_WIDEST, dropRank: DROP.secondary });
  else if (stats.records !== undefined) fields.push({ text: `${stats.records} lines`, dropRank: DROP.secondary });
  if (view.totalBytes !== undefined && view.totalBytes > 0) {
    // Past 100% when more came than --size said, as pv shows it: a pinned 100.0% would look finished.
    const share = stats.bytes / view.totalBytes;
    fields.push({ text: `${(share * 100).toFixed(1)}%`, widest: "100.0%".length, dropRank: DROP.percentage });
    // Never faster than the limit (the window may still hold the burst); none while paused.
    const pace = limited && !lines ? Math.min(stats.rate, view.etaBytesPerSecond) : stats.rate === 0 ? 0 : view.etaBytesPerSecond;
    // Its room is kept while the copy goes on (paused, no pace yet); the last line has none.
    const eta = share < 1 && pace > 0 && !view.ended ? `ETA ${humanDuration(((view.totalBytes - stats.bytes) / pace) * 1000)}` : "";
    if (share < 1 && !view.ended) fields.push({ text: eta, widest: "ETA ".length + HUMAN_DURATION_WIDEST });
  }
  return fitFields(fields, width);
}
