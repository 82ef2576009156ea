import { BlockList, isIP } from "node:net";
import { addressKey, plainAddress } from "../core/address-key.js";

/**
 * The addresses whose forwarding headers are believed: a request that comes
 * straight from one of them may say, in X-Forwarded-For or Forwarded, whom it
 * forwards for. Anyone else could write those headers to get a fresh bucket
 * with every request, so theirs are never read.
 */
export class TrustedProxies {
  readonly #list: BlockList;
  readonly entries: readonly string[];

  constructor(cidrs: readonly string[]) {
    this.#list = new BlockList();
    this.entries = cidrs.map((cidr) => cidr.trim());
    for (const cidr of this.entries) addCidr(this.#list, cidr);
  }

  /** Whether `address` (IPv4, IPv6 or IPv4-mapped IPv6) is one of them. */
  has(address: string): boolean {
    const plain = plainAddress(address);
    const family = isIP(plain);
    if (family === 0) return false;
    return this.#list.check(plain, family === 4 ? "ipv4" : "ipv6");
  }
}

/** Thrown for a trust-proxy entry that is not an address or a CIDR; `entry` is the text at fault. */
export class TrustProxyError extends RangeError {
  readonly code = "ETRUSTPROXY";
  constructor(
    readonly entry: string,
    why: string,
  ) {
    super(`"${entry}" is not an address or a CIDR: ${why}; expected e.g. 127.0.0.1, 10.0.0.0/8 or ::1`);
    this.name = "TrustProxyError";
  }
}

function addCidr(list: BlockList, cidr: string): void {
  const slash = cidr.indexOf("/");
  const address = plainAddress(slash === -1 ? cidr : cidr.slice(0, slash));
  const family = isIP(address);
  if (family === 0) throw new TrustProxyError(cidr, `"${address}" is not an IP address`);
  const type = family === 4 ? "ipv4" : "ipv6";
  const maxPrefix = family === 4 ? 32 : 128;
  if (slash === -1) {
    list.addAddress(address, type);
    return;
  }
  const prefixText = cidr.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > maxPrefix) {
    throw new TrustProxyError(cidr, `the prefix length must be 0 to ${maxPrefix}`);
  }
  list.addSubnet(address, prefix, type);
}

/**
 * The addresses a request was forwarded for, the client first: those of
 * X-Forwarded-For, or the `for=` of Forwarded (RFC 7239), ports and brackets
 * removed (from either: some proxies write X-Forwarded-For hops with ports).
 * Values that are not addresses (`unknown`, `_hidden`) are kept as they are,
 * for the caller to stop at.
 *
 * A request that carries both gets only the hops nearest to us that both
 * name: a proxy writes one of the two and passes the other along as it came,
 * so either may be the client's own, and where they disagree neither is
 * believed (the walk stops at the last trusted proxy). Preferring one field
 * would let a client choose its bucket behind every proxy that writes the other.
 */
export function forwardedChain(headers: { "x-forwarded-for"?: string | string[]; forwarded?: string | string[] }): string[] {
  const xff = joined(headers["x-forwarded-for"]);
  const forwarded = joined(headers.forwarded);
  // Some proxies write a hop with its port, as Forwarded does (Azure's Application Gateway: `192.0.2.60:51234`).
  const fromXff = xff === undefined ? undefined : xff.split(",").map((hop) => nodeAddress(hop.trim())).filter((hop) => hop !== "");
  const fromForwarded = forwarded === undefined ? undefined : forwardedFor(forwarded);
  if (fromForwarded === undefined) return fromXff ?? [];
  if (fromXff === undefined) return fromForwarded;
  let agreed = 0;
  while (agreed < fromXff.length && agreed < fromForwarded.length && sameHop(fromXff[fromXff.length - 1 - agreed]!, fromForwarded[fromForwarded.length - 1 - agreed]!)) agreed++;
  return fromXff.slice(fromXff.length - agreed);
}

/** The `for=` values of a Forwarded field, in order. */
function forwardedFor(field: string): string[] {
  const chain: string[] = [];
  for (const element of field.split(",")) {
    for (const pair of element.split(";")) {
      const match = /^\s*for\s*=\s*(.*?)\s*$/i.exec(pair);
      if (match) chain.push(nodeAddress(match[1]!));
    }
  }
  return chain;
}

/** One hop as both fields write it: `2001:DB8::1` in one is `2001:db8::1` in the other. */
function sameHop(a: string, b: string): boolean {
  if (a === b) return true;
  const plainA = plainAddress(a);
  const plainB = plainAddress(b);
  return isIP(plainA) !== 0 && isIP(plainB) !== 0 && addressKey(plainA, 128) === addressKey(plainB, 128);
}

/** `"[2001:db8::1]:4711"` → 2001:db8::1, `192.0.2.60:80` → 192.0.2.60. */
function nodeAddress(value: string): string {
  const unquoted = value.replace(/^"(.*)"$/, "$1");
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(unquoted);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(unquoted);
  return withPort ? withPort[1]! : unquoted;
}

function joined(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(",") : value;
}

/**
 * The client's address: the peer's, unless the peer is a trusted proxy; then
 * the forwarding chain is walked from the nearest hop back, and the first
 * address that is not a trusted proxy is the client. A hop that is not an
 * address ends the walk at the last trusted one.
 */
export function clientAddress(
  peer: string | undefined,
  headers: { "x-forwarded-for"?: string | string[]; forwarded?: string | string[] },
  trusted: TrustedProxies | undefined,
): string | undefined {
  if (peer === undefined) return undefined;
  let address = plainAddress(peer);
  if (!trusted || !trusted.has(address)) return address;
  const chain = forwardedChain(headers);
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = plainAddress(chain[i]!);
    if (isIP(hop) === 0) return address;
    address = hop;
    if (!trusted.has(hop)) return hop;
  }
  return address;
}

/** Loopback, private (RFC 1918, RFC 4193), shared (RFC 6598) and link-local addresses: where a proxy of one's own sits. */
const PRIVATE = new BlockList();
for (const [network, prefix] of [["127.0.0.0", 8], ["10.0.0.0", 8], ["172.16.0.0", 12], ["192.168.0.0", 16], ["100.64.0.0", 10], ["169.254.0.0", 16]] as const) {
  PRIVATE.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [["::1", 128], ["fc00::", 7], ["fe80::", 10]] as const) PRIVATE.addSubnet(network, prefix, "ipv6");

/** Whether `address` is one a proxy in front of the server would have (see PRIVATE). */
export function isPrivateAddress(address: string): boolean {
  const plain = plainAddress(address);
  const family = isIP(plain);
  return family !== 0 && PRIVATE.check(plain, family === 4 ? "ipv4" : "ipv6");
}

/**
 * The forwarding field (`X-Forwarded-For` or `Forwarded`) of a request that came
 * straight from a private address whose forwarding fields are not read: a proxy of
 * one's own, behind which every client then shares that proxy's bucket. Undefined
 * for any other request.
 */
export function untrustedForwarder(address: string, headers: { "x-forwarded-for"?: string | string[]; forwarded?: string | string[] }): string | undefined {
  const field = headers["x-forwarded-for"] !== undefined ? "X-Forwarded-For" : headers.forwarded !== undefined ? "Forwarded" : undefined;
  return field !== undefined && isPrivateAddress(address) ? field : undefined;
}

/**
 * What is said, once, of requests `untrustedForwarder` finds: the same words for the
 * middleware and the proxy, `setting` naming the setting that is not set and `remedy`
 * what to write (`set trustProxy: ["10.0.0.1"]`, `add --trust-proxy 10.0.0.1`).
 */
export function untrustedProxyLine(address: string, field: string, setting: string, remedy: string): string {
  return (
    `requests come through a proxy at ${address} (they carry ${field}) and ${setting} is not set, so every client behind it shares one bucket; ` +
    `${remedy} to key each client by its own address`
  );
}
