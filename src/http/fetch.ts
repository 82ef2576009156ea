/**
 * tbucket/fetch: the limit of tbucket/http for fetch-standard servers
 * (Hono, Bun, Deno, edge runtimes, Node's own Request): a function from a
 * Request to the refusal to send, or undefined to go on.
 */
import type { GateResult } from "./request-gate.js";
import { type Body, checkLimitOptions, type HeaderFields, LIMIT_OPTION_NAMES, type LimitOptions, type MaybePromise, RequestLimiter, type Verdict } from "./request-limiter.js";

export * from "./limit-exports.js";

/** The options of tbucket/fetch's `rateLimit`: the limit's, and a handler of its own. */
export interface FetchLimitOptions extends LimitOptions<Request> {
  /**
   * The key of a request. A Request carries no client address, so give
   * this, or the key with each call (`limit(request, { key })`).
   */
  key?: (request: Request) => MaybePromise<string | undefined>;
  /** The answer to a refused request instead of the default 429; `headers` are the refusal's fields (Retry-After, RateLimit...). */
  handler?: (request: Request, result: GateResult, headers: Headers) => MaybePromise<Response>;
}

/** Per call: the request's key (e.g. the client address your server gives), before the `key` option's. */
export interface FetchLimitContext {
  key?: string;
}

/** What the limit said of a request: the response to send instead (refused, store lost), and the fields for the response that goes on. */
export interface FetchCheck {
  response: Response | undefined;
  /** RateLimit-Policy and RateLimit (and the legacy fields if asked) for the response of a request let through. */
  headers: Headers;
  result: GateResult | undefined;
}

/** The limit, `(request, context?) => Promise<Response | undefined>`, with what it holds. */
export interface FetchLimit {
  (request: Request, context?: FetchLimitContext): Promise<Response | undefined>;
  /** The same, with the fields to add to the response of a request let through. */
  check(request: Request, context?: FetchLimitContext): Promise<FetchCheck>;
  readonly liveKeys: number;
  sweep(): number;
  close(): void;
}

const OPTION_NAMES = [...LIMIT_OPTION_NAMES, ...Object.keys({ handler: true } satisfies Record<Exclude<keyof FetchLimitOptions, keyof LimitOptions<Request>>, true>)];

/**
 * Rate limiting for fetch-standard handlers, with the limits, stores and
 * options of tbucket/http: `await limit(request, { key })` is a Response to
 * send (429, or 503 while a shared store is lost) or undefined to go on.
 * With `policy: "queue"` a request waits its turn, and gives it back if its
 * `request.signal` aborts. A concurrency limit is not offered: a handler
 * cannot tell when the response it returns has been sent.
 */
export function rateLimit(options: FetchLimitOptions): FetchLimit {
  const settings = checkLimitOptions(options, OPTION_NAMES);
  if (settings.limits?.some((limit) => limit.kind === "concurrency")) {
    throw new TypeError("Expected no `concurrency` limit in tbucket/fetch: a fetch handler cannot tell when its response has been sent; limit concurrency where the server can (tbucket/http, tbucket/fastify)");
  }
  if (options.handler !== undefined && typeof options.handler !== "function") {
    throw new TypeError(`Expected \`handler\` to be a function, got \`${String(options.handler)}\` (${typeof options.handler})`);
  }
  // The key given with the call comes first, then the `key` option's.
  const givenKeys = new WeakMap<Request, string>();
  const keyOption = options.key;
  const keyOf = (request: Request): MaybePromise<string | undefined> => {
    const given = givenKeys.get(request);
    if (given !== undefined) return given;
    if (keyOption) return keyOption(request);
    throw new TypeError("a Request carries no client address: give the `key` option or the key with each call, `limit(request, { key })`");
  };
  const limiter = new RequestLimiter<Request>({ ...options, key: undefined }, settings, keyOf);

  const answer = async (request: Request, verdict: Verdict): Promise<FetchCheck> => {
    switch (verdict.kind) {
      case "uncounted":
        return { response: undefined, headers: new Headers(), result: undefined };
      case "admitted":
        return { response: undefined, headers: new Headers(verdict.headers), result: verdict.result };
      case "cancelled":
        // The client left: whatever is sent goes nowhere.
        return { response: new Response(null, { status: 499 }), headers: new Headers(), result: verdict.result };
      case "unavailable":
        return { response: respond(503, verdict.headers, verdict.body), headers: new Headers(), result: undefined };
      case "refused": {
        const headers = new Headers(verdict.headers);
        const response = options.handler ? await options.handler(request, verdict.result, headers) : respond(429, verdict.headers, await limiter.refusalBody(request, verdict.result));
        return { response, headers, result: verdict.result };
      }
    }
  };

  const check = async (request: Request, context?: FetchLimitContext): Promise<FetchCheck> => {
    if (context?.key !== undefined) givenKeys.set(request, context.key);
    return answer(request, await limiter.decide(request, settings.maxWaitMs > 0 ? request.signal : undefined));
  };
  const limit = (async (request: Request, context?: FetchLimitContext) => (await check(request, context)).response) as FetchLimit;
  limit.check = check;
  Object.defineProperty(limit, "liveKeys", { get: () => limiter.liveKeys });
  limit.sweep = () => limiter.sweep();
  limit.close = () => limiter.close();
  return limit;
}

function respond(status: number, fields: HeaderFields, body: Body): Response {
  const headers = new Headers(fields);
  headers.set("Content-Type", body.contentType);
  return new Response(body.text, { status, headers });
}
