import { createHash } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/**
 * The proxy's `--per` rules, one table per mode: who shares a bucket, the key
 * each rule gives a connection or a request, and the words the command line
 * takes, explains and completes. A new rule is a row here.
 */

export interface TcpScopeRow {
  /** How `--per`'s usage error offers it. */
  hint: string;
  /**
   * The key of a new connection (`serial` counts them): "" is the link's one
   * bucket, kept while the proxy runs; any other is dropped once no
   * connection holds it and it is full again, and is `NAME:<dir>:<key>` in a store.
   */
  keyOf(clientAddress: string, serial: number): string;
  /** A connection's buckets are its own: dropped with it, and nothing for --key to share. */
  ownBuckets: boolean;
}

/** Who shares a bucket in TCP mode; the first is the default. */
export const TCP_SCOPES = {
  link: { hint: `"--per link" (one bucket for all, the default)`, keyOf: () => "", ownBuckets: false },
  connection: { hint: `"--per connection"`, keyOf: (_clientAddress, serial) => `#${serial}`, ownBuckets: true },
  client: { hint: `"--per client"`, keyOf: (clientAddress) => clientAddress, ownBuckets: false },
} satisfies Record<string, TcpScopeRow>;

/** Who shares a bucket: every connection of the listener, each connection alone, or the connections of one client address. */
export type BucketScope = keyof typeof TCP_SCOPES;

/** The first row: who shares a bucket when --per is not given. */
export const DEFAULT_TCP_SCOPE = Object.keys(TCP_SCOPES)[0] as BucketScope;

export interface HttpScopeRow<Rule extends { by: string }> {
  hint: string;
  /** What the word takes after a colon (`header:NAME`); none when it stands alone. */
  argument?: string;
  /** The rule from the argument after the colon (undefined without one); undefined when that is not one. */
  parse(argument: string | undefined): Rule | undefined;
  /** The bucket key of a request; `client` is its client's address key. */
  key(rule: Rule, headers: IncomingHttpHeaders, client: () => string): string;
  /** The rule as the line that says where the proxy listens names it. */
  describe(rule: Rule): string;
}

function httpScope<Rule extends { by: string }>(row: HttpScopeRow<Rule>): HttpScopeRow<Rule> {
  return row;
}

/** Longer header values are held by their hash: 100,000 keys of 16 KiB each would be 1.6 GB. */
const MAX_VALUE_CHARS = 256;

/** A header's name (RFC 9110's token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Whose bucket a request takes from in HTTP mode; the first is the default.
 * The rules' keys never collide, so that no header value lands in a client's
 * bucket:
 *
 *   per ip                  10.0.0.7, 2001:db8:1:200::/56
 *   per header:x-api-key    x-api-key=VALUE, x-api-key:sha256=HASH (values over 256 characters);
 *                           without the header, the client's address
 *   per all                 all
 *
 * An address never holds `=`, and a header's name ends at the first `=` or `:`.
 */
export const HTTP_SCOPES = {
  ip: httpScope({
    hint: `"--per ip" (the default)`,
    parse: (argument) => (argument === undefined ? { by: "ip" as const } : undefined),
    key: (_rule, _headers, client) => client(),
    describe: () => "ip",
  }),
  header: httpScope({
    hint: `"--per header:X-Api-Key"`,
    argument: "NAME",
    parse: (argument) => (argument !== undefined && HEADER_NAME.test(argument) ? { by: "header" as const, name: argument.toLowerCase() } : undefined),
    key: (rule, headers, client) => {
      const name = rule.name.toLowerCase();
      const value = headers[name];
      const text = Array.isArray(value) ? value[0] : value;
      // Without the header a client is known by its address, so that leaving it out is no way around the limit.
      if (text === undefined || text === "") return client();
      return text.length <= MAX_VALUE_CHARS ? `${name}=${text}` : `${name}:sha256=${createHash("sha256").update(text).digest("base64url")}`;
    },
    describe: (rule) => `header ${rule.name}`,
  }),
  all: httpScope({
    hint: `"--per all"`,
    parse: (argument) => (argument === undefined ? { by: "all" as const } : undefined),
    key: () => "all",
    describe: () => "all",
  }),
};

type HttpScopes = typeof HTTP_SCOPES;

/** The first row's word: whose bucket a request takes from when --per is not given. */
export const DEFAULT_HTTP_SCOPE = Object.keys(HTTP_SCOPES)[0]!;

/** Whose bucket a request takes from: the client's address, a header's value, or one bucket for all. */
export type HttpKeyRule = NonNullable<ReturnType<HttpScopes[keyof HttpScopes]["parse"]>>;

/** The row of a rule; its functions take that rule (TypeScript cannot follow the union through the lookup). */
function httpRow(rule: HttpKeyRule): HttpScopeRow<HttpKeyRule> {
  return HTTP_SCOPES[rule.by] as HttpScopeRow<HttpKeyRule>;
}

/** The bucket key of a request under `rule`, `client` being its client's address key (IPv6 by its network). */
export function requestKey(rule: HttpKeyRule, headers: IncomingHttpHeaders, client: () => string): string {
  return httpRow(rule).key(rule, headers, client);
}

/** `rule` as the proxy's listening line names it: "ip", "header x-api-key", "all". */
export function describeHttpScope(rule: HttpKeyRule): string {
  return httpRow(rule).describe(rule);
}

/** The TCP scope `word` names, or undefined. */
export function findTcpScope(word: string): BucketScope | undefined {
  return Object.hasOwn(TCP_SCOPES, word) ? (word as BucketScope) : undefined;
}

/** The HTTP rule `word` (`ip`, `header:X-Api-Key`) names, or undefined. */
export function parseHttpScopeWord(word: string): HttpKeyRule | undefined {
  const colon = word.indexOf(":");
  const name = colon === -1 ? word : word.slice(0, colon);
  if (!Object.hasOwn(HTTP_SCOPES, name)) return undefined;
  return HTTP_SCOPES[name as keyof HttpScopes].parse(colon === -1 ? undefined : word.slice(colon + 1));
}

/** How a usage error offers the rules of a mode: `"--per a" (note), "--per b" or "--per c"`. */
export function scopeHints(mode: "tcp" | "http"): string {
  const hints = Object.values(mode === "tcp" ? TCP_SCOPES : HTTP_SCOPES).map((row) => row.hint);
  return `${hints.slice(0, -1).join(", ")} or ${hints.at(-1)}`;
}

/** The TCP scopes with something for --key to share, as a usage error offers them: `--per link or --per client`. */
export function sharedTcpScopes(): string {
  return Object.entries(TCP_SCOPES)
    .filter(([, row]) => !row.ownBuckets)
    .map(([name]) => `--per ${name}`)
    .join(" or ");
}

/** `--per`'s placeholder, the words completion offers: every rule that stands alone, TCP's then HTTP's. */
export function perPlaceholder(): string {
  const words = [...Object.keys(TCP_SCOPES), ...Object.entries(HTTP_SCOPES).filter(([, row]) => row.argument === undefined).map(([name]) => name)];
  return `<${words.join("|")}>`;
}

/** `--per`'s help: each mode's rules, the default first. */
export function perHelp(): string {
  const list = (names: string[]) => names.map((name, index) => (index === 0 ? `${name} (default)` : name)).join(", ");
  const http = Object.entries(HTTP_SCOPES).map(([name, row]) => (row.argument === undefined ? name : `${name}:${row.argument}`));
  return `who shares a bucket. TCP: ${list(Object.keys(TCP_SCOPES))}; HTTP: ${list(http)}`;
}
