import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { HttpKeyRule } from "./http-proxy-options.js";

/** Longer header values are held by their hash: 100,000 keys of 16 KiB each would be 1.6 GB. */
const MAX_VALUE_CHARS = 256;

/**
 * The bucket key of a request under `rule`, `client` being its client's
 * address key (IPv6 by its network). The rules' keys never collide, so that
 * no header value lands in a client's bucket:
 *
 *   per ip                  10.0.0.7, 2001:db8:1:200::/56
 *   per header:x-api-key    x-api-key=VALUE, x-api-key:sha256=HASH (values over 256 characters);
 *                           without the header, the client's address
 *   per all                 all
 *
 * An address never holds `=`, and a header's name ends at the first `=` or `:`.
 */
export function requestKey(rule: HttpKeyRule, headers: IncomingHttpHeaders, client: () => string): string {
  if (rule.by === "all") return "all";
  if (rule.by === "header") {
    const name = rule.name.toLowerCase();
    const value = headers[name];
    const text = Array.isArray(value) ? value[0] : value;
    // Without the header a client is known by its address, so that leaving it out is no way around the limit.
    if (text !== undefined && text !== "") {
      return text.length <= MAX_VALUE_CHARS ? `${name}=${text}` : `${name}:sha256=${createHash("sha256").update(text).digest("base64url")}`;
    }
  }
  return client();
}
