import { isIP } from "node:net";
import { parseByteRate, parseByteSize, parseCount, parseCountRate, parseDuration, rateKindOf } from "../../core/units.js";
import { type BucketScope, DEFAULT_HTTP_SCOPE, DEFAULT_TCP_SCOPE, findTcpScope, type HttpKeyRule, parseHttpScopeWord, scopeHints, sharedTcpScopes, TCP_SCOPES } from "../../proxy/key-scopes.js";
import { DEFAULT_IPV6_PREFIX, parseIpv6Prefix } from "../../core/address-key.js";
import { formatHostPort, type HostPort, parseHostPort } from "../../proxy/host-port.js";
import { parseOption, UsageError } from "../errors.js";
import { parseReportOptions, type ReportFlags, type ReportOptions } from "../report-options.js";
import { parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";
import { type LimitFlags, needsLimitSet, type ParsedLimit, parseLimitOptions } from "../limit-options.js";
import { defaultBurst } from "../../core/default-burst.js";
import type { ByteLimit } from "../../proxy/bucket-pool.js";
import type { ClassSpec } from "../../core/class-spec.js";
import { describeUnknownClass, parseClassOptions } from "../class-options.js";
import { type ClassRoute, parseClassRoute } from "../../proxy/class-routes.js";
import { describeRoutePattern } from "../../proxy/route-rules.js";
import { parseRouteFlag, type RouteRuleConfig } from "./route-options.js";

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
  /**
   * Each direction's limits of bytes, in command-line order: every --rate
   * (the first replaced by --up or --down that way) and --window, each
   * direction its own set; undefined: that direction is not limited.
   */
  up: ByteLimit[] | undefined;
  down: ByteLimit[] | undefined;
  /** --concurrency: connections open at once per --per scope, and how long one over it waits (--max-wait). */
  concurrency: { n: number; maxWaitMs: number } | undefined;
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
  /** --total (with --total-burst): the limits of every request together, beside each key's, in command-line order. */
  total: ParsedLimit[] | undefined;
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
  /** Classes sharing each key's limits (--class), with where a request's class is read (--class-from) and the one of a request that names none. */
  classes: { specs: ClassSpec[]; routes: ClassRoute[]; header: string | undefined; defaultClass: string } | undefined;
  /** Rules per route (--route, or the config file's routes), the first match wins; requests matching none have the limits above. */
  routes: RouteRuleConfig[];
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
  class?: string[];
  routeClass?: string[];
  classFrom?: string;
  defaultClass?: string;
  total?: string[];
  totalBurst?: string[];
  route?: string[];
  /** The config file's routes, parsed already (--route replaces them). */
  routeRules?: RouteRuleConfig[];
  config?: string;
  checkConfig?: boolean;
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
  ["class", "--class"],
  ["routeClass", "--route-class"],
  ["classFrom", "--class-from"],
  ["defaultClass", "--default-class"],
  ["totalBurst", "--total-burst"],
  ["route", "--route"],
  ["routeRules", "--route"],
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
  if (mode === "tcp" && flags.total !== undefined) {
    throw new UsageError(
      `--total: limits HTTP requests of every client together, and --to ${flags.to} is TCP, which shapes bytes; for all connections together use --per link (the default) with --rate, or --to http://HOST:PORT`,
    );
  }
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
  const keyed = common.shared.key !== undefined;
  const rates = flags.rate ?? [];
  const bursts = flags.burst ?? [];
  const directed = flags.up !== undefined || flags.down !== undefined;
  if (rates.length === 0 && bursts.length > 0 && !directed) {
    throw new UsageError(`--burst: sizes the byte buckets, and no byte rate is given; add --rate, --up or --down (e.g. "--down 1mb --burst 256k")`);
  }
  // Without --rate, one --burst sizes --up's and --down's buckets (as it always has).
  if (rates.length === 0 && bursts.length > 1) {
    throw new UsageError(`--burst: given ${bursts.length} times, and without --rate one --burst sizes --up and --down both; give it once, or add a --rate for each`);
  }
  const { limits } = parseLimitOptions({ ...flags, burst: rates.length === 0 ? undefined : flags.burst }, { units: "bytes", keyed });
  const byteLimits = limits.filter((limit) => limit.spec.kind !== "concurrency");
  const slots = limits.find((limit) => limit.spec.kind === "concurrency");
  const directionBurst = rates.length === 0 && bursts.length === 1 ? parseOption("--burst", bursts[0]!, parseByteSize) : undefined;
  const direction = (flag: "--up" | "--down", text: string | undefined): ByteLimit[] | undefined => {
    const specs = byteLimits.map((limit) => limit.spec as ByteLimit);
    if (text === undefined) return specs.length > 0 ? specs : undefined;
    const rate = parseOption(flag, text, (value) => parseByteRate(value, { allowZero: keyed }));
    // --up/--down replace the first --rate that way, with its --burst (else the default burst of the new rate).
    const first = byteLimits.findIndex((limit) => limit.spec.kind === "bucket");
    const replaced = byteLimits[first];
    const burst = !replaced ? directionBurst : replaced.burstGiven && replaced.spec.kind === "bucket" ? replaced.spec.burst : undefined;
    const bucket: ByteLimit = { kind: "bucket", unit: "bytes", rate, burst: burst ?? defaultBurst("bytes", rate) };
    if (first === -1) return [bucket, ...specs];
    specs[first] = bucket;
    return specs;
  };
  const up = direction("--up", flags.up);
  const down = direction("--down", flags.down);
  const per: BucketScope | undefined = flags.per === undefined ? DEFAULT_TCP_SCOPE : findTcpScope(flags.per);
  if (per === undefined) throw new UsageError(`--per: "${flags.per}" is not a TCP scope; try ${scopeHints("tcp")}`);
  if (keyed && TCP_SCOPES[per].ownBuckets) {
    throw new UsageError(`--per ${per}: a connection's bucket is its own, so --key has nothing to share; use ${sharedTcpScopes()} with --key`);
  }
  if (slots && TCP_SCOPES[per].ownBuckets) {
    throw new UsageError(`--concurrency: counts the connections open at once per --per scope, and --per ${per} is one connection each; use --per link (all) or --per client`);
  }
  const limited = up !== undefined || down !== undefined || slots !== undefined;
  if (keyed && !limited) {
    const key = common.shared.key;
    throw new UsageError(`--key: TCP mode sets its keys (${key}:up, ${key}:down) from --rate, --up, --down or --window, and ${key}:connections from --concurrency; add one, e.g. "--key ${key} --down 1mb"`);
  }
  if (!limited && flags.connections === undefined) {
    throw new UsageError(`no limit given: add --rate (both ways), --up or --down, --window, --concurrency or --connections; try "${TCP_EXAMPLE}"`);
  }
  if (flags.maxWait !== undefined && flags.connections === undefined && !slots) {
    throw new UsageError(`--max-wait: holds connections over --connections or --concurrency, and neither is given; add e.g. "--concurrency 20 --max-wait 2s" or "--connections 10/s --max-wait 2s"`);
  }
  const maxWaitMs = flags.maxWait === undefined ? 0 : parseOption("--max-wait", flags.maxWait, parseDuration);
  const connections = flags.connections === undefined ? undefined : { perSecond: parseOption("--connections", flags.connections, (text) => parseCountRate(text)), burst: 1, maxWaitMs };
  return {
    ...common,
    mode: "tcp",
    up,
    down,
    concurrency: slots && { n: (slots.spec as { n: number }).n, maxWaitMs },
    per,
    idleTimeoutMs: flags.idleTimeout === undefined ? Infinity : parseOption("--idle-timeout", flags.idleTimeout, parsePositiveDuration),
    connections,
  };
}

function parseHttpOptions(flags: ProxyFlags, common: CommonProxyConfig, target: string): HttpProxyConfig {
  const keyed = common.shared.key !== undefined;
  // With --key too: each client's key in the store is made from it.
  const routes = flags.route?.map(parseRouteFlag) ?? flags.routeRules ?? [];
  if (flags.rate === undefined && flags.window === undefined && flags.concurrency === undefined && flags.total === undefined && routes.length === 0) {
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
  const classes = parseProxyClasses(flags, limits, first?.spec.kind === "bucket" ? first.spec.rate : Infinity);
  checkRouteClasses(routes, classes);
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
    classes,
    total: parseTotal(flags),
    routes,
  };
}

/**
 * Rules beside classes: a rule may name a class (--class defines it), and
 * with classes it may not have limits of its own (classes share each key's
 * limits, one set per key; a rule's own would be a second).
 */
function checkRouteClasses(routes: readonly RouteRuleConfig[], classes: HttpProxyConfig["classes"]): void {
  const names = classes?.specs.map((spec) => spec.name) ?? [];
  for (const rule of routes) {
    const where = `--route "${describeRoutePattern(rule.pattern)}"`;
    if (rule.className !== undefined && classes === undefined) {
      throw new UsageError(`${where}: class=${rule.className} names a class, and no --class defines any; add e.g. "--class ${rule.className}=10/s", or drop class=`);
    }
    if (rule.className !== undefined && !names.includes(rule.className)) throw new UsageError(describeUnknownClass(rule.className, names, `${where} class=${rule.className}`));
    if (classes !== undefined && rule.limits !== undefined) {
      throw new UsageError(`${where}: limits of its own beside --class are not built (classes share each key's limits); give the rule only cost= and class=, or drop --class`);
    }
  }
}

/**
 * --total RATE (repeatable) with --total-burst N (the i-th with the i-th, default 100 ms of
 * its rate, at least 1): a set of buckets for every request together, beside each client's.
 */
function parseTotal(flags: ProxyFlags): ParsedLimit[] | undefined {
  const rates = flags.total ?? [];
  const bursts = flags.totalBurst ?? [];
  if (rates.length === 0) {
    if (bursts.length > 0) throw new UsageError(`--total-burst: sizes the --total bucket, and no --total is given; add e.g. "--total 2000/s --total-burst ${bursts[0]}"`);
    return undefined;
  }
  if (bursts.length > rates.length) {
    throw new UsageError(`--total-burst: given ${bursts.length} times for ${rates.length} --total; the i-th --total-burst goes with the i-th --total, so drop one or add its --total`);
  }
  if (flags.class !== undefined) {
    throw new UsageError(`--total: beside --class is not built (classes share each key's limits); drop --total, or put a proxy with "--per all --rate RATE" in front`);
  }
  return rates.map((text, index) => {
    const rate = parseOption("--total", text, (value) => {
      if (rateKindOf(value) === "bytes") throw new Error(`"${value}" is a byte rate; --total counts the requests of every client together ("2000/s")`);
      const perSecond = parseCountRate(value);
      if (perSecond === Infinity) throw new Error(`"${value}" is no limit; give a rate such as "2000/s", or leave --total out`);
      return perSecond;
    });
    const burstText = bursts[index];
    const burst = burstText === undefined ? Math.max(1, Math.floor(rate / 10)) : parseOption("--total-burst", burstText, parseTotalBurst);
    return { spec: { kind: "bucket", unit: "count", rate, burst }, flag: `--total ${text}${burstText === undefined ? "" : ` --total-burst ${burstText}`}`, burstGiven: burstText !== undefined };
  });
}

/** A whole number of requests, at least 1. */
function parseTotalBurst(text: string): number {
  const n = parseCount(text);
  if (!(n >= 1)) throw new Error(`"${text}" must be at least 1 (requests at once); try "--total-burst 200"`);
  return n;
}

/**
 * --class, --route-class, --class-from and --default-class: classes share each key's limits (its
 * first rate); a request's class is its first matching route's, else its header's, else the
 * --default-class (default the first).
 */
function parseProxyClasses(flags: ProxyFlags, limits: readonly ParsedLimit[], keyRate: number): HttpProxyConfig["classes"] {
  const texts = flags.class ?? [];
  if (texts.length === 0) {
    for (const [given, flag] of [[flags.routeClass, "--route-class"], [flags.classFrom, "--class-from"], [flags.defaultClass, "--default-class"]] as const) {
      if (given !== undefined) throw new UsageError(`${flag}: names a class, and no --class defines any; add e.g. "--class interactive=40/s --class batch=10/s,prio=1"`);
    }
    return undefined;
  }
  if (limits.some((limit) => limit.spec.kind === "concurrency")) {
    throw new UsageError(`--class: classes share rates and windows, not --concurrency; drop --concurrency, or run it in a proxy of its own in front`);
  }
  const specs = parseClassOptions(texts, "count", keyRate);
  const names = specs.map((spec) => spec.name);
  let header: string | undefined;
  if (flags.classFrom !== undefined) {
    const match = /^header:([!#$%&'*+.^_`|~0-9A-Za-z-]+)$/i.exec(flags.classFrom.trim());
    if (!match) throw new UsageError(`--class-from: "${flags.classFrom}" is not a header; try "--class-from header:X-Priority" (the header's value names the class)`);
    header = match[1]!;
  }
  const routes = (flags.routeClass ?? []).map((text) => {
    const route = parseOption("--route-class", text, parseClassRoute);
    if (!names.includes(route.className)) throw new UsageError(describeUnknownClass(route.className, names, `--route-class ${text}`));
    return route;
  });
  const defaultClass = flags.defaultClass ?? names[0]!;
  if (!names.includes(defaultClass)) throw new UsageError(describeUnknownClass(defaultClass, names, "--default-class"));
  return { specs, routes, header, defaultClass };
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
