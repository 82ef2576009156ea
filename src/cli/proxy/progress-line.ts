import { humanByteRate, humanBytes, humanDuration } from "../../core/format.js";
import type { TcpProxyStats } from "../../proxy/tcp-proxy.js";
import { DROP, fitFields, type ProgressField, type ProgressLine, progressStyle, startProgressLine } from "../progress-line.js";
import { joinProgressRows } from "../progress-rows.js";
import { RateWindow } from "../rate-window.js";

/** Rates on the line are measured over about this window, as the pipe's. */
const RATE_WINDOW_MS = 1000;

export interface ProxyProgressOptions {
  /** The line's text in at most `width` columns. */
  describe(width: number): string;
  /** -N: the line's name. */
  name?: string;
  stream: NodeJS.WriteStream;
  env: NodeJS.ProcessEnv;
}

/**
 * A proxy's progress on standard error, with the pipe's and run's display
 * (progress-line.ts): redrawn in place where the terminal can, fitted to its
 * width, a plain line a second elsewhere, a row of its own with -N.
 */
export function startProxyProgress(options: ProxyProgressOptions): ProgressLine {
  const named = options.name !== undefined && progressStyle(options.stream, options.env) === "redraw";
  return startProgressLine({
    stream: options.stream,
    env: options.env,
    name: options.name,
    row: named ? joinProgressRows(options.stream, options.env) : undefined,
    describe: options.describe,
  });
}

/**
 * TCP mode: connections open and accepted, bytes each way and their rate
 * over the last second, time running. On a narrow terminal the refusals and
 * evictions go first, then the time, then the upload.
 */
export function describeTcpProgress(read: () => Readonly<TcpProxyStats>): (width: number) => string {
  const startedMs = performance.now();
  const up = new RateWindow(RATE_WINDOW_MS);
  const down = new RateWindow(RATE_WINDOW_MS);
  return (width) => {
    const stats = read();
    const nowMs = performance.now();
    up.record(nowMs, stats.bytesUp);
    down.record(nowMs, stats.bytesDown);
    const fields: ProgressField[] = [{ text: `${stats.open} open, ${stats.accepted} accepted` }];
    if (stats.refused > 0) fields.push({ text: `${stats.refused} refused`, dropRank: DROP.average });
    if (stats.evicted > 0) fields.push({ text: `${stats.evicted} idle closed`, dropRank: DROP.average });
    fields.push({ text: `up ${humanBytes(stats.bytesUp)} (${humanByteRate(up.rateOver(RATE_WINDOW_MS))})`, dropRank: DROP.secondary });
    fields.push({ text: `down ${humanBytes(stats.bytesDown)} (${humanByteRate(down.rateOver(RATE_WINDOW_MS))})` });
    fields.push({ text: humanDuration(nowMs - startedMs), dropRank: DROP.elapsed });
    return fitFields(fields, width);
  };
}

export interface HttpTally {
  admitted: number;
  queued: number;
  refused: number;
}

/** HTTP mode: requests admitted, queued and refused, their rate over the last second, keys held, time running. */
export function describeHttpProgress(read: () => Readonly<HttpTally>, liveKeys: () => number): (width: number) => string {
  const startedMs = performance.now();
  const requests = new RateWindow(RATE_WINDOW_MS);
  return (width) => {
    const tally = read();
    const nowMs = performance.now();
    requests.record(nowMs, tally.admitted + tally.queued + tally.refused);
    return fitFields(
      [
        { text: `${tally.admitted + tally.queued} admitted (${tally.queued} after waiting), ${tally.refused} refused` },
        { text: `${requests.rateOver(RATE_WINDOW_MS).toFixed(1)} requests/s` },
        { text: `${liveKeys()} keys`, dropRank: DROP.secondary },
        { text: humanDuration(nowMs - startedMs), dropRank: DROP.elapsed },
      ],
      width,
    );
  };
}
