import { humanByteRate, humanBytes, humanDuration } from "../../core/format.js";
import type { TcpProxyStats } from "../../proxy/tcp-proxy.js";

const TERMINAL_REFRESH_MS = 500;
const PLAIN_REFRESH_MS = 1000;

export interface ProxyProgress {
  stop(): void;
}

/**
 * The proxy's progress on standard error: connections open, bytes each way
 * and their rate over the last refresh. Redrawn in place on a terminal, one
 * plain line a second elsewhere (when forced with --progress).
 */
export function startProxyProgress(read: () => Readonly<TcpProxyStats>, stream: NodeJS.WriteStream): ProxyProgress {
  stream.on("error", () => {});
  const terminal = Boolean(stream.isTTY);
  const startedMs = performance.now();
  let last = { atMs: startedMs, up: 0, down: 0 };
  const describe = (): string => {
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
  const draw = () => stream.write(terminal ? `\r\x1b[K${describe()}` : `${describe()}\n`);
  const timer = setInterval(draw, terminal ? TERMINAL_REFRESH_MS : PLAIN_REFRESH_MS);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      if (terminal) stream.write(`\r\x1b[K${describe()}\n`);
    },
  };
}
