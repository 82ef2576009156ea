import { humanBytes, humanDuration, plural } from "../../core/format.js";
import { formatLimitsText, type LimitReport, limitedBy } from "../../core/limit-report.js";
import type { StatsFormat } from "../report-options.js";
import type { HttpTally } from "./progress-line.js";

/**
 * TCP mode's --stats summary: connections and bytes each way, as one text
 * line or one JSON object; with a set of limits a way, each limit's waits
 * and the ones that bound (`limitedBy`), as pipe and run give them.
 */
export function formatTcpStats(
  stats: { accepted: number; refused: number; refusedBy?: { connections: number; concurrency: number }; cut: number; bytesUp: number; bytesDown: number },
  elapsedMs: number,
  format: StatsFormat,
  limits: { up?: LimitReport[]; down?: LimitReport[] } = {},
): string {
  const seconds = elapsedMs / 1000;
  const ways = (["up", "down"] as const).filter((way) => limits[way] !== undefined);
  if (format === "json") {
    const sets =
      ways.length === 0
        ? {}
        : { limits: Object.fromEntries(ways.map((way) => [way, limits[way]])), limitedBy: Object.fromEntries(ways.map((way) => [way, limitedBy(limits[way]!)])) };
    return `${JSON.stringify({ mode: "tcp", connections: stats.accepted, refused: stats.refused, ...(stats.refusedBy && { refusedBy: stats.refusedBy }), cut: stats.cut, bytesUp: stats.bytesUp, bytesDown: stats.bytesDown, seconds, ...sets })}\n`;
  }
  const { connections = 0, concurrency = 0 } = stats.refusedBy ?? {};
  // What neither limit refused was closed because the open-file limit was reached.
  const other = stats.refused - connections - concurrency;
  const notes = [
    connections > 0 && `${connections} refused by --connections`,
    concurrency > 0 && `${concurrency} refused by --concurrency`,
    other > 0 && `${other} refused`,
    stats.cut > 0 && `${stats.cut} reset at the end of --drain`,
  ].filter(Boolean);
  const refused = notes.length > 0 ? ` (${notes.join(", ")})` : "";
  const sets = ways.map((way) => `; ${way} limits ${formatLimitsText(limits[way]!)}`).join("");
  return `tbucket proxy: ${plural(stats.accepted, "connection")}${refused}, up ${humanBytes(stats.bytesUp)}, down ${humanBytes(stats.bytesDown)} in ${humanDuration(elapsedMs)}${sets}\n`;
}

/** HTTP mode's --stats summary: requests admitted, queued and refused. */
export function formatHttpStats(tally: HttpTally, elapsedMs: number, format: StatsFormat): string {
  const seconds = elapsedMs / 1000;
  if (format === "json") {
    return `${JSON.stringify({ mode: "http", admitted: tally.admitted + tally.queued, queued: tally.queued, refused: tally.refused, seconds })}\n`;
  }
  const requests = tally.admitted + tally.queued + tally.refused;
  return `tbucket proxy: ${plural(requests, "request")}, ${tally.admitted + tally.queued} admitted (${tally.queued} after waiting), ${tally.refused} refused in ${humanDuration(elapsedMs)}\n`;
}
