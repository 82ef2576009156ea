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
