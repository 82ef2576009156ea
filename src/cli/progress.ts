import ora from "ora";
import { humanByteRate, humanBytes, humanDuration } from "../core/format.js";
import type { PipeStats } from "./pipe-stats.js";

export interface ProgressOptions {
  read(): PipeStats;
  /** The expected total, for the percentage and ETA. */
  totalBytes: number | undefined;
  /** The bucket's level, where known. */
  level(): number | undefined;
  stream: NodeJS.WriteStream;
}

export interface ProgressDisplay {
  stop(final: PipeStats): void;
}

const TERMINAL_REFRESH_MS = 200;
const PLAIN_REFRESH_MS = 1000;
/** The current rate is measured over about this window. */
const RATE_WINDOW_MS = 1000;

/**
 * Progress on standard error: a spinner line redrawn in place on a terminal,
 * or one plain line a second elsewhere (when forced with --progress).
 */
export function startProgressDisplay(options: ProgressOptions): ProgressDisplay {
  // Progress that cannot be shown (standard error full or closed) is no reason to fail the copy.
  options.stream.on("error", () => {});
  const samples: Array<{ atMs: number; bytes: number }> = [];
  const describe = (stats: PipeStats): string => {
    samples.push({ atMs: stats.elapsedMs, bytes: stats.bytes });
    while (samples.length > 2 && samples[0]!.atMs < stats.elapsedMs - RATE_WINDOW_MS) samples.shift();
    const first = samples[0]!;
    const spanMs = stats.elapsedMs - first.atMs;
    const currentRate = spanMs > 0 ? ((stats.bytes - first.bytes) * 1000) / spanMs : 0;
    return describeProgress(stats, currentRate, options.level(), options.totalBytes);
  };
  // ora never returns on a terminal that reports no width (`script` without a size): plain lines there.
  if (options.stream.isTTY && options.stream.columns > 0) {
    const spinner = ora({ stream: options.stream, discardStdin: false, text: describe(options.read()) }).start();
    const timer = setInterval(() => (spinner.text = describe(options.read())), TERMINAL_REFRESH_MS);
    timer.unref();
    return {
      stop(final) {
        clearInterval(timer);
        spinner.stopAndPersist({ symbol: "", text: describe(final) });
      },
    };
  }
  const timer = setInterval(() => options.stream.write(`${describe(options.read())}\n`), PLAIN_REFRESH_MS);
  timer.unref();
  return {
    stop(final) {
      clearInterval(timer);
      options.stream.write(`${describe(final)}\n`);
    },
  };
}

/** One progress line: bytes, current and average rate, bucket level, percentage and ETA. */
export function describeProgress(stats: PipeStats, currentRate: number, level: number | undefined, totalBytes: number | undefined): string {
  const seconds = stats.elapsedMs / 1000;
  const average = seconds > 0 ? stats.bytes / seconds : 0;
  const parts = [
    humanBytes(stats.bytes),
    `${humanByteRate(currentRate)} (avg ${humanByteRate(average)}, ${stats.rate === 0 ? "paused" : `limit ${stats.kind === "bytes" ? humanByteRate(stats.rate) : `${stats.rate}/s`}`})`,
  ];
  if (stats.kind === "count") parts.push(`${stats.records} lines`);
  if (level !== undefined && Number.isFinite(stats.rate)) {
    parts.push(`bucket ${Math.round((Math.max(0, level) / stats.burst) * 100)}%`);
  }
  parts.push(humanDuration(stats.elapsedMs));
  if (totalBytes !== undefined && totalBytes > 0) {
    const share = Math.min(1, stats.bytes / totalBytes);
    parts.push(`${(share * 100).toFixed(1)}%`);
    const pace = Number.isFinite(stats.rate) && stats.kind === "bytes" ? Math.min(stats.rate, average || stats.rate) : average;
    if (share < 1 && pace > 0) parts.push(`ETA ${humanDuration(((totalBytes - stats.bytes) / pace) * 1000)}`);
  }
  return parts.join("  ");
}
