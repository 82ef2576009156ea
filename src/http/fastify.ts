/**
 * tbucket/fastify: the limit of tbucket/http as a Fastify plugin, with the
 * conventions of @fastify/rate-limit: `fastify.register(rateLimit, options)`
 * limits every route (unless `global: false`), and a route's
 * `config: { rateLimit: {...} }` gives it limits of its own, or `false` none.
 */
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest, onRequestHookHandler } from "fastify";
import { addressKey, DEFAULT_IPV6_PREFIX, plainAddress } from "../core/address-key.js";
import type { GateResult } from "./request-gate.js";
import { decideOnResponse, holdUntilEnd, nodeClientKey } from "./rate-limit.js";
import { checkLimitOptions, type HeaderFields, LIMIT_OPTION_NAMES, type LimitOptions, RequestLimiter, type Verdict } from "./request-limiter.js";

export * from "./limit-exports.js";

/** A route's own limit (`config: { rateLimit }`): the plugin's options, any of them replaced. */
export interface FastifyRouteLimitOptions extends LimitOptions<FastifyRequest> {
  /** Proxies whose X-Forwarded-For is believed for the default key; unset, Fastify's `request.ip` (its own `trustProxy`). */
  trustProxy?: readonly string[];
  /** IPv6 clients are keyed by their network of this many bits (default 56; 128 for the whole address). */
  ipv6Subnet?: number;
  /** Answers a refused request instead of the default 429 (its status and Retry-After and RateLimit fields set already). */
  handler?: (request: FastifyRequest, reply: FastifyReply, result: GateResult) => void;
}

/** The plugin's options. */
export interface FastifyLimitOptions extends FastifyRouteLimitOptions {
  /** Limit every route (default true), or only those whose config names a `rateLimit`. */
  global?: boolean;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** tbucket/fastify: this route's own limit, or false for none. */
    rateLimit?: FastifyRouteLimitOptions | false;
  }
}

const ROUTE_OPTION_NAMES = [
  ...LIMIT_OPTION_NAMES,
  ...Object.keys({ trustProxy: true, ipv6Subnet: true, handler: true } satisfies Record<Exclude<keyof FastifyRouteLimitOptions, keyof LimitOptions<FastifyRequest>>, true>),
];
const PLUGIN_OPTION_NAMES = [...ROUTE_OPTION_NAMES, "global"];

/** The limits of a route given in its config replace the plugin's limits whole: a rate beside a set would be two limits. */
const LIMIT_NAMES = ["rate", "burst", "limits"] as const;

/**
 * The plugin. Each limit counts its own keys: the plugin's one limit is
 * shared by every route it covers (a client's requests to any of them
 * count together, as an Express middleware on the app does), and a route
 * with its own limit is counted apart (in a store, under `NAME:<route>`).
 */
export const rateLimit: FastifyPluginCallback<FastifyLimitOptions> = (fastify, options, done) => {
  try {
    register(fastify, options);
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
};

function register(fastify: FastifyInstance, options: FastifyLimitOptions): void {
  const { global = true, ...shared } = options;
  if (typeof global !== "boolean") throw new TypeError(`Expected \`global\` to be true or false, got \`${String(global)}\` (${typeof global})`);
  const limits: RequestLimiter<FastifyRequest>[] = [];
  const make = (given: FastifyRouteLimitOptions, optionNames: readonly string[]) => {
    const made = routeLimit(given, optionNames);
    limits.push(made.limiter);
    return made.hook;
  };
  const sharedHook = make(shared, PLUGIN_OPTION_NAMES);
  fastify.addHook("onRoute", (route) => {
    const own = route.config?.rateLimit;
    if (own === false || (own === undefined && !global)) return;
    let hook = sharedHook;
    if (own !== undefined) {
      if (typeof own !== "object" || own === null) throw new TypeError(`Expected the \`rateLimit\` config of ${route.method} ${route.url} to be an object of options or false, got \`${String(own)}\``);
      const merged: FastifyRouteLimitOptions = { ...shared, ...own };
      if (LIMIT_NAMES.some((name) => own[name] !== undefined)) Object.assign(merged, { rate: own.rate, burst: own.burst, limits: own.limits });
      if (merged.store && own.store === undefined) merged.store = { ...merged.store, name: `${merged.store.name}:${String(route.method)} ${route.url}` };
      hook = make(merged, ROUTE_OPTION_NAMES);
    }
    const before = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...before, hook] as onRequestHookHandler[];
  });
  fastify.addHook("onClose", (_instance, closed) => {
    for (const limiter of limits) limiter.close();
    closed();
  });
}

// Fastify's own marks (what fastify-plugin sets): the hooks reach every route of the app, not only those registered inside the plugin.
Object.assign(rateLimit, { [Symbol.for("skip-override")]: true, [Symbol.for("fastify.display-name")]: "tbucket", default: rateLimit });

export default rateLimit;

/** One limit and the onRequest hook that applies it. */
function routeLimit(options: FastifyRouteLimitOptions, optionNames: readonly string[]): { limiter: RequestLimiter<FastifyRequest>; hook: onRequestHookHandler } {
  const theirs = (["max", "timeWindow"] as const).find((name) => (options as Record<string, unknown>)[name] !== undefined);
  if (theirs !== undefined) {
    throw new TypeError(`Unknown option \`${theirs}\`: \`max\` and \`timeWindow\` are @fastify/rate-limit's; write \`limits: [{ n: 100, windowMs: 60_000 }]\` (at most 100 in any minute) or \`rate\` and \`burst\``);
  }
  const settings = checkLimitOptions(options, optionNames);
  const ipv6Subnet = options.ipv6Subnet ?? DEFAULT_IPV6_PREFIX;
  if (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128) {
    throw new RangeError(`Expected \`ipv6Subnet\` to be an integer from 1 to 128 (the bits of an IPv6 address that make a client), got \`${ipv6Subnet}\` (${typeof ipv6Subnet})`);
  }
  if (options.handler !== undefined && typeof options.handler !== "function") {
    throw new TypeError(`Expected \`handler\` to be a function, got \`${String(options.handler)}\` (${typeof options.handler})`);
  }
  const log = options.log ?? ((line: string) => console.error(line));
  const limiter = new RequestLimiter<FastifyRequest>(options, settings, fastifyClientKey(options, ipv6Subnet, log));
  const queueing = settings.maxWaitMs > 0;
  const handler = options.handler;

  const carryOut = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void, verdict: Verdict): void => {
    switch (verdict.kind) {
      case "uncounted":
        done();
        return;
      case "cancelled":
        return;
      case "admitted":
        if (verdict.result.release) holdUntilEnd(reply.raw, verdict.result.release);
        setHeaders(reply, verdict.headers);
        done();
        return;
      case "unavailable":
        setHeaders(reply.code(503), verdict.headers);
        reply.type(verdict.body.contentType).send(verdict.body.text);
        return;
      case "refused": {
        setHeaders(reply.code(429), verdict.headers);
        if (handler) {
          handler(request, reply, verdict.result);
          return;
        }
        const body = limiter.refusalBody(request, verdict.result);
        if (!(body instanceof Promise)) reply.type(body.contentType).send(body.text);
        else body.then((resolved) => reply.type(resolved.contentType).send(resolved.text), done);
      }
    }
  };

  const hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void => {
    decideOnResponse(limiter, request, reply.raw, queueing, (verdict) => carryOut(request, reply, done, verdict), done);
  };
  return { limiter, hook: hook as onRequestHookHandler };
}

function setHeaders(reply: FastifyReply, headers: HeaderFields): void {
  for (const [name, value] of headers) reply.header(name, value);
}

/** The default key: Fastify's `request.ip` (resolved by its own `trustProxy`), or with our `trustProxy` the forwarding chain walked back. */
function fastifyClientKey(options: FastifyRouteLimitOptions, ipv6Subnet: number, log: (line: string) => void): (request: FastifyRequest) => string {
  if (options.trustProxy !== undefined && options.trustProxy.length > 0) {
    const raw = nodeClientKey({ trustProxy: options.trustProxy, ipv6Subnet }, log);
    return (request) => raw(request.raw);
  }
  return (request) => (request.ip ? addressKey(plainAddress(request.ip), ipv6Subnet) : "-");
}
