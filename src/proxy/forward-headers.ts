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

/**
 * Fields a Connection header cannot make hop-by-hop: the message's framing
 * and its Host. Dropped, the body would go on unframed (`Connection:
 * content-length` on a GET), read by the next hop as further requests.
 */
const NEVER_CONNECTION_NAMED = new Set(["content-length", "transfer-encoding", "host"]);

/** A message's headers without the hop-by-hop ones; `keep` spares some (Upgrade and Connection on a WebSocket handshake). */
export function endToEndHeaders(headers: IncomingHttpHeaders, keep: readonly string[] = []): OutgoingHttpHeaders {
  const named = new Set<string>();
  const connection = headers.connection;
  if (connection !== undefined) {
    for (const token of String(connection).split(",")) {
      const field = token.trim().toLowerCase();
      if (!NEVER_CONNECTION_NAMED.has(field)) named.add(field);
    }
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
 * X-Forwarded-For (and to a Forwarded the client sent), and the body's framing said whatever the method:
 * `Transfer-Encoding: chunked` (node then chunks the body it decoded) or the
 * client's Content-Length, and `Content-Length: 0` on a bodiless request of a method
 * node would otherwise send chunked (a final empty chunk is a second packet).
 * Left to node, a GET's body would go unframed. `TE: trailers` goes on when
 * the client sent it, so that a backend's trailers come back.
 */
export function backendRequestRawHeaders(raw: readonly string[], method: string, peerAddress: string | undefined, host: string): string[] {
  const named = connectionNamed(raw);
  const out: string[] = [];
  let chain: string | undefined;
  let forwarded: string | undefined;
  let hasHost = false;
  let length: string | undefined;
  let chunked = false;
  let takesTrailers = false;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const value = raw[i + 1]!;
    if (name === "transfer-encoding") {
      // Chunked alone (see transferCodingProblem), which the proxy decoded and node's client chunks again: said once, as
      // one field, whatever the client's spelling, so that no backend reads another framing than the proxy's.
      if (!chunked) out.push("Transfer-Encoding", "chunked");
      chunked = true;
      continue;
    }
    if (name === "te" && /(?:^|,)\s*trailers\s*(?:[,;]|$)/i.test(value)) takesTrailers = true;
    if (HOP_BY_HOP.has(name) || named?.has(name)) continue;
    if (name === "x-forwarded-for") {
      chain = chain === undefined ? value : `${chain}, ${value}`;
      continue;
    }
    if (name === "forwarded") {
      forwarded = forwarded === undefined ? value : `${forwarded}, ${value}`;
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
  // A Forwarded the client sent gets the peer too (RFC 7239 5.2: an IPv6 node quoted, in brackets), never passed on as the client wrote it.
  if (forwarded !== undefined) out.push("Forwarded", peerAddress === undefined ? forwarded : `${forwarded}, for=${peerAddress.includes(":") ? `"[${peerAddress}]"` : peerAddress}`);
  if (!chunked && length === undefined && !BODILESS_BY_DEFAULT.has(method)) out.push("Content-Length", "0");
  // RFC 9110 10.1.4: TE is named in Connection as well.
  if (takesTrailers) out.push("TE", "trailers", "Connection", "te");
  return out;
}

/**
 * Why a request cannot be forwarded as it is framed (RFC 9112 3.2, 6.1), or
 * undefined: more than one Host, a Host that is not `host[:port]`, or a
 * Transfer-Encoding on HTTP/1.0, whose framing is then faulty. The rest of
 * the framing (Content-Length with Transfer-Encoding, two lengths, a coding
 * other than chunked last) node's parser refuses already.
 */
export function framingProblem(raw: readonly string[], httpVersion: string): string | undefined {
  let hosts = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") {
      if (++hosts > 1) return "more than one Host field";
      if (!HOST_VALUE.test(raw[i + 1]!)) return "a Host field that is not host[:port]";
    } else if (name.length === 17 && httpVersion === "1.0" && name.toLowerCase() === "transfer-encoding") {
      return "Transfer-Encoding on an HTTP/1.0 request";
    }
  }
  return undefined;
}

/**
 * Why a request's Transfer-Encoding is not one the proxy forwards (501, RFC
 * 9112 6.1), or undefined: any coding but a single `chunked` (`gzip, chunked`,
 * `identity, chunked`, or the codings split over two fields), which a backend
 * that reads only the first coding or field would take for no framing at all,
 * and the body for its next request. nginx and Go's server answer the same.
 */
export function transferCodingProblem(raw: readonly string[]): string | undefined {
  let codings = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length !== 17 || name.toLowerCase() !== "transfer-encoding") continue;
    for (const element of raw[i + 1]!.split(",")) {
      const coding = element.trim().toLowerCase();
      if (coding === "") continue;
      if (coding !== "chunked" || ++codings > 1) return "a transfer coding other than chunked";
    }
  }
  return undefined;
}

/** RFC 3986 `host [ ":" port ]`: an IP literal in brackets, or a name of reg-name characters (empty too). */
const HOST_VALUE = /^(?:\[[0-9A-Za-z:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]*)(?::\d*)?$/;

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
    for (const token of raw[i + 1]!.split(",")) {
      const field = token.trim().toLowerCase();
      if (!NEVER_CONNECTION_NAMED.has(field)) named.add(field);
    }
  }
  return named;
}
