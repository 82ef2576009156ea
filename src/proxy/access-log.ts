import type { IncomingMessage } from "node:http";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** What one access-log line says about a request. */
export interface AccessLogEntry {
  /** The client's address (the key's address when per ip). */
  client: string;
  /** When the request came, ms since the epoch. */
  startedAtMs: number;
  /** The request; none for one node's parser refused, whose `requestLine` is what could be read of it. */
  req?: IncomingMessage;
  requestLine?: string;
  status: number;
  /** Response body bytes sent. */
  bytes: number;
  /**
   * admitted, queued, refused, cancelled (the client hung up while queued), failed (the limit could not
   * be checked: its store failed), or invalid (a 400, 431 or 501 for a request the proxy cannot read or forward; not limited).
   */
  decision: string;
  /** How long the request waited for its turn. */
  waitMs: number;
  /** With a set of limits: the limits (from 1) that refused the request or set its wait, appended as `limit=2` or `limit=1,3`. */
  limitedBy?: readonly number[];
  /** With a total beside the client's limits: those of the total (from 1 within it) that refused the request or set its wait, appended as `total=1`. */
  totalLimitedBy?: readonly number[];
}

/**
 * One line in Combined Log Format, as nginx and Apache write it, in UTC, the
 * time to the millisecond (Apache's `%{msec_frac}t`), with the decision and
 * the wait in ms appended:
 *
 *   127.0.0.1 - - [01/Dec/2026:02:49:13.042 +0000] "GET /a HTTP/1.1" 429 39 "-" "curl/8.5.0" refused 0
 *
 * With a set of limits (HTTP mode with several), a request that one refused
 * or held carries `limit=N` after the wait (`limit=1,3` when several bound it);
 * with a total beside, one the total refused or held carries `total=N` (its
 * limits numbered within it), so a line says whether the client or everyone
 * together was over.
 *
 * `tbucket simulate --trace` reads it as it is: whole seconds would put a
 * second's requests at one instant, and a replay of the limit would refuse
 * what the proxy admitted over that second. Quotes, backslashes and
 * control characters in the quoted fields are escaped (\" \\ \xHH), so a
 * client cannot forge a line or a field.
 */
export function accessLogLine(entry: AccessLogEntry): string {
  const { req } = entry;
  const request = req ? `${req.method ?? "-"} ${req.url ?? "-"} HTTP/${req.httpVersion}` : (entry.requestLine ?? "-");
  return (
    `${entry.client} - - [${clfTime(entry.startedAtMs)}] "${escapeField(request)}" ${entry.status} ${entry.bytes > 0 ? entry.bytes : "-"} ` +
    `"${escapeField(headerText(req?.headers.referer))}" "${escapeField(headerText(req?.headers["user-agent"]))}" ${entry.decision} ${Math.round(entry.waitMs)}${entry.limitedBy?.length ? ` limit=${entry.limitedBy.join(",")}` : ""}${entry.totalLimitedBy?.length ? ` total=${entry.totalLimitedBy.join(",")}` : ""}\n`
  );
}

/** The last second formatted: a busy proxy logs many requests within each. */
let cachedSecond = Number.NaN;
let cachedTime = "";

/** `01/Dec/2026:02:49:13.042 +0000`: the millisecond the instant is in. */
export function clfTime(epochMs: number): string {
  const ms = Math.floor(epochMs);
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedTime = formatClfSecond(second * 1000);
    cachedSecond = second;
  }
  return `${cachedTime}.${String(ms - second * 1000).padStart(3, "0")} +0000`;
}

function formatClfSecond(epochMs: number): string {
  const date = new Date(epochMs);
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(date.getUTCDate())}/${MONTHS[date.getUTCMonth()]}/${date.getUTCFullYear()}:${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())}`;
}

function headerText(value: string | string[] | undefined): string {
  if (value === undefined || value === "") return "-";
  return Array.isArray(value) ? value.join(", ") : value;
}

function escapeField(text: string): string {
  return text.replace(/["\\\u0000-\u001f\u007f-\u00ff]/g, (char) => {
    if (char === '"' || char === "\\") return `\\${char}`;
    return `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`;
  });
}
