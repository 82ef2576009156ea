import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Clock } from "../core/clock.js";
import { StoreError } from "../store/bucket-store.js";
import type { KeyLimiterSource } from "./key-limiter.js";
import { rateLimitPolicy, rateLimitRefused, rateLimitState } from "./rate-limit-fields.js";
import { type GateResult, RequestGate } from "./request-gate.js";
import { type StoreBuckets, storeLimiters } from "./store-limiters.js";
import { clientAddress, TrustedProxies } from "./trusted-proxies.js";

export type { GateDecision, GateResult } from "./request-gate.js";

export interface RateLimitOptions {
  /** Requests per second per key; Infinity for no limit. */
  rate: number;
  /** Requests a key may make at once after being idle; at least 1. */
  burst: number;
  /**
   * The key of a request; by default its client's address (see `trustProxy`).
   * Returning undefined lets the request through without counting it.
   */
  key?: (req: IncomingMessage) => string | undefined;
  /** Addresses and CIDRs of proxies whose X-Forwarded-For / Forwarded are believed for the default key; none by default. */
  trustProxy?: readonly string[];
  /** `drop` (default): refuse with 429 at once; `queue`: hold the request until its turn, up to `maxWaitMs`. */
  policy?: "drop" | "queue";
  /** The longest a queued request waits; required with `policy: "queue"`. */
  maxWaitMs?: number;
  /** The most keys held at once, the least recently used evicted first; default 100,000. */
  maxKeys?: number;
  /** Send RateLimit-Policy and RateLimit on every response (default true); a 429 always has Retry-After. */
  headers?: boolean;
  /** Buckets in a shared store (keys `NAME:<key>`), for a limit that several servers enforce together. */
  store?: StoreBuckets;
  /** Told of every decision, before the response is sent or `next` is called. */
  onDecision?: (req: IncomingMessage, result: GateResult, key: string) => void;
  /** For tests: the clock that buckets and waits use. */
  clock?: Clock;
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
 * of `burst`. A request over the limit gets 429 with a Retry-After that
 * tells the truth: a client that waits that many seconds is let through.
 * With `policy: "queue"` it waits its turn instead, up to `maxWaitMs`, and a
 * client that hangs up while waiting gives its turn back. Responses carry
 * the RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers.
 */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  const settings = checkOptions(options);
  const trusted = options.trustProxy && options.trustProxy.length > 0 ? new TrustedProxies(options.trustProxy) : undefined;
  const keyOf = options.key ?? ((req: IncomingMessage) => clientAddress(req.socket.remoteAddress, req.headers, trusted));
  const source: KeyLimiterSource | undefined = options.store ? storeLimiters(options.store, { rate: options.rate, burst: options.burst, clock: options.clock }) : undefined;
  const gate = new RequestGate({ ...settings, source, clock: options.clock });
  const sendHeaders = options.headers ?? true;

  const respond = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, key: string, result: GateResult): void => {
    options.onDecision?.(req, result, key);
    if (result.decision === "cancelled") return;
    const policy = rateLimitPolicy(result.rate);
    if (result.decision === "refused") {
      if (res.headersSent || res.destroyed) return;
      res.statusCode = 429;
      res.setHeader("Retry-After", String(result.retryAfterSeconds));
      if (policy !== undefined) {
        res.setHeader("RateLimit-Policy", policy);
        res.setHeader("RateLimit", rateLimitRefused(result.retryAfterSeconds));
      }
      const body = `Too Many Requests: retry after ${result.retryAfterSeconds} s\n`;
      res.setHeader("Content-Type", "text/plain; charset=utf-8");
      res.setHeader("Content-Length", Buffer.byteLength(body));
      res.end(body);
      return;
    }
    if (sendHeaders && policy !== undefined && !res.headersSent) {
      res.setHeader("RateLimit-Policy", policy);
      res.setHeader("RateLimit", rateLimitState(result.level, result.rate, result.burst)!);
    }
    next();
  };

  const middleware = ((req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): void => {
    let key: string | undefined;
    try {
      key = keyOf(req);
    } catch (error) {
      next(error);
      return;
    }
    if (key === undefined) {
      next();
      return;
    }
    const waiting = settings.maxWaitMs > 0 ? abortOnHangUp(res) : undefined;
    let decided: GateResult | Promise<GateResult>;
    try {
      decided = gate.admit(key, waiting?.signal);
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
  }) as RateLimitMiddleware;

  middleware.wrap = (handler) => (req, res) => {
    middleware(req, res, (error) => {
      if (error === undefined) {
        handler(req, res);
        return;
      }
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
  };
  return middleware;
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

/** An abort signal for a waiting request, fired when its client hangs up before the response. */
function abortOnHangUp(res: ServerResponse): { signal: AbortSignal; done(): void } {
  const controller = new AbortController();
  const onClose = (): void => controller.abort();
  res.once("close", onClose);
  return { signal: controller.signal, done: () => res.off("close", onClose) };
}

function checkOptions(options: RateLimitOptions): { rate: number; burst: number; maxWaitMs: number; maxKeys: number } {
  if (typeof options !== "object" || options === null) throw new TypeError(`Expected options to be an object, got \`${String(options)}\``);
  const { rate, burst } = options;
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
  if (options.key !== undefined && typeof options.key !== "function") {
    throw new TypeError(`Expected \`key\` to be a function, got \`${String(options.key)}\` (${typeof options.key})`);
  }
  return { rate, burst, maxWaitMs, maxKeys };
}
