import type { IncomingHttpHeaders, OutgoingHttpHeaders } from "node:http";

/**
 * Headers that concern one connection, not the message (RFC 9110 7.6.1): a
 * proxy must not pass them on, nor any header the Connection field names.
 */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/** A message's headers without the hop-by-hop ones; `keep` spares some (Upgrade and Connection on a WebSocket handshake). */
export function endToEndHeaders(headers: IncomingHttpHeaders, keep: readonly string[] = []): OutgoingHttpHeaders {
  const named = new Set<string>();
  const connection = headers.connection;
  if (connection !== undefined) {
    for (const token of String(connection).split(",")) named.add(token.trim().toLowerCase());
  }
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    if ((HOP_BY_HOP.has(name) || named.has(name)) && !keep.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** The request's headers for the backend: end-to-end only, with the peer appended to X-Forwarded-For. */
export function backendRequestHeaders(headers: IncomingHttpHeaders, peerAddress: string | undefined, keep: readonly string[] = []): OutgoingHttpHeaders {
  const out = endToEndHeaders(headers, keep);
  if (peerAddress !== undefined) {
    const previous = headers["x-forwarded-for"];
    const chain = Array.isArray(previous) ? previous.join(", ") : previous;
    out["x-forwarded-for"] = chain ? `${chain}, ${peerAddress}` : peerAddress;
  }
  return out;
}

/** Methods node sends without a body unless told its length: any other, sent bodiless, needs `Content-Length: 0` said. */
const BODILESS_BY_DEFAULT = new Set(["GET", "HEAD", "DELETE", "OPTIONS", "TRACE", "CONNECT"]);

/**
 * A message's raw header lines (name, value, name, value...) without the
 * hop-by-hop ones, names as the sender wrote them and repeated fields kept
 * apart, as node takes them for `writeHead` and `request` without building
 * an object of them (the cheap way on every request).
 */
export function endToEndRawHeaders(raw: readonly string[]): string[] {
  const named = connectionNamed(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    out.push(raw[i]!, raw[i + 1]!);
  }
  return out;
}

/**
 * The request's raw header lines for the backend: end-to-end only, one Host
 * (`host` when the client sent none, as node would add), the peer appended to
 * X-Forwarded-For, and `Content-Length: 0` on a bodiless request of a method
 * node would otherwise send chunked (a final empty chunk is a second packet).
 */
export function backendRequestRawHeaders(raw: readonly string[], method: string, peerAddress: string | undefined, host: string): string[] {
  const named = connectionNamed(raw);
  const out: string[] = [];
  let chain: string | undefined;
  let hasHost = false;
  let length: string | undefined;
  let chunked = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (name === "transfer-encoding") chunked = true;
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    if (name === "x-forwarded-for") {
      chain = chain === undefined ? value : `${chain}, ${value}`;
      continue;
    }
    if (name === "host") {
      // Node keeps the first of several; so does the backend then.
      if (hasHost) continue;
      hasHost = true;
    } else if (name === "content-length") {
      length = value;
    }
    out.push(raw[i]!, value);
  }
  if (!hasHost) out.push("Host", host);
  if (peerAddress !== undefined) out.push("X-Forwarded-For", chain ? `${chain}, ${peerAddress}` : peerAddress);
  else if (chain !== undefined) out.push("X-Forwarded-For", chain);
  if (!chunked && length === undefined && !BODILESS_BY_DEFAULT.has(method)) out.push("Content-Length", "0");
  return out;
}

/** Whether raw request headers announce a body (RFC 9112 6.3: a length other than 0, or a transfer coding). */
export function rawHasBody(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 17 && name.toLowerCase() === "transfer-encoding") return true;
    if (name.length === 14 && name.toLowerCase() === "content-length" && raw[i + 1] !== "0") return true;
  }
  return false;
}

/** The field names a Connection header lists (hop-by-hop as well), or none. */
function connectionNamed(raw: readonly string[]): Set<string> | undefined {
  let named: Set<string> | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 10 || name.toLowerCase() !== "connection") continue;
    named ??= new Set();
    for (const token of raw[i + 1]!.split(",")) named.add(token.trim().toLowerCase());
  }
  return named;
}
