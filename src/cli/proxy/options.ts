import { isIP } from "node:net";
import { parseByteRate, parseByteSize, parseCount, parseCountRate, parseDuration } from "../../core/units.js";
import { type BucketScope, DEFAULT_HTTP_SCOPE, DEFAULT_TCP_SCOPE, findTcpScope, type HttpKeyRule, parseHttpScopeWord, scopeHints, sharedTcpScopes, TCP_SCOPES } from "../../proxy/key-scopes.js";
import { DEFAULT_IPV6_PREFIX, parseIpv6Prefix } from "../../core/address-key.js";
import { formatHostPort, type HostPort, parseHostPort } from "../../proxy/host-port.js";
import { parseOption, UsageError } from "../errors.js";
import { parseReportOptions, type ReportFlags, type ReportOptions } from "../report-options.js";
import { parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";
import { checkKeyedLimits, type LimitFlags, needsLimitSet, type ParsedLimit, parseLimitOptions } from "../limit-options.js";
import type { WindowSpec } from "../../core/limit-spec.js";

/** What both modes share. */
interface CommonProxyConfig extends ReportOptions {
  listen: HostPort;
  to: HostPort;
  /** How long open connections may finish after SIGINT/SIGTERM. */
  drainMs: number;
  metrics: HostPort | undefined;
  shared: SharedBucketOptions;
}

export interface TcpProxyConfig extends CommonProxyConfig {
  mode: "tcp";
  /** Bytes per second each way; undefined: that direction is not limited (or, with --key, the key's). */
  upBytesPerSecond: number | undefined;
  downBytesPerSecond: number | undefined;
  burstBytes: number | undefined;
  /** --window N/W of bytes: each direction holds its own (at most N bytes each way in any W). */
  windows: WindowSpec[];
  per: BucketScope;
  idleTimeoutMs: number;
  connections: { perSecond: number; burst: number; maxWaitMs: number } | undefined;
}

export interface HttpProxyConfig extends CommonProxyConfig {
  mode: "http";
  /** The backend as written: `http://HOST:PORT[/prefix]`. */
  target: string;
  /** Requests per second, per key (the first --rate; Infinity with none). */
  requestsPerSecond: number;
  burst: number | undefined;
  /** Set when the limits are more than one bucket (--rate repeated, --window, --concurrency): a set per key, in command-line order. */
  limits: ParsedLimit[] | undefined;
  per: HttpKeyRule;
  /** Addresses (CIDR) whose X-Forwarded-For and Forwarded headers are believed. */
  trustProxy: string[];
  /** IPv6 clients are keyed by their network of this many bits. */
  ipv6Prefix: number;
  policy: "drop" | "queue";
  /** With `queue`: the longest wait before a 429. */
  maxWaitMs: number | undefined;
  bodyBytesPerSecond: number | undefined;
  maxKeys: number | undefined;
  /** A file, or "-" for standard output. */
  accessLog: string | undefined;
}

export type ProxyConfig = TcpProxyConfig | HttpProxyConfig;

export interface ProxyFlags extends SharedBucketFlags, ReportFlags, LimitFlags {
  listen?: string;
  to?: string;
  up?: string;
  down?: string;
  per?: string;
  idleTimeout?: string;
  connections?: string;
  maxWait?: string;
  trustProxy?: string;
  ipv6Prefix?: string;
  policy?: string;
  bodyRate?: string;
  maxKeys?: string;
  accessLog?: string;
  drain?: string;
  metrics?: string;
}

/** Where a listener binds when the user names only a port: loopback; a wider address is the user's choice. */
export const DEFAULT_HOST = "127.0.0.1";

const TCP_ONLY: ReadonlyArray<[keyof ProxyFlags, string]> = [
  ["up", "--up"],
  ["down", "--down"],
  ["idleTimeout", "--idle-timeout"],
  ["connections", "--connections"],
];

const HTTP_ONLY: ReadonlyArray<[keyof ProxyFlags, string]> = [
  ["trustProxy", "--trust-proxy"],
  ["ipv6Prefix", "--ipv6-prefix"],
  ["policy", "--policy"],
  ["bodyRate", "--body-rate"],
  ["maxKeys", "--max-keys"],
  ["accessLog", "--access-log"],
];

const TCP_EXAMPLE = `tbucket proxy --listen 5433 --to 127.0.0.1:5432 --down 2mb`;
const HTTP_EXAMPLE = `tbucket proxy --listen 8080 --to http://127.0.0.1:3000 --rate 50/s --burst 10`;

/** Turns the proxy's flags into a checked configuration of one mode; every mistake is a UsageError. */
export function parseProxyOptions(flags: ProxyFlags): ProxyConfig {
  if (flags.listen === undefined) throw new UsageError(`--listen: missing; try "${TCP_EXAMPLE}"`);
  if (flags.to === undefined) throw new UsageError(`--to: missing; try "${TCP_EXAMPLE}" or "${HTTP_EXAMPLE}"`);
  const shared = parseSharedBucketOptions(flags);
  const report = parseReportOptions(flags);
  const { mode, to, target } = parseTarget(flags.to);
  const refused = mode === "tcp" ? HTTP_ONLY : TCP_ONLY;
  for (const [name, flag] of refused) {
    if (flags[name] !== undefined) {
      const why = mode === "tcp" ? `is for HTTP mode, and --to ${flags.to} is TCP (http://HOST:PORT selects HTTP)` : `is for TCP mode, and --to ${flags.to} is HTTP (HOST:PORT selects TCP)`;
      throw new UsageError(`${flag}: ${why}; drop ${flag} or change --to`);
    }
  }
  if (mode === "tcp" && shared.onStoreError === "open") {
    throw new UsageError(`--on-store-error: "open" lets HTTP requests through while the store is away, and --to ${flags.to} is TCP; try "fail" or "local"`);
  }
  const common: CommonProxyConfig = {
    listen: parseOption("--listen", flags.listen, (text) => parseAddress(text, "--listen", true)),
    to,
    drainMs: flags.drain === undefined ? 10_000 : parseOption("--drain", flags.drain, parseDuration),
    metrics: flags.metrics === undefined ? undefined : parseOption("--metrics", flags.metrics, (text) => parseAddress(text, "--metrics", true)),
    shared,
    ...report,
  };
  checkNotItself(common.listen, to);
  return mode === "tcp" ? parseTcpOptions(flags, common) : parseHttpOptions(flags, common, target!);
}

/** `HOST:PORT` is TCP, `http://HOST:PORT` HTTP. */
function parseTarget(text: string): { mode: "tcp" | "http"; to: HostPort; target?: string } {
  const example = `try "--to 127.0.0.1:5432" (TCP) or "--to http://127.0.0.1:3000" (HTTP)`;
  const url = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(text.trim());
  if (url) {
    const scheme = url[1]!.toLowerCase();
    if (scheme !== "http") throw new UsageError(`--to: "${text}": tbucket proxy speaks plain http:// to its backend, not ${scheme}://; ${example}`);
    const slash = url[2]!.indexOf("/");
    const hostPort = slash === -1 ? url[2]! : url[2]!.slice(0, slash);
    const path = slash === -1 ? "" : url[2]!.slice(slash);
    if (/[?#@\s]/.test(url[2]!)) throw new UsageError(`--to: "${text}": a backend is http://HOST:PORT[/prefix], without a user, query or fragment; ${example}`);
    const to = parseOption("--to", /:\d*$/.test(hostPort) ? hostPort : `${hostPort}:80`, (address) => parseAddress(address, "--to", false, example));
    return { mode: "http", to, target: `http://${formatHostPort(to)}${path}` };
  }
  return { mode: "tcp", to: parseOption("--to", text, (hostPort) => parseAddress(hostPort, "--to", false, example)) };
}

function parseAddress(text: string, flag: string, listener: boolean, example?: string): HostPort {
  try {
    return parseHostPort(text, listener ? { defaultHost: DEFAULT_HOST, allowAnyPort: true } : {});
  } catch (error) {
    const tryThis = example ?? (listener ? `try "${flag} 8080" or "${flag} 127.0.0.1:8080"` : `try "${flag} 127.0.0.1:5432"`);
    throw new Error(`${(error as Error).message}; ${tryThis}`);
  }
}

function parseTcpOptions(flags: ProxyFlags, common: CommonProxyConfig): TcpProxyConfig {
  if (flags.concurrency !== undefined) {
    throw new UsageError(`--concurrency: is for HTTP mode (requests under way), and --to ${formatHostPort(common.to)} is TCP; drop it, or limit new connections with --connections`);
  }
  for (const [name, flag] of [["rate", "--rate"], ["burst", "--burst"]] as const) {
    if ((flags[name]?.length ?? 0) > 1) throw new UsageError(`${flag}: given ${flags[name]!.length} times, and TCP mode shapes bytes with one ${flag} each way; give it once (--up and --down set each way)`);
  }
  const rateText = flags.rate?.[0]?.text;
  const burstText = flags.burst?.[0];
  const keyed = common.shared.key !== undefined;
  const windowLimits = parseLimitOptions({ window: flags.window }, { units: "bytes" }).limits;
  checkKeyedLimits(windowLimits, common.shared.key);
  const windows = windowLimits.map((limit) => limit.spec as WindowSpec);
  const byteRate = (flag: string, text: string | undefined) =>
    text === undefined ? undefined : parseOption(flag, text, (value) => parseByteRate(value, { allowZero: keyed }));
  const both = byteRate("--rate", rateText);
  const upBytesPerSecond = byteRate("--up", flags.up) ?? both;
  const downBytesPerSecond = byteRate("--down", flags.down) ?? both;
  const per: BucketScope | undefined = flags.per === undefined ? DEFAULT_TCP_SCOPE : findTcpScope(flags.per);
  if (per === undefined) throw new UsageError(`--per: "${flags.per}" is not a TCP scope; try ${scopeHints("tcp")}`);
  if (keyed && TCP_SCOPES[per].ownBuckets) {
    throw new UsageError(`--per ${per}: a connection's bucket is its own, so --key has nothing to share; use ${sharedTcpScopes()} with --key`);
  }
  const rated = upBytesPerSecond !== undefined || downBytesPerSecond !== undefined;
  const limited = rated || windows.length > 0;
  if (keyed && !limited) {
    throw new UsageError(`--key: TCP mode sets its keys (${common.shared.key}:up, ${common.shared.key}:down) from --rate, --up or --down; add one, e.g. "--key ${common.shared.key} --down 1mb"`);
  }
  if (burstText !== undefined && !rated) {
    throw new UsageError(`--burst: sizes the byte buckets, and no byte rate is given; add --rate, --up or --down (e.g. "--down 1mb --burst 256k")`);
  }
  if (!limited && flags.connections === undefined) {
    throw new UsageError(`no limit given: add --rate (both ways), --up or --down, --window, or --connections; try "${TCP_EXAMPLE}"`);
  }
  let connections: TcpProxyConfig["connections"];
  if (flags.connections !== undefined) {
    const perSecond = parseOption("--connections", flags.connections, (text) => parseCountRate(text));
    const maxWaitMs = flags.maxWait === undefined ? 0 : parseOption("--max-wait", flags.maxWait, parseDuration);
    connections = { perSecond, burst: 1, maxWaitMs };
  } else if (flags.maxWait !== undefined) {
    throw new UsageError(`--max-wait: holds connections over --connections, which is not given; add e.g. "--connections 10/s --max-wait 2s"`);
  }
  return {
    ...common,
    mode: "tcp",
    upBytesPerSecond,
    downBytesPerSecond,
    burstBytes: burstText === undefined ? undefined : parseOption("--burst", burstText, parseByteSize),
    windows,
    per,
    idleTimeoutMs: flags.idleTimeout === undefined ? Infinity : parseOption("--idle-timeout", flags.idleTimeout, parsePositiveDuration),
    connections,
  };
}

function parseHttpOptions(flags: ProxyFlags, common: CommonProxyConfig, target: string): HttpProxyConfig {
  const keyed = common.shared.key !== undefined;
  // With --key too: each client's key in the store is made from it.
  if (flags.rate === undefined && flags.window === undefined && flags.concurrency === undefined) {
    throw new UsageError(`--rate: missing; HTTP mode limits requests, e.g. "${HTTP_EXAMPLE}"`);
  }
  // Each --rate first on its own, so that a byte rate is told apart from a mistyped count.
  for (const { text } of flags.rate ?? []) {
    parseOption("--rate", text, (rate) => {
      try {
        return parseCountRate(rate, { allowZero: keyed });
      } catch (error) {
        if (/byte rate|not a count rate/.test((error as Error).message) && /[a-z]/i.test(rate.replace(/\/.*$/, ""))) {
          throw new Error(`"${rate}" is not a count of requests; HTTP mode's --rate counts requests ("50/s"), and --body-rate shapes bytes ("1mb")`);
        }
        throw error;
      }
    });
  }
  // With --key a client's set is made in the store from these limits (a key set already keeps its own).
  const { limits } = parseLimitOptions(flags, { units: "count", keyed, byteRateHint: `HTTP mode counts requests ("15/2s"), and --body-rate shapes bytes ("1mb")` });
  const first = limits.find((limit) => limit.spec.kind === "bucket");
  const policy = flags.policy ?? "drop";
  if (policy !== "drop" && policy !== "queue") throw new UsageError(`--policy: "${policy}" is not a policy; try "--policy drop" (429 at once) or "--policy queue --max-wait 2s"`);
  if (flags.maxWait !== undefined && policy !== "queue") {
    throw new UsageError(`--max-wait: is how long --policy queue holds a request, and the policy is drop; add "--policy queue"`);
  }
  if (policy === "queue" && flags.maxWait === undefined) {
    throw new UsageError(`--policy queue: needs --max-wait, the longest a request waits its turn before a 429; add e.g. "--max-wait 2s"`);
  }
  return {
    ...common,
    mode: "http",
    target,
    requestsPerSecond: first?.spec.kind === "bucket" ? first.spec.rate : Infinity,
    burst: first?.spec.kind === "bucket" && first.burstGiven ? first.spec.burst : undefined,
    limits: needsLimitSet(limits) ? limits : undefined,
    per: parseHttpScope(flags.per),
    trustProxy: flags.trustProxy === undefined ? [] : parseOption("--trust-proxy", flags.trustProxy, parseCidrList),
    ipv6Prefix: flags.ipv6Prefix === undefined ? DEFAULT_IPV6_PREFIX : parseOption("--ipv6-prefix", flags.ipv6Prefix, parseIpv6Prefix),
    policy,
    maxWaitMs: flags.maxWait === undefined ? undefined : parseOption("--max-wait", flags.maxWait, parseDuration),
    bodyBytesPerSecond: flags.bodyRate === undefined ? undefined : parseOption("--body-rate", flags.bodyRate, (text) => parseByteRate(text)),
    maxKeys: flags.maxKeys === undefined ? undefined : parseOption("--max-keys", flags.maxKeys, (text) => parseCount(text)),
    accessLog: flags.accessLog,
  };
}

/** A duration above zero: an idle timeout of 0 would close every connection at once. */
function parsePositiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms === 0) throw new Error(`"${text}" must be more than zero; try "30s" or "5m", or leave it out for no timeout`);
  return ms;
}

/** The proxy would connect to itself, and each connection would open another. */
function checkNotItself(listen: HostPort, to: HostPort): void {
  const everywhere = listen.host === "0.0.0.0" || listen.host === "::";
  const sameHost = listen.host === to.host || ((everywhere || isLoopback(listen.host)) && isLoopback(to.host));
  if (listen.port !== 0 && listen.port === to.port && sameHost) {
    throw new UsageError(`--to ${formatHostPort(to)}: is where the proxy listens (--listen ${formatHostPort(listen)}), so it would connect to itself; give the backend's address`);
  }
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

function parseHttpScope(text: string | undefined): HttpKeyRule {
  const rule = parseHttpScopeWord(text ?? DEFAULT_HTTP_SCOPE);
  if (rule === undefined) throw new UsageError(`--per: "${text}" is not an HTTP scope; try ${scopeHints("http")}`);
  return rule;
}

/** `127.0.0.1,10.0.0.0/8,::1`: addresses and CIDR blocks. */
function parseCidrList(text: string): string[] {
  return text.split(",").map((part) => {
    const item = part.trim();
    const [address, bits, extra] = item.split("/");
    const family = isIP(address ?? "");
    const most = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= most);
    if (family === 0 || !bitsOk || extra !== undefined) {
      throw new Error(`"${item}" is not an address or CIDR block; try "127.0.0.1" or "10.0.0.0/8,::1"`);
    }
    return item;
  });
}
