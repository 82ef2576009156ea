import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Clock } from "../core/clock.js";
import { StoreError } from "../store/bucket-store.js";
import type { KeyLimiterSource } from "./key-limiter.js";
import { rateLimitPolicy, rateLimitRefused, rateLimitSetPolicy, rateLimitSetRefused, rateLimitSetState, rateLimitState } from "./rate-limit-fields.js";
import { checkLimitSpecs, type LimitSpec } from "../core/limit-spec.js";
import { type GateResult, RequestGate } from "./request-gate.js";
import { type StoreBuckets, storeLimiters } from "./store-limiters.js";
import { storeKeySets } from "./store-key-sets.js";
import { storeKeyClasses } from "./store-key-classes.js";
import { ClassDefinitionError, type ClassSpec, resolveClasses } from "../core/class-spec.js";
import { addressKey, DEFAULT_IPV6_PREFIX, plainAddress } from "../core/address-key.js";
import { clientAddress, TrustedProxies, untrustedForwarder, untrustedProxyLine } from "./trusted-proxies.js";

export type { GateDecision, GateResult } from "./request-gate.js";
export type { LimitLevel } from "./key-set.js";

/**
 * One limit of a key's set, counting requests (DESIGN section 11):
 * - `{ rate, burst }`: a token bucket, `rate` requests a second, `burst` at once (default 1);
 * - `{ n, windowMs }`: at most `n` requests in any `windowMs` (sliding, exact);
 * - `{ concurrency }`: at most that many requests under way at once, each holding its slot until its response ends.
 */
export type RequestLimit = { rate: number; burst?: number } | { n: number; windowMs: number } | { concurrency: number };

export interface RateLimitOptions {
  /** Requests per second per key; Infinity for no limit. The shorthand for `limits: [{ rate, burst }]`. */
  rate?: number;
  /** Requests a key may make at once after being idle; at least 1. */
  burst?: number;
  /**
   * A set of limits per key, every one of which must admit a request (all or
   * nothing: a refused request costs nothing in any): e.g.
   * `[{ rate: 10, burst: 20 }, { n: 1000, windowMs: 3_600_000 }, { concurrency: 20 }]`.
   * Numbered from 1 in this order (`limitedBy`, the `limit-N` RateLimit policies). Instead of `rate` and `burst`.
   */
  limits?: readonly RequestLimit[];
  /**
   * The key of a request, or a promise of it; by default its client's address
   * (see `trustProxy` and `ipv6Subnet`). Returning undefined lets the request
   * through without counting it. One that throws, rejects or gives anything
   * but a string or undefined fails the request (a KeyFunctionError: 500),
   * never admits it.
   */
  key?: (req: IncomingMessage) => string | undefined | Promise<string | undefined>;
  /**
   * Addresses and CIDRs of proxies whose X-Forwarded-For / Forwarded are believed
   * for the default key (where a request carries both, only the hops both name).
   * Unset, the default key is the framework's `req.ip` where there is one (Express's
   * `trust proxy`), else the peer's address.
   */
  trustProxy?: readonly string[];
  /** IPv6 clients are keyed by their network of this many bits (default 56; 128 for the whole address). */
  ipv6Subnet?: number;
  /**
   * Classes that share each key's limit (design section 12; HTB's rules):
   * each class's `rate` is its guarantee, what is left is lent to the lowest
   * `prio` first, by `weight` within a prio, never past its `ceil`, e.g.
   * `[{ name: "paid", rate: 80 }, { name: "free", rate: 10, prio: 1 }]` within
   * `rate: 100`. Every request is taken as the class `classOf` gives. A
   * refused request's Retry-After is the instant its class could be served.
   * Not with a `concurrency` limit.
   */
  classes?: readonly ClassSpec[];
  /**
   * The class of a request, or a promise of it (with `classes`). Undefined
   * takes it as `defaultClass`; a class not defined, or one that throws,
   * fails the request (a ClassFunctionError: 500), never admits it.
   */
  classOf?: (req: IncomingMessage) => string | undefined | Promise<string | undefined>;
  /** The class of a request `classOf` gives none for (or of every request, without `classOf`). */
  defaultClass?: string;
  /** `drop` (default): refuse with 429 at once; `queue`: hold the request until its turn, up to `maxWaitMs`. */
  policy?: "drop" | "queue";
  /** The longest a queued request waits; required with `policy: "queue"`. */
  maxWaitMs?: number;
  /** The most keys held at once, the least recently used evicted first; default 100,000. */
  maxKeys?: number;
  /** Send RateLimit-Policy and RateLimit on every response (default true); a 429 always has Retry-After. */
  headers?: boolean;
  /** Buckets, or with `limits` sets of limits, in a shared store (keys `NAME:<key>`), for a limit that several servers enforce together. */
  store?: StoreBuckets;
  /** Told of every decision, before the response is sent or `next` is called. */
  onDecision?: (req: IncomingMessage, result: GateResult, key: string) => void;
  /** Where the middleware's one-line warnings and errors go; default `console.error`. */
  log?: (line: string) => void;
  /** For tests: the clock that buckets and waits use. */
  clock?: Clock;
}

/** Every option there is (a record, so that a new option cannot be left out): any other is refused, since a misspelled limit would silently be no limit. */
const OPTION_NAMES = Object.keys({
  rate: true,
  burst: true,
  limits: true,
  key: true,
  trustProxy: true,
  ipv6Subnet: true,
  classes: true,
  classOf: true,
  defaultClass: true,
  policy: true,
  maxWaitMs: true,
  maxKeys: true,
  headers: true,
  store: true,
  onDecision: true,
  log: true,
  clock: true,
} satisfies Record<keyof RateLimitOptions, true>);

/** The `key` function threw, rejected, or gave something that is not a key: the request cannot be counted, so it fails. */
export class KeyFunctionError extends Error {
  readonly code = "EKEYFUNCTION";
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = "KeyFunctionError";
  }
}

/** The `classOf` function threw, rejected, or gave a class that is not defined: the request cannot be counted, so it fails. */
export class ClassFunctionError extends Error {
  readonly code = "ECLASSFUNCTION";
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = "ClassFunctionError";
  }
}

/** The middleware, `(req, res, next)`, with what it holds. */
export interface RateLimitMiddleware {
  (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void;
  /** A node:http request listener that runs `handler` for the requests let through. */
  wrap(handler: RequestListener): RequestListener;
  /** Keys held now. */
  readonly liveKeys: number;
  /**
   * Drops keys whose buckets have refilled completely (the same as new ones),
   * from the least recently used on, stopping at the first still in use;
   * returns how many. New keys sweep a little as they come; an idle server
   * may call this now and then to give the memory back.
   */
  sweep(): number;
  /** Forgets every key (releasing shared buckets' leases); the middleware still works afterwards. */
  close(): void;
}

export const DEFAULT_MAX_KEYS = 100_000;

/**
 * Rate limiting for node:http, Express and Connect: one token bucket per key
 * (the client's address by default), `rate` requests a second with bursts
 * of `burst`, or a set of `limits` per key (buckets, sliding windows,
 * concurrency), every one of which must admit a request. A request over the limit gets 429 with a Retry-After that
 * tells the truth: a client that waits that many seconds is let through.
 * With `policy: "queue"` it waits its turn instead, up to `maxWaitMs`, and a
 * client that hangs up while waiting gives its turn back. Responses carry
 * the RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const settings = checkOptions(options);
  const log = options.log ?? ((line: string) => console.error(line));
  const keyOf = options.key ?? clientKey(options.trustProxy, settings.ipv6Subnet, log);
  const { rate, burst, limits, maxWaitMs, maxKeys, classes } = settings;
  // With classes the store keeps each key's limits and classes; with a set of limits, its set; with one bucket, its bucket.
  const classSource = options.store && classes ? storeKeyClasses(options.store, { ...classes, clock: options.clock }) : undefined;
  const keySets = options.store && limits && !classes ? storeKeySets(options.store, { clock: options.clock }) : undefined;
  const source: KeyLimiterSource | undefined = options.store && !limits && !classes ? storeLimiters(options.store, { rate, burst, clock: options.clock }) : undefined;
  const gate = new RequestGate({
    rate,
    burst,
    limits: classes ? undefined : limits,
    keySets,
    maxWaitMs,
    maxKeys,
    source,
    classes: classes && { specs: classes.classes, limits: classes.limits, source: classSource },
    clock: options.clock,
  });
  const classOf = classes && classFunction(options, classes.names);
  const setPolicy = limits && rateLimitSetPolicy(limits);
  const sendHeaders = options.headers ?? true;

  const respond = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, key: string, result: GateResult): void => {
    options.onDecision?.(req, result, key);
    if (result.decision === "cancelled") return;
    if (result.release) holdUntilEnd(res, result.release);
    const policy = limits ? setPolicy : rateLimitPolicy(result.rate);
    if (result.decision === "refused") {
      if (res.writableEnded || res.destroyed) return;
      // Something wrote the response's head before the limit decided: a 429 can no longer be said, and
      // ending it would pass for a whole response, so the connection is cut (as a failed handler's is).
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.statusCode = 429;
      res.setHeader("Retry-After", String(result.retryAfterSeconds));
      if (policy !== undefined) {
        res.setHeader("RateLimit-Policy", policy);
        // With classes a refusal may be the class's while the key has room: the RateLimit field, of the key's limits, would not say it.
        const refused = classes ? undefined : limits ? rateLimitSetRefused(limits, result.limitedBy, result.retryAfterSeconds) : rateLimitRefused(result.retryAfterSeconds);
        if (refused !== undefined) res.setHeader("RateLimit", refused);
      }
      const body = `Too Many Requests: retry after ${result.retryAfterSeconds} s\n`;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.setHeader("Content-Length", Buffer.byteLength(body));
      res.end(body);
      return;
    }
    if (sendHeaders && policy !== undefined && !res.headersSent) {
      res.setHeader("RateLimit-Policy", policy);
      const state = classes ? undefined : result.limits ? rateLimitSetState(result.limits) : rateLimitState(result.level, result.rate, result.burst);
      if (state !== undefined) res.setHeader("RateLimit", state);
    }
    next();
  };

  const decide = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, key: unknown): void => {
    if (key === undefined) {
      next();
      return;
    }
    if (typeof key !== "string") {
      next(new KeyFunctionError(`the \`key\` function gave \`${describeValue(key)}\` (${key === null ? "null" : typeof key}), not a string; return the request's key, or undefined to let it through uncounted`));
      return;
    }
    if (classOf) {
      let className: string | Promise<string>;
      try {
        className = classOf(req);
      } catch (error) {
        next(error);
        return;
      }
      if (typeof className === "string") admit(req, res, next, key, className);
      else className.then((resolved) => admit(req, res, next, key, resolved), next);
      return;
    }
    admit(req, res, next, key, undefined);
  };

  const admit = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, key: string, className: string | undefined): void => {
    const waiting = settings.maxWaitMs > 0 ? abortOnHangUp(res) : undefined;
    let decided: GateResult | Promise<GateResult>;
    try {
      decided = gate.admit(key, waiting?.signal, className);
    } catch (error) {
      waiting?.done();
      next(error);
      return;
    }
    if (!(decided instanceof Promise)) {
      waiting?.done();
      respond(req, res, next, key, decided);
      return;
    }
    const admittedKey = key;
    decided.then(
      (result) => {
        waiting?.done();
        respond(req, res, next, admittedKey, result);
      },
      (error: unknown) => {
        waiting?.done();
        if (error instanceof StoreError) storeUnavailable(res);
        else next(error);
      },
    );
  };

  const middleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    let key: unknown;
    try {
      key = keyOf(req);
    } catch (error) {
      next(keyFunctionFailed(error));
      return;
    }
    if (!isThenable(key)) {
      decide(req, res, next, key);
      return;
    }
    key.then(
      (resolved) => decide(req, res, next, resolved),
      (error: unknown) => next(keyFunctionFailed(error)),
    );
  }) as RateLimitMiddleware;

  middleware.wrap = (handler) => (req, res) => {
    middleware(req, res, (error) => {
      if (error === undefined) {
        handler(req, res);
        return;
      }
      // A lost store is the middleware's own 503: what reaches here is a fault.
      log(`tbucket/http: ${req.method} ${req.url}: ${res.headersSent ? "cut the response" : "answered 500"}: ${oneLine(error)}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.statusCode = 500;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.end("Internal Server Error\n");
    });
  };
  Object.defineProperty(middleware, "liveKeys", { get: () => gate.liveKeys });
  middleware.sweep = () => gate.sweep();
  middleware.close = () => {
    gate.close();
    source?.dispose?.();
    keySets?.dispose();
    classSource?.dispose?.();
  };
  return middleware;
}

/**
 * The class of each request: `classOf`'s answer (or `defaultClass`),
 * checked against the classes; what is not a defined class is a
 * ClassFunctionError, thrown or rejected.
 */
function classFunction(options: RateLimitOptions, names: readonly string[]): (req: IncomingMessage) => string | Promise<string> {
  const check = (given: unknown): string => {
    const name = given === undefined ? options.defaultClass : given;
    if (typeof name === "string" && names.includes(name)) return name;
    const what = given === undefined ? "no class, and there is no `defaultClass`" : `\`${describeValue(given)}\`${typeof given === "string" ? "" : ` (${given === null ? "null" : typeof given})`}`;
    throw new ClassFunctionError(`the \`classOf\` function gave ${what}; the classes are ${names.join(", ")}`);
  };
  const classOf = options.classOf;
  if (!classOf) return () => check(undefined);
  return (req) => {
    let given: unknown;
    try {
      given = classOf(req);
    } catch (error) {
      throw new ClassFunctionError(`the \`classOf\` function failed: ${oneLine(error)}`, { cause: error });
    }
    if (!isThenable(given)) return check(given);
    return Promise.resolve(given).then(check, (error: unknown) => {
      throw new ClassFunctionError(`the \`classOf\` function failed: ${oneLine(error)}`, { cause: error });
    });
  };
}

/** A lost store is asked again at least once a second, so a client may come back after that. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/**
 * The answer while the store behind a shared limit is lost (onStoreError
 * "fail"): the limit cannot be checked, so nothing is let through, and the
 * client is told when to try again. Sent by the middleware itself, so that a
 * framework's error handler never turns it into a 500 with a stack trace.
 */
function storeUnavailable(res: ServerResponse): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const body = "Service Unavailable: the rate limit's store cannot be reached\n";
  res.statusCode = 503;
  res.setHeader("Retry-After", String(STORE_RETRY_AFTER_SECONDS));
  res.setHeader("Content-Type", "text/plain; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(body));
  res.end(body);
}

/** The key of a request whose socket closed before its address was read: counted like the rest, in a bucket of their own. */
const UNKNOWN_CLIENT = "-";

/**
 * The default key: the client's address, IPv6 by its network. With `trustProxy`, the
 * forwarding chain is walked back through the trusted proxies; without, the framework's
 * `req.ip` is taken where there is one (Express resolves it by its `trust proxy`), else
 * the peer's address. A request forwarded by a private address to a server that does
 * neither is said once: every client behind that proxy shares its bucket.
 */
function clientKey(trustProxy: readonly string[] | undefined, ipv6Subnet: number, log: (line: string) => void): (req: IncomingMessage) => string {
  const trusted = trustProxy && trustProxy.length > 0 ? new TrustedProxies(trustProxy) : undefined;
  if (trusted) {
    return (req) => {
      const address = clientAddress(req.socket.remoteAddress, req.headers, trusted);
      return address === undefined ? UNKNOWN_CLIENT : addressKey(address, ipv6Subnet);
    };
  }
  let warned = false;
  let warnedTrustAll = false;
  return (req) => {
    const peer = req.socket.remoteAddress === undefined ? undefined : plainAddress(req.socket.remoteAddress);
    const frameworkIp = (req as { ip?: unknown }).ip;
    const address = typeof frameworkIp === "string" && frameworkIp !== "" ? plainAddress(frameworkIp) : peer;
    if (!warnedTrustAll && frameworkIp !== undefined && trustsEveryProxy(req)) {
      warnedTrustAll = true;
      log(
        `tbucket/http: Express's "trust proxy" is true, so req.ip is whatever X-Forwarded-For a client writes, and each request can choose its own bucket; ` +
          `set it to your proxies' addresses (app.set("trust proxy", "10.0.0.1")) or give trustProxy`,
      );
    }
    if (address === undefined) return UNKNOWN_CLIENT;
    const field = !warned && address === peer ? untrustedForwarder(address, req.headers) : undefined;
    if (field !== undefined) {
      warned = true;
      log(`tbucket/http: ${untrustedProxyLine(address, field, "trustProxy", `set trustProxy: ["${address}"] (or Express's "trust proxy")`)}`);
    }
    return addressKey(address, ipv6Subnet);
  };
}

/** Whether the request's Express app believes every X-Forwarded-For hop (`trust proxy` true), as express-rate-limit warns too. */
function trustsEveryProxy(req: IncomingMessage): boolean {
  const app = (req as { app?: { get?: unknown } }).app;
  return typeof app?.get === "function" && (app.get as (name: string) => unknown).call(app, "trust proxy") === true;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function keyFunctionFailed(error: unknown): KeyFunctionError {
  return new KeyFunctionError(`the \`key\` function failed: ${oneLine(error)}`, { cause: error });
}

/** An error's message on one line, for a log that holds one line per event. */
function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, " ");
}

function describeValue(value: unknown): string {
  if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
  return String(value);
}

/** Frees a request's concurrency slot when its response ends: finished, or cut short (the client left, the handler failed). */
function holdUntilEnd(res: ServerResponse, release: () => void): void {
  if (res.writableFinished || res.destroyed || (res as { closed?: boolean }).closed) {
    release();
    return;
  }
  res.once("finish", release);
  res.once("close", release);
}

/** An abort signal for a waiting request, fired when its client hangs up before the response. */
function abortOnHangUp(res: ServerResponse): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onClose = (): void => controller.abort();
  res.once("close", onClose);
  return { signal: controller.signal, done: () => res.off("close", onClose) };
}

interface Settings {
  rate: number;
  burst: number;
  /** Set with `classes`: the classes, their names, and the limits they share (the set, or the one bucket as a set). */
  classes: { classes: readonly ClassSpec[]; names: readonly string[]; limits: LimitSpec[] } | undefined;
  /** Set when the limits are more than one bucket: a set per key. */
  limits: LimitSpec[] | undefined;
  maxWaitMs: number;
  maxKeys: number;
  ipv6Subnet: number;
}

function checkOptions(options: RateLimitOptions): Settings {
  if (typeof options !== "object" || options === null) throw new TypeError(`Expected options to be an object, got \`${String(options)}\``);
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || OPTION_NAMES.includes(name)) continue;
    const near = OPTION_NAMES.find((known) => known.toLowerCase().startsWith(name.toLowerCase()) || name.toLowerCase().startsWith(known.toLowerCase()));
    throw new TypeError(`Unknown option \`${name}\`${near ? ` (did you mean \`${near}\`?)` : ""}; the options are ${OPTION_NAMES.map((known) => `\`${known}\``).join(", ")}`);
  }
  let { rate, burst } = options;
  let limits: LimitSpec[] | undefined;
  if (options.limits !== undefined) {
    for (const name of ["rate", "burst"] as const) {
      if (options[name] !== undefined) throw new TypeError(`Expected \`${name}\` or \`limits\`, not both: write the bucket as one of the limits, \`{ rate, burst }\``);
    }
    limits = checkLimits(options.limits);
    if (limits.length === 1 && limits[0]!.kind === "bucket") {
      ({ rate, burst } = limits[0]!);
      limits = undefined;
    } else {
      // The gate's one-bucket settings are unused beside a set.
      ({ rate, burst } = { rate: Infinity, burst: 1 });
    }
  }
  if (typeof rate !== "number" || Number.isNaN(rate) || rate < 0) {
    throw new RangeError(`Expected \`rate\` to be a non-negative number or Infinity, got \`${rate}\` (${typeof rate})`);
  }
  if (typeof burst !== "number" || !Number.isFinite(burst) || burst < 1) {
    throw new RangeError(`Expected \`burst\` to be a finite number of at least 1, got \`${burst}\` (${typeof burst})`);
  }
  const policy = options.policy ?? "drop";
  if (policy !== "drop" && policy !== "queue") throw new RangeError(`Expected \`policy\` to be "drop" or "queue", got \`${String(policy)}\``);
  let maxWaitMs = 0;
  if (policy === "queue") {
    maxWaitMs = options.maxWaitMs as number;
    if (typeof maxWaitMs !== "number" || Number.isNaN(maxWaitMs) || maxWaitMs < 0) {
      throw new RangeError(`Expected \`maxWaitMs\` to be a non-negative number with policy "queue", got \`${maxWaitMs}\` (${typeof maxWaitMs})`);
    }
  } else if (options.maxWaitMs !== undefined) {
    throw new TypeError(`Expected \`maxWaitMs\` only with policy "queue", got policy "drop"`);
  }
  const maxKeys = options.maxKeys ?? DEFAULT_MAX_KEYS;
  if (!Number.isInteger(maxKeys) || maxKeys < 1) {
    throw new RangeError(`Expected \`maxKeys\` to be a positive integer, got \`${maxKeys}\` (${typeof maxKeys})`);
  }
  const ipv6Subnet = options.ipv6Subnet ?? DEFAULT_IPV6_PREFIX;
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw new RangeError(`Expected \`ipv6Subnet\` to be an integer from 1 to 128 (the bits of an IPv6 address that make a client), got \`${ipv6Subnet}\` (${typeof ipv6Subnet})`);
  }
  for (const name of ["key", "onDecision", "log"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "function") throw new TypeError(`Expected \`${name}\` to be a function, got \`${String(value)}\` (${typeof value})`);
  }
  for (const name of ["trustProxy", "ipv6Subnet"] as const) {
    if (options[name] !== undefined && options.key !== undefined) {
      throw new TypeError(`Expected \`${name}\` only without \`key\`: it shapes the default key, the client's address, and \`key\` replaces that`);
    }
  }
  if (options.trustProxy !== undefined && !Array.isArray(options.trustProxy)) {
    throw new TypeError(`Expected \`trustProxy\` to be an array of addresses and CIDRs, got \`${String(options.trustProxy)}\` (${typeof options.trustProxy})`);
  }
  return { rate, burst, limits, maxWaitMs, maxKeys, ipv6Subnet, classes: checkClasses(options, limits ?? [{ kind: "bucket", unit: "count", rate, burst }]) };
}

/** The classes, checked against the limits they share; every mistake a TypeError or RangeError naming the option. */
function checkClasses(options: RateLimitOptions, limits: LimitSpec[]): Settings["classes"] {
  if (options.classes === undefined) {
    for (const name of ["classOf", "defaultClass"] as const) {
      if (options[name] !== undefined) throw new TypeError(`Expected \`${name}\` only with \`classes\`, the classes that share each key's limit`);
    }
    return undefined;
  }
  if (options.classOf !== undefined && typeof options.classOf !== "function") {
    throw new TypeError(`Expected \`classOf\` to be a function, got \`${String(options.classOf)}\` (${typeof options.classOf})`);
  }
  if (limits.some((limit) => limit.kind === "concurrency")) {
    throw new TypeError("Expected no `concurrency` limit with `classes`: classes share rates and windows; hold concurrency in a middleware of its own");
  }
  const share = limits.find((limit) => limit.kind === "bucket");
  if (share?.kind !== "bucket") throw new TypeError("Expected a rate among the limits with `classes`: the classes share a rate, e.g. `{ rate: 100, burst: 10 }`");
  let resolved;
  try {
    resolved = resolveClasses(options.classes, share.rate, share.burst);
  } catch (error) {
    if (error instanceof ClassDefinitionError) throw new RangeError(`\`classes\`: ${error.message}`);
    throw error;
  }
  const names = resolved.map((c) => c.name);
  if (options.defaultClass !== undefined && !names.includes(options.defaultClass)) {
    throw new RangeError(`Expected \`defaultClass\` to be one of the classes, ${names.join(", ")}; got \`${String(options.defaultClass)}\``);
  }
  if (options.classOf === undefined && options.defaultClass === undefined) {
    throw new TypeError("Expected `classOf` (the class of a request) or `defaultClass` with `classes`");
  }
  return { classes: options.classes, names, limits };
}

/** The fields of each kind of RequestLimit: a limit with any other is refused, as a misspelled option is. */
const LIMIT_FIELDS: ReadonlyArray<readonly string[]> = [["rate", "burst"], ["n", "windowMs"], ["concurrency"]];

/** `limits` as LimitSpecs counting requests; every mistake a RangeError or TypeError naming `limits[i]` and the field. */
function checkLimits(given: readonly RequestLimit[]): LimitSpec[] {
  if (!Array.isArray(given) || given.length === 0) {
    throw new TypeError(`Expected \`limits\` to be a non-empty array of limits such as { rate: 10, burst: 20 }, { n: 1000, windowMs: 3_600_000 }, { concurrency: 20 }; got \`${describeValue(given)}\``);
  }
  const specs = given.map((limit, index): LimitSpec => {
    const where = `limits[${index}]`;
    if (typeof limit !== "object" || limit === null) throw new TypeError(`Expected \`${where}\` to be a limit object, got \`${String(limit)}\``);
    const names = Object.keys(limit).filter((name) => (limit as Record<string, unknown>)[name] !== undefined);
    const fields = LIMIT_FIELDS.find((kind) => names.includes(kind[0]!));
    const stray = names.find((name) => !fields?.includes(name));
    if (fields === undefined || stray !== undefined) {
      throw new TypeError(
        `Expected \`${where}\` to be { rate, burst? }, { n, windowMs } or { concurrency }, got ${fields === undefined ? "none of rate, n or concurrency" : `\`${stray}\` beside \`${fields[0]}\``}`,
      );
    }
    const positive = (field: string, value: unknown, whole: boolean) => {
      if (typeof value !== "number" || !Number.isFinite(value) || value < 1 || (whole && !Number.isInteger(value))) {
        throw new RangeError(`Expected \`${where}.${field}\` to be a ${whole ? "whole number" : "finite number"} of at least 1, got \`${String(value)}\` (${typeof value})`);
      }
    };
    if ("rate" in limit) {
      const burst = limit.burst ?? 1;
      positive("burst", burst, false);
      return { kind: "bucket", unit: "count", rate: limit.rate, burst };
    }
    if ("n" in limit) {
      positive("n", limit.n, false);
      if (typeof limit.windowMs !== "number" || !Number.isFinite(limit.windowMs) || limit.windowMs <= 0) {
        throw new RangeError(`Expected \`${where}.windowMs\` to be a positive finite number of milliseconds, got \`${String(limit.windowMs)}\` (${typeof limit.windowMs})`);
      }
      return { kind: "window", unit: "count", n: limit.n, windowMs: limit.windowMs };
    }
    positive("concurrency", limit.concurrency, true);
    return { kind: "concurrency", n: limit.concurrency };
  });
  // The rate's own rule (a non-negative number or Infinity) is the core's, said the same way.
  checkLimitSpecs(specs);
  return specs;
}
