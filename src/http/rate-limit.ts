import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { addressKey, DEFAULT_IPV6_PREFIX, plainAddress } from "../core/address-key.js";
import type { GateResult } from "./request-gate.js";
import { type Body, checkLimitOptions, type HeaderFields, LIMIT_OPTION_NAMES, type LimitOptions, oneLine, RequestLimiter, type Verdict } from "./request-limiter.js";
import { clientAddress, TrustedProxies, untrustedForwarder, untrustedProxyLine } from "./trusted-proxies.js";

/** The options of `rateLimit`: the limit's (shared with tbucket/fastify and tbucket/fetch) and node:http's own. */
export interface RateLimitOptions extends LimitOptions<IncomingMessage> {
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
   * Answers a refused request instead of the default 429 (its status 429 and
   * its Retry-After and RateLimit fields are set already): write the
   * response, or call `next` to let it through after all.
   */
  handler?: (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, result: GateResult) => void;
}

const OPTION_NAMES = [...LIMIT_OPTION_NAMES, ...Object.keys({ trustProxy: true, ipv6Subnet: true, handler: true } satisfies Record<Exclude<keyof RateLimitOptions, keyof LimitOptions<IncomingMessage>>, true>)];

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
  const settings = checkLimitOptions(options, OPTION_NAMES);
  checkNodeOptions(options);
  const log = options.log ?? ((line: string) => console.error(line));
  const limiter = new RequestLimiter<IncomingMessage>(options, settings, nodeClientKey(options, log));
  const queueing = settings.maxWaitMs > 0;
  const handler = options.handler;

  const carryOut = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, verdict: Verdict): void => {
    switch (verdict.kind) {
      case "uncounted":
        next();
        return;
      case "cancelled":
        return;
      case "admitted":
        if (verdict.result.release) holdUntilEnd(res, verdict.result.release);
        if (verdict.headers.length > 0 && !res.headersSent) setHeaders(res, verdict.headers);
        next();
        return;
      case "unavailable":
        if (res.headersSent || res.destroyed) res.destroy();
        else send(res, 503, verdict.headers, verdict.body);
        return;
      case "refused": {
        if (res.writableEnded || res.destroyed) return;
        // Something wrote the response's head before the limit decided: a 429 can no longer be said, and
        // ending it would pass for a whole response, so the connection is cut (as a failed handler's is).
        if (res.headersSent) {
          res.destroy();
          return;
        }
        if (handler) {
          res.statusCode = 429;
          setHeaders(res, verdict.headers);
          handler(req, res, (error?: unknown) => {
            // Let through after all: the response is the handler's, with none of the refusal's status or wait.
            if (error === undefined && !res.headersSent) {
              res.statusCode = 200;
              res.removeHeader("Retry-After");
              res.removeHeader("retry-after-ms");
            }
            next(error);
          }, verdict.result);
          return;
        }
        const body = limiter.refusalBody(req, verdict.result);
        if (!(body instanceof Promise)) send(res, 429, verdict.headers, body);
        else body.then((resolved) => send(res, 429, verdict.headers, resolved), next);
      }
    }
  };

  const middleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    decideOnResponse(limiter, req, res, queueing, (verdict) => carryOut(req, res, next, verdict), next);
  }) as RateLimitMiddleware;

  middleware.wrap = (handle) => (req, res) => {
    middleware(req, res, (error) => {
      if (error === undefined) {
        handle(req, res);
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
  Object.defineProperty(middleware, "liveKeys", { get: () => limiter.liveKeys });
  middleware.sweep = () => limiter.sweep();
  middleware.close = () => limiter.close();
  return middleware;
}

function setHeaders(res: ServerResponse, headers: HeaderFields): void {
  for (const [name, value] of headers) res.setHeader(name, value);
}

/** A whole answer of the middleware's own (429, 503), sent by it so that a framework's error handler never turns it into a 500 with a stack trace. */
function send(res: ServerResponse, status: number, headers: HeaderFields, body: Body): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  res.statusCode = status;
  setHeaders(res, headers);
  res.setHeader("Content-Type", body.contentType);
  res.setHeader("Content-Length", Buffer.byteLength(body.text));
  res.end(body.text);
}

function checkNodeOptions(options: RateLimitOptions): void {
  const ipv6Subnet = options.ipv6Subnet ?? DEFAULT_IPV6_PREFIX;
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw new RangeError(`Expected \`ipv6Subnet\` to be an integer from 1 to 128 (the bits of an IPv6 address that make a client), got \`${ipv6Subnet}\` (${typeof ipv6Subnet})`);
  }
  for (const name of ["trustProxy", "ipv6Subnet"] as const) {
    if (options[name] !== undefined && options.key !== undefined) {
      throw new TypeError(`Expected \`${name}\` only without \`key\`: it shapes the default key, the client's address, and \`key\` replaces that`);
    }
  }
  if (options.trustProxy !== undefined && !Array.isArray(options.trustProxy)) {
    throw new TypeError(`Expected \`trustProxy\` to be an array of addresses and CIDRs, got \`${String(options.trustProxy)}\` (${typeof options.trustProxy})`);
  }
  if (options.handler !== undefined && typeof options.handler !== "function") {
    throw new TypeError(`Expected \`handler\` to be a function, got \`${String(options.handler)}\` (${typeof options.handler})`);
  }
}

/** The default key of a node:http request (Express's, Connect's, Fastify's raw one): its client's address. */
export function nodeClientKey(options: { trustProxy?: readonly string[]; ipv6Subnet?: number }, log: (line: string) => void): (req: IncomingMessage) => string {
  return clientKey(options.trustProxy, options.ipv6Subnet ?? DEFAULT_IPV6_PREFIX, log);
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

/**
 * The verdict on a request answered through a node:http response (the
 * framework's raw one): a queued wait is given up when the client hangs up.
 * `then` gets the verdict, at once when no step was async; `failed` what
 * rejected (a RequestFunctionError), for the framework's error handler.
 */
export function decideOnResponse<Req>(limiter: RequestLimiter<Req>, req: Req, res: ServerResponse, queueing: boolean, then: (verdict: Verdict) => void, failed: (error: Error) => void): void {
  const waiting = queueing ? abortOnHangUp(res) : undefined;
  const verdict = limiter.decide(req, waiting?.signal);
  if (!(verdict instanceof Promise)) {
    waiting?.done();
    then(verdict);
    return;
  }
  verdict.then(
    (resolved) => {
      waiting?.done();
      then(resolved);
    },
    (error: Error) => {
      waiting?.done();
      failed(error);
    },
  );
}

/** Frees a request's concurrency slot when its response ends: finished, or cut short (the client left, the handler failed). */
export function holdUntilEnd(res: ServerResponse, release: () => void): void {
  if (res.writableFinished || res.destroyed || (res as { closed?: boolean }).closed) {
    release();
    return;
  }
  res.once("finish", release);
  res.once("close", release);
}

/** An abort signal for a waiting request, fired when its client hangs up before the response. */
export function abortOnHangUp(res: ServerResponse): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onClose = (): void => controller.abort();
  res.once("close", onClose);
  return { signal: controller.signal, done: () => res.off("close", onClose) };
}

