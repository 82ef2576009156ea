import { isIP } from "node:net";

/**
 * The bucket key of a client's address. IPv4 is the address itself; IPv6 is
 * the network of its first `ipv6Prefix` bits (`2001:db8:1:200::/56`), since
 * one host is given a /64 or more and could otherwise take a fresh bucket
 * from each of its 2^64 addresses. 56 is what ISPs commonly give one
 * customer, and what express-rate-limit keys by. With 128 the key is the
 * whole address. Either way IPv6 is written in its one canonical form (RFC 5952),
 * so that `2001:DB8::1` and `2001:db8:0::1` are one client. An IPv4-mapped address is
 * its IPv4 address: keyed by a prefix, every IPv4 client would share `::/56`.
 */
export function addressKey(address: string, ipv6Prefix: number): string {
  address = plainAddress(address);
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  if (ipv6Prefix >= 128) return formatIpv6(groups);
  for (let i = 0; i < 8; i++) {
    const bits = Math.max(0, Math.min(16, ipv6Prefix - 16 * i));
    groups[i] = groups[i]! & ((0xffff << (16 - bits)) & 0xffff);
  }
  return `${formatIpv6(groups)}/${ipv6Prefix}`;
}

/** The default IPv6 prefix clients are keyed by. */
export const DEFAULT_IPV6_PREFIX = 56;

/** The bits of an IPv6 address that make one client: 1 to 128 (--ipv6-prefix of the proxy and of simulate). */
export function parseIpv6Prefix(text: string): number {
  const bits = Number(text);
  if (!/^\d{1,3}$/.test(text.trim()) || bits < 1 || bits > 128) {
    throw new Error(`"${text}" is not a prefix length; give the bits of an IPv6 address that make one client, 1 to 128 (56, the default, is one customer's network; 128 the whole address)`);
  }
  return bits;
}

/** The eight 16-bit groups of an IPv6 address that `isIP` accepts (a zone, `%eth0`, is dropped). */
function ipv6Groups(address: string): number[] {
  const zone = address.indexOf("%");
  const text = zone === -1 ? address : address.slice(0, zone);
  const parse = (part: string): number[] =>
    part === ""
      ? []
      : part.split(":").flatMap((group) => {
          if (!group.includes(".")) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = text.indexOf("::");
  if (gap === -1) return parse(text);
  const head = parse(text.slice(0, gap));
  const tail = parse(text.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952: lower-case hex without leading zeros, the longest run of two or more zero groups (the first of equals) as `::`. */
function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let end = i;
    while (end < 8 && groups[end] === 0) end++;
    if (end - i > bestLength) {
      bestStart = i;
      bestLength = end - i;
    }
    i = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/**
 * `::ffff:10.0.0.1` is 10.0.0.1: a dual-stack socket reports IPv4 clients that way. So are the
 * other spellings of it a forwarding field may carry (`::ffff:a00:1`, `0:0:0:0:0:ffff:10.0.0.1`),
 * which would otherwise be keyed by their IPv6 prefix, every such client in `::/56`.
 */
export function plainAddress(address: string): string {
  // Most addresses are not mapped: no pattern to run for them.
  if (!address.includes(":") || !/ffff/i.test(address)) return address;
  const dotted = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (dotted) return dotted[1]!;
  if (isIP(address) !== 6) return address;
  const groups = ipv6Groups(address);
  if (groups.slice(0, 5).some((group) => group !== 0) || groups[5] !== 0xffff) return address;
  return `${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
}
