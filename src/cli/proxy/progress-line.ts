import { humanByteRate, humanBytes, humanDuration } from "../../core/format.js";
import type { TcpProxyStats } from "../../proxy/tcp-proxy.js";

const TERMINAL_REFRESH_MS = 500;
const PLAIN_REFRESH_MS = 1000;

export interface ProgressLine {
  stop(): void;
}

/**
 * A proxy's progress on standard error: redrawn in place on a terminal, one
 * plain line a second elsewhere (when forced with --progress).
 */
export function startProgressLine(describe: () => string, stream: NodeJS.WriteStream): ProgressLine {
  // Progress that cannot be shown is no reason to stop serving.
  stream.on("error", () => {});
  const terminal = Boolean(stream.isTTY);
  const draw = () => stream.write(terminal ? `\r\x1b[K${describe()}` : `${describe()}\n`);
  const timer = setInterval(draw, terminal ? TERMINAL_REFRESH_MS : PLAIN_REFRESH_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      // The last line stays, with the totals.
      stream.write(terminal ? `\r\x1b[K${describe()}\n` : `${describe()}\n`);
    },
  };
}

/** TCP mode: connections, bytes each way and their rate since the last line, time running. */
export function describeTcpProgress(read: () => Readonly<TcpProxyStats>): () => string {
  const startedMs = performance.now();
  let last = { atMs: startedMs, up: 0, down: 0 };
  return () => {
    const stats = read();
    const nowMs = performance.now();
    const seconds = Math.max(1e-3, (nowMs - last.atMs) / 1000);
    const line = [
      `${stats.open} open, ${stats.accepted} accepted${stats.refused > 0 ? `, ${stats.refused} refused` : ""}`,
      `up ${humanBytes(stats.bytesUp)} (${humanByteRate((stats.bytesUp - last.up) / seconds)})`,
      `down ${humanBytes(stats.bytesDown)} (${humanByteRate((stats.bytesDown - last.down) / seconds)})`,
      humanDuration(nowMs - startedMs),
    ].join("  ");
    last = { atMs: nowMs, up: stats.bytesUp, down: stats.bytesDown };
    return line;
  };
}

export interface HttpTally {
  admitted: number;
  queued: number;
  refused: number;
}

/** HTTP mode: requests admitted, queued and refused, their rate since the last line, keys held, time running. */
export function describeHttpProgress(read: () => Readonly<HttpTally>, liveKeys: () => number): () => string {
  const startedMs = performance.now();
  let last = { atMs: startedMs, requests: 0 };
  return () => {
    const tally = read();
    const nowMs = performance.now();
    const requests = tally.admitted + tally.queued + tally.refused;
    const perSecond = (requests - last.requests) / Math.max(1e-3, (nowMs - last.atMs) / 1000);
    last = { atMs: nowMs, requests };
    return [
      `${tally.admitted + tally.queued} admitted (${tally.queued} after waiting), ${tally.refused} refused`,
      `${perSecond.toFixed(1)} requests/s`,
      `${liveKeys()} keys`,
      humanDuration(nowMs - startedMs),
    ].join("  ");
  };
}
