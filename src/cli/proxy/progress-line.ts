import { type Clock, systemClock } from "../../core/clock.js";
import { HUMAN_BYTE_RATE_WIDEST, HUMAN_BYTES_WIDEST, HUMAN_DURATION_WIDEST, humanByteRate, humanBytes, humanDuration, widestOf } from "../../core/format.js";
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

/** `down 1023.99 KiB (1023.99 KiB/s)`: bytes one way and their rate. */
function transferField(way: "up" | "down", bytes: number, perSecond: number): ProgressField {
  return { text: `${way} ${humanBytes(bytes)} (${humanByteRate(perSecond)})`, widest: `${way} `.length + HUMAN_BYTES_WIDEST + " ()".length + HUMAN_BYTE_RATE_WIDEST };
}

/**
 * TCP mode: connections open and accepted, bytes each way and their rate
 * over the last second, time running. On a narrow terminal the refusals and
 * evictions go first, then the time, then the upload. Which fields fit is
 * decided from the widest each figure can be, as on the pipe's line, so that
 * the time does not come and go as a rate reads 1.09 MiB/s, then 1022.56 KiB/s.
 * `clock` is a fake one in tests.
 */
export function describeTcpProgress(read: () => Readonly<TcpProxyStats>, clock: Pick<Clock, "now"> = systemClock): (width: number) => string {
  const startedMs = clock.now();
  const up = new RateWindow(RATE_WINDOW_MS);
  const down = new RateWindow(RATE_WINDOW_MS);
  return (width) => {
    const stats = read();
    const nowMs = clock.now();
    up.record(nowMs, stats.bytesUp);
    down.record(nowMs, stats.bytesDown);
    // No more are open than were accepted: the open count keeps room for as many digits.
    const fields: ProgressField[] = [{ text: `${stats.open} open, ${stats.accepted} accepted`, widest: `${stats.accepted} open, ${stats.accepted} accepted`.length }];
    if (stats.refused > 0) fields.push({ text: `${stats.refused} refused`, dropRank: DROP.average });
    if (stats.evicted > 0) fields.push({ text: `${stats.evicted} idle closed`, dropRank: DROP.average });
    fields.push({ ...transferField("up", stats.bytesUp, up.rateOver(RATE_WINDOW_MS)), dropRank: DROP.secondary });
    fields.push(transferField("down", stats.bytesDown, down.rateOver(RATE_WINDOW_MS)));
    fields.push({ text: humanDuration(nowMs - startedMs), widest: HUMAN_DURATION_WIDEST, dropRank: DROP.elapsed });
    return fitFields(fields, width);
  };
}

export interface HttpTally {
  admitted: number;
  queued: number;
  refused: number;
}

const requestRate = (perSecond: number) => `${perSecond.toFixed(1)} requests/s`;
/** Below 100,000 requests a second: `99999.9 requests/s`. */
const REQUEST_RATE_WIDEST = widestOf(requestRate, [99_999.9]);

/**
 * HTTP mode: requests admitted, queued and refused, their rate over the last
 * second, keys held, time running; laid out from the widest each figure can
 * be, as TCP mode's line.
 */
export function describeHttpProgress(read: () => Readonly<HttpTally>, liveKeys: () => number, clock: Pick<Clock, "now"> = systemClock): (width: number) => string {
  const startedMs = clock.now();
  const requests = new RateWindow(RATE_WINDOW_MS);
  return (width) => {
    const tally = read();
    const nowMs = clock.now();
    const seen = tally.admitted + tally.queued + tally.refused;
    requests.record(nowMs, seen);
    return fitFields(
      [
        { text: `${tally.admitted + tally.queued} admitted (${tally.queued} after waiting), ${tally.refused} refused` },
        { text: requestRate(requests.rateOver(RATE_WINDOW_MS)), widest: REQUEST_RATE_WIDEST },
        // Each key came with a request: no more are held than were seen.
        { text: `${liveKeys()} keys`, widest: `${seen} keys`.length, dropRank: DROP.secondary },
        { text: humanDuration(nowMs - startedMs), widest: HUMAN_DURATION_WIDEST, dropRank: DROP.elapsed },
      ],
      width,
    );
  };
}
