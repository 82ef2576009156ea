import { createHash } from "node:crypto";
import { type Clock, systemClock } from "../core/clock.js";
import { checkLimitSpecs, type LimitSpec } from "../core/limit-spec.js";
import { ClassDefinitionError, type ClassSpec, resolveClasses } from "../core/class-spec.js";
import { StoreError } from "../store/bucket-store.js";
import type { KeyLimiterSource } from "./key-limiter.js";
import {
  MAX_RETRY_AFTER_SECONDS,
  rateLimitPolicy,
  rateLimitRefused,
  rateLimitSetPolicy,
  rateLimitSetRefused,
  rateLimitSetState,
  rateLimitState,
} from "./rate-limit-fields.js";
import { joinFields, rateLimitTotalPolicy, rateLimitTotalRefused, rateLimitTotalState } from "./rate-limit-fields.js";
import { type KeySet, PrivateKeySet } from "./key-set.js";
import { type GateResult, RequestGate } from "./request-gate.js";
import { type StoreBuckets, storeLimiters } from "./store-limiters.js";
import { storeKeySets } from "./store-key-sets.js";
import { storeKeyClasses } from "./store-key-classes.js";

/**
 * One limit of a key's set, counting requests (DESIGN section 11):
 * - `{ rate, burst }`: a token bucket, `rate` requests a second, `burst` at once (default 1);
 * - `{ n, windowMs }`: at most `n` requests in any `windowMs` (sliding, exact);
 * - `{ concurrency }`: at most that many requests under way at once, each holding its slot until its response ends.
 */
export type RequestLimit = { rate: number; burst?: number } | { n: number; windowMs: number } | { concurrency: number };

/** A value or a promise of it: every function of a request may be async. */
export type MaybePromise<T> = T | Promise<T>;

/** A refusal's body: text (sent as text/plain) or an object (sent as JSON). */
export type RefusalMessage = string | Record<string, unknown>;

/**
 * The options every binding of the limit shares (node:http, Fastify, fetch),
 * for a request of type `Req`; each binding adds what is its own (the
 * default key, a handler for refusals).
 */
export interface LimitOptions<Req> {
  /** Requests per second per key; Infinity for no limit. The shorthand for `limits: [{ rate, burst }]`. */
  rate?: number;
  /** Requests a key may make at once after being idle; at least 1. */
  burst?: number;
  /**
   * A set of limits per key, every one of which must admit a request (all or
   * nothing: a refused request costs nothing in any): e.g.
   * `[{ rate: 10, burst: 20 }, { n: 1000, windowMs: 3_600_000 }, { concurrency: 20 }]`.
   * Numbered from 1 in this order (`limitedBy`, the `limit-N` RateLimit policies). Instead of `rate` and `burst`.
   * A function gives each request its limits (a plan per customer, say): each different set is kept apart.
   */
  limits?: readonly RequestLimit[] | ((req: Req) => MaybePromise<readonly RequestLimit[]>);
  /**
   * Limits for every request together, beside each key's (DESIGN section 14):
   * a request goes only when its key's limits and these admit it, and a
   * refusal by either costs nothing in the other, so that clients who rotate
   * their identities cannot pass it; e.g. `[{ rate: 2000, burst: 200 }]`.
   * Rates and windows (counting each request's cost), no concurrency; not
   * with `classes`. One total for every plan of a `limits` function. With
   * `store`, the key `NAME`. Its RateLimit policy is `"total"` (`"total-N"` for several).
   */
  total?: readonly RequestLimit[];
  /** The key of a request, or a promise of it. Undefined lets the request through uncounted. */
  key?: (req: Req) => MaybePromise<string | undefined>;
  /** True lets the request through uncounted (health checks, your own monitors). */
  skip?: (req: Req) => MaybePromise<boolean>;
  /**
   * What a request costs of each rate and window limit (default 1): a number
   * of at least 0, or a function of the request. A concurrency limit counts a
   * slot whatever the cost. A cost above a limit's burst is refused with the
   * longest Retry-After, since no wait would let it through.
   */
  cost?: number | ((req: Req) => MaybePromise<number>);
  /**
   * Classes that share each key's limit (design section 12; HTB's rules):
   * each class's `rate` is its guarantee, what is left is lent to the lowest
   * `prio` first, by `weight` within a prio, never past its `ceil`. Every
   * request is taken as the class `classOf` gives. Not with a `concurrency`
   * limit, nor with limits given by a function.
   */
  classes?: readonly ClassSpec[];
  /** The class of a request, or a promise of it (with `classes`); undefined takes `defaultClass`. */
  classOf?: (req: Req) => MaybePromise<string | undefined>;
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
  /** Also send X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (epoch seconds), as GitHub and express-rate-limit do (default false). */
  legacyHeaders?: boolean;
  /** Also send `retry-after-ms` on a 429: the wait in milliseconds, as OpenAI's clients read it (default false). */
  retryAfterMs?: boolean;
  /** A refusal's body (default `Too Many Requests: retry after N s`): text, an object sent as JSON, or a function of the request and the decision. */
  message?: RefusalMessage | ((req: Req, result: GateResult) => MaybePromise<RefusalMessage>);
  /** Buckets, or with `limits` sets of limits, in a shared store (keys `NAME:<key>`), for a limit that several servers enforce together. */
  store?: StoreBuckets;
  /** Told of every decision, before the response is sent or the request goes on. */
  onDecision?: (req: Req, result: GateResult, key: string) => void;
  /** Where one-line warnings and errors go; default `console.error`. */
  log?: (line: string) => void;
  /** For tests: the clock that buckets and waits use. */
  clock?: Clock;
}

/** Every shared option (a record, so that a new option cannot be left out): with a binding's own, any other is refused, since a misspelled limit would silently be no limit. */
export const LIMIT_OPTION_NAMES: readonly string[] = Object.keys({
  rate: true,
  burst: true,
  limits: true,
  total: true,
  key: true,
  skip: true,
  cost: true,
  classes: true,
  classOf: true,
  defaultClass: true,
  policy: true,
  maxWaitMs: true,
  maxKeys: true,
  headers: true,
  legacyHeaders: true,
  retryAfterMs: true,
  message: true,
  store: true,
  onDecision: true,
  log: true,
  clock: true,
} satisfies Record<keyof LimitOptions<unknown>, true>);

export const DEFAULT_MAX_KEYS = 100_000;

/** A function given in the options (`skip`, `cost`, `limits`, `message`...) threw, rejected, or gave what it may not: the request cannot be decided, so it fails. */
export class RequestFunctionError extends Error {
  readonly code: string = "EREQUESTFUNCTION";
  /** The option whose function failed. */
  readonly option: string;
  constructor(option: string, message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = "RequestFunctionError";
    this.option = option;
  }
}

/** The `key` function threw, rejected, or gave something that is not a key: the request cannot be counted, so it fails. */
export class KeyFunctionError extends RequestFunctionError {
  override readonly code = "EKEYFUNCTION";
  constructor(message: string, options?: { cause: unknown }) {
    super("key", message, options);
    this.name = "KeyFunctionError";
  }
}

/** The `classOf` function threw, rejected, or gave a class that is not defined: the request cannot be counted, so it fails. */
export class ClassFunctionError extends RequestFunctionError {
  override readonly code = "ECLASSFUNCTION";
  constructor(message: string, options?: { cause: unknown }) {
    super("classOf", message, options);
    this.name = "ClassFunctionError";
  }
}

/** Response header fields, in the order they are sent. */
export type HeaderFields = Array<[name: string, value: string]>;

/**
 * What the limit says of one request, for a binding to carry out in its
 * framework: `uncounted` (skipped, or no key) and `admitted` go on (the
 * admitted with `headers` to set and, under a concurrency limit, a
 * `release` to call when the response ends); `refused` is a 429 with
 * `headers` and `body`; `unavailable` a 503 while the store is lost;
 * `cancelled` a client that left while it waited (nothing to send).
 */
export type Verdict =
  | { kind: "uncounted" }
  | { kind: "admitted"; key: string; result: GateResult; headers: HeaderFields }
  | { kind: "refused"; key: string; result: GateResult; headers: HeaderFields }
  | { kind: "unavailable"; headers: HeaderFields; body: Body }
  | { kind: "cancelled"; key: string; result: GateResult };

/** A response body with its content type. */
export interface Body {
  text: string;
  contentType: string;
}

/** A lost store is asked again at least once a second, so a client may come back after that. */
export const STORE_RETRY_AFTER_SECONDS = 1;

/** How many different sets of limits a `limits` function may give: each keeps its own keys, so they are plans, not one per request. */
export const MAX_LIMIT_PLANS = 100;

/**
 * The limit of a binding, framework-free: from a request to a Verdict, in
 * steps (skip, key, class, cost, limits, the gate), each of which may be a
 * promise; when none is, the verdict is given synchronously, which keeps
 * the common case as cheap as a function call.
 */
export class RequestLimiter<Req> {
  readonly #options: LimitOptions<Req>;
  readonly #keyOf: (req: Req) => MaybePromise<string | undefined>;
  readonly #settings: Settings;
  readonly #classOf: ((req: Req) => MaybePromise<string>) | undefined;
  readonly #plans = new Map<string, Plan>();
  readonly #fixedPlan: Plan | undefined;
  readonly #sendHeaders: boolean;
  /** The set for every request together, shared by every plan; with a store, its source (to dispose). */
  readonly #total: { set: KeySet; dispose(): void } | undefined;

  /** `options` checked already (checkLimitOptions); `defaultKey` the binding's key when `key` is not given. */
  constructor(options: LimitOptions<Req>, settings: Settings, defaultKey: (req: Req) => MaybePromise<string | undefined>) {
    this.#options = options;
    this.#settings = settings;
    this.#keyOf = options.key ?? defaultKey;
    this.#classOf = settings.classes && classFunction(options, settings.classes.names);
    this.#total = makeTotal(settings, options);
    this.#fixedPlan = typeof options.limits === "function" ? undefined : makePlan(settings, options, "", this.#total?.set);
    this.#sendHeaders = options.headers ?? true;
  }

  /** Keys held now, over every plan. */
  get liveKeys(): number {
    let keys = this.#fixedPlan?.gate.liveKeys ?? 0;
    for (const plan of this.#plans.values()) keys += plan.gate.liveKeys;
    return keys;
  }

  /** Drops keys whose limits are full again (the same as new ones); returns how many. */
  sweep(): number {
    let swept = this.#fixedPlan?.gate.sweep() ?? 0;
    for (const plan of this.#plans.values()) swept += plan.gate.sweep();
    return swept;
  }

  /** Forgets every key (releasing shared buckets' leases); the limit still works afterwards. */
  close(): void {
    for (const plan of [this.#fixedPlan, ...this.#plans.values()]) plan?.close();
    this.#plans.clear();
    this.#total?.dispose();
  }

  /**
   * The verdict on one request; `signal` aborting gives up a wait. A
   * function of the options that fails rejects with a RequestFunctionError
   * (never a verdict that admits); a lost store is the `unavailable` verdict.
   */
  decide(req: Req, signal?: AbortSignal): MaybePromise<Verdict> {
    try {
      const skip = this.#options.skip;
      if (skip === undefined) return this.#keyed(req, signal);
      return then(call("skip", skip, req), (skipped) => {
        if (typeof skipped !== "boolean") throw new RequestFunctionError("skip", `the \`skip\` function gave \`${describeValue(skipped)}\`, not true or false`);
        return skipped ? UNCOUNTED : this.#keyed(req, signal);
      });
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The refusal's body: the `message` option's, or the default. */
  refusalBody(req: Req, result: GateResult): MaybePromise<Body> {
    const message = this.#options.message;
    if (message === undefined) return { text: `Too Many Requests: retry after ${result.retryAfterSeconds} s\n`, contentType: TEXT };
    if (typeof message !== "function") return bodyOf(message);
    return then(call("message", (given: Req) => message(given, result), req), (given) => {
      if (typeof given !== "string" && (typeof given !== "object" || given === null)) {
        throw new RequestFunctionError("message", `the \`message\` function gave \`${describeValue(given)}\`, not a string or an object`);
      }
      return bodyOf(given);
    });
  }

  #keyed(req: Req, signal: AbortSignal | undefined): MaybePromise<Verdict> {
    let key: MaybePromise<string | undefined>;
    try {
      key = this.#keyOf(req);
    } catch (error) {
      throw keyFunctionFailed(error);
    }
    if (!isThenable(key)) return this.#classed(req, signal, key);
    return Promise.resolve(key).then(
      (resolved) => this.#classed(req, signal, resolved),
      (error: unknown) => {
        throw keyFunctionFailed(error);
      },
    );
  }

  #classed(req: Req, signal: AbortSignal | undefined, key: unknown): MaybePromise<Verdict> {
    if (key === undefined) return UNCOUNTED;
    if (typeof key !== "string") {
      throw new KeyFunctionError(`the \`key\` function gave \`${describeValue(key)}\` (${key === null ? "null" : typeof key}), not a string; return the request's key, or undefined to let it through uncounted`);
    }
    if (!this.#classOf) return this.#costed(req, signal, key, undefined);
    return then(this.#classOf(req), (className) => this.#costed(req, signal, key, className));
  }

  #costed(req: Req, signal: AbortSignal | undefined, key: string, className: string | undefined): MaybePromise<Verdict> {
    const cost = this.#options.cost;
    if (typeof cost !== "function") return this.#planned(req, signal, key, className, cost ?? 1);
    return then(call("cost", cost, req), (given) => {
      if (typeof given !== "number" || !Number.isFinite(given) || given < 0) {
        throw new RequestFunctionError("cost", `the \`cost\` function gave \`${describeValue(given)}\` (${typeof given}), not a finite number of at least 0`);
      }
      return this.#planned(req, signal, key, className, given);
    });
  }

  #planned(req: Req, signal: AbortSignal | undefined, key: string, className: string | undefined, cost: number): MaybePromise<Verdict> {
    if (this.#fixedPlan) return this.#admit(req, signal, this.#fixedPlan, key, className, cost);
    const limits = this.#options.limits as (req: Req) => MaybePromise<readonly RequestLimit[]>;
    return then(call("limits", limits, req), (given) => this.#admit(req, signal, this.#planOf(given), key, className, cost));
  }

  /** The plan of a set of limits a `limits` function gave: made at its first request, checked as the option is. */
  #planOf(given: readonly RequestLimit[]): Plan {
    let id: string;
    try {
      id = JSON.stringify(given);
    } catch (error) {
      throw new RequestFunctionError("limits", `the \`limits\` function gave limits that are not plain data: ${oneLine(error)}`, { cause: error });
    }
    const known = this.#plans.get(id);
    if (known) return known;
    if (this.#plans.size >= MAX_LIMIT_PLANS) {
      throw new RequestFunctionError("limits", `the \`limits\` function gave more than ${MAX_LIMIT_PLANS} different sets of limits; give a few plans (each keeps its own keys), not limits made per request`);
    }
    let settings: Settings;
    try {
      // With a cost a plan's one bucket is a set of one, as the options' own is (a private bucket takes 1 a request).
      settings = { ...this.#settings, ...limitSettings({ limits: given }, this.#options.cost !== undefined) };
    } catch (error) {
      throw new RequestFunctionError("limits", `the \`limits\` function gave bad limits: ${oneLine(error)}`, { cause: error });
    }
    // In a store each plan's keys are apart (NAME:<plan>:<key>), so that a client whose plan changes is not held to the old one.
    const tag = createHash("sha256").update(id).digest("hex").slice(0, 8);
    const plan = makePlan(settings, this.#options, tag, this.#total?.set);
    this.#plans.set(id, plan);
    return plan;
  }

  #admit(req: Req, signal: AbortSignal | undefined, plan: Plan, key: string, className: string | undefined, cost: number): MaybePromise<Verdict> {
    let decided: MaybePromise<GateResult>;
    try {
      decided = plan.gate.admit(plan.tag === "" ? key : `${plan.tag}:${key}`, signal, className, cost);
    } catch (error) {
      if (error instanceof StoreError) return unavailable();
      throw error;
    }
    if (!(decided instanceof Promise)) return this.#verdict(req, plan, key, decided);
    return decided.then(
      (result) => this.#verdict(req, plan, key, result),
      (error: unknown) => {
        if (error instanceof StoreError) return unavailable();
        throw error;
      },
    );
  }

  #verdict(req: Req, plan: Plan, key: string, result: GateResult): Verdict {
    this.#options.onDecision?.(req, result, key);
    if (result.decision === "cancelled") return { kind: "cancelled", key, result };
    const headers: HeaderFields = [];
    const limits = plan.limits;
    const policy = limits ? plan.setPolicy : rateLimitPolicy(result.rate);
    const classes = this.#settings.classes !== undefined;
    if (result.decision === "refused") {
      headers.push(["Retry-After", String(result.retryAfterSeconds)]);
      if (this.#options.retryAfterMs) headers.push(["retry-after-ms", String(result.retryAfterMs ?? result.retryAfterSeconds * 1000)]);
      if (policy !== undefined) {
        headers.push(["RateLimit-Policy", policy]);
        // With classes a refusal may be the class's while the key has room: the RateLimit field, of the key's limits, would not say it.
        const refused = classes
          ? undefined
          : limits
            ? joinFields(rateLimitSetRefused(limits, result.limitedBy, result.retryAfterSeconds), this.#refusedByTotal(result))
            : rateLimitRefused(result.retryAfterSeconds);
        if (refused !== undefined) headers.push(["RateLimit", refused]);
      }
      if (this.#options.legacyHeaders) pushLegacy(headers, result, this.#settings.clockNow());
      return { kind: "refused", key, result, headers };
    }
    if (this.#sendHeaders && policy !== undefined) {
      headers.push(["RateLimit-Policy", policy]);
      const state = classes
        ? undefined
        : result.limits
          ? joinFields(rateLimitSetState(result.limits), result.total && rateLimitTotalState(result.total.limits))
          : rateLimitState(result.level, result.rate, result.burst);
      if (state !== undefined) headers.push(["RateLimit", state]);
    }
    if (this.#options.legacyHeaders) pushLegacy(headers, result, this.#settings.clockNow());
    return { kind: "admitted", key, result, headers };
  }

  /** RateLimit's items of the total for a refusal: those of its limits that refused, if any. */
  #refusedByTotal(result: GateResult): string | undefined {
    const total = this.#settings.total;
    return total && result.total && rateLimitTotalRefused(total, result.total.limitedBy, result.retryAfterSeconds);
  }
}

/** The set for every request together (`total`): private, or the store's key `NAME` watched as the clients' are. */
function makeTotal<Req>(settings: Settings, options: LimitOptions<Req>): { set: KeySet; dispose(): void } | undefined {
  if (!settings.total) return undefined;
  if (!options.store) return { set: new PrivateKeySet(settings.total, options.clock ?? systemClock), dispose: () => {} };
  const source = storeKeySets(options.store, { clock: options.clock });
  return { set: source.total(settings.total), dispose: () => source.dispose() };
}

const TEXT = "text/plain; charset=utf-8";
const UNCOUNTED: Verdict = { kind: "uncounted" };

/**
 * The verdict while the store behind a shared limit is lost (onStoreError
 * "fail"): the limit cannot be checked, so nothing is let through, and the
 * client is told when to try again.
 */
function unavailable(): Verdict {
  return {
    kind: "unavailable",
    headers: [["Retry-After", String(STORE_RETRY_AFTER_SECONDS)]],
    body: { text: "Service Unavailable: the rate limit's store cannot be reached\n", contentType: TEXT },
  };
}

/** X-RateLimit-Limit (the burst), -Remaining (whole requests left) and -Reset (epoch seconds when full again) of the first rate or window. */
function pushLegacy(headers: HeaderFields, result: GateResult, nowEpochMs: number): void {
  if (!Number.isFinite(result.rate) || !Number.isFinite(result.burst)) return;
  const remaining = Math.max(0, Math.floor(result.level + 1e-9));
  const fullInMs = result.rate > 0 ? (Math.max(0, result.burst - result.level) * 1000) / result.rate : MAX_RETRY_AFTER_SECONDS * 1000;
  headers.push(["X-RateLimit-Limit", String(Math.floor(result.burst))]);
  headers.push(["X-RateLimit-Remaining", String(remaining)]);
  headers.push(["X-RateLimit-Reset", String(Math.ceil((nowEpochMs + fullInMs) / 1000))]);
}

function bodyOf(message: RefusalMessage): Body {
  return typeof message === "string" ? { text: message, contentType: TEXT } : { text: JSON.stringify(message), contentType: "application/json; charset=utf-8" };
}

/** One key table, with its gate, for one set of limits: the options' own, or each that a `limits` function gives. */
interface Plan {
  /** The prefix of its keys ("" for the options' own limits). */
  tag: string;
  gate: RequestGate;
  /** Set when the limits are more than one bucket (or cost counts): the set. */
  limits: LimitSpec[] | undefined;
  setPolicy: string | undefined;
  close(): void;
}

function makePlan<Req>(settings: Settings, options: LimitOptions<Req>, tag: string, total: KeySet | undefined): Plan {
  const { rate, burst, maxWaitMs, maxKeys, classes } = settings;
  // Beside a total the key's one bucket is a set of one, taken with the total's as sets are.
  const limits = settings.limits ?? (total ? [{ kind: "bucket" as const, unit: "count" as const, rate, burst }] : undefined);
  const store = options.store;
  const clock = options.clock;
  // With classes the store keeps each key's limits and classes; with a set of limits, its set; with one bucket, its bucket.
  const classSource = store && classes ? storeKeyClasses(store, { ...classes, clock }) : undefined;
  const keySets = store && limits && !classes ? storeKeySets(store, { clock }) : undefined;
  const source: KeyLimiterSource | undefined = store && !limits && !classes ? storeLimiters(store, { rate, burst, clock }) : undefined;
  const gate = new RequestGate({
    rate,
    burst,
    limits: classes ? undefined : limits,
    keySets,
    maxWaitMs,
    maxKeys,
    source,
    classes: classes && { specs: classes.classes, limits: classes.limits, source: classSource },
    total,
    clock,
  });
  return {
    tag,
    gate,
    limits,
    setPolicy: limits && joinFields(rateLimitSetPolicy(limits), settings.total && rateLimitTotalPolicy(settings.total)),
    close() {
      gate.close();
      source?.dispose?.();
      keySets?.dispose();
      classSource?.dispose?.();
    },
  };
}

/** The options checked, in the forms the limiter uses. */
export interface Settings {
  rate: number;
  burst: number;
  /** Set with `classes`: the classes, their names, and the limits they share (the set, or the one bucket as a set). */
  classes: { classes: readonly ClassSpec[]; names: readonly string[]; limits: LimitSpec[] } | undefined;
  /** Set when the limits are more than one private bucket taking 1 a request: a set per key. */
  limits: LimitSpec[] | undefined;
  /** The limits for every request together (`total`). */
  total: LimitSpec[] | undefined;
  maxWaitMs: number;
  maxKeys: number;
  /** The wall clock's now, for the legacy Reset field. */
  clockNow(): number;
}

/**
 * Checks the shared options, refusing any not in `optionNames` (the shared
 * ones and the binding's own): every mistake a TypeError or RangeError
 * naming the option and the value, at construction.
 */
export function checkLimitOptions<Req>(options: LimitOptions<Req>, optionNames: readonly string[]): Settings {
  if (typeof options !== "object" || options === null) throw new TypeError(`Expected options to be an object, got \`${String(options)}\``);
  for (const [name, value] of Object.entries(options)) {
    if (value === undefined || optionNames.includes(name)) continue;
    const near = optionNames.find((known) => known.toLowerCase().startsWith(name.toLowerCase()) || name.toLowerCase().startsWith(known.toLowerCase()));
    throw new TypeError(`Unknown option \`${name}\`${near ? ` (did you mean \`${near}\`?)` : ""}; the options are ${optionNames.map((known) => `\`${known}\``).join(", ")}`);
  }
  const dynamicLimits = typeof options.limits === "function";
  const costed = options.cost !== undefined;
  if (costed && typeof options.cost !== "function" && (typeof options.cost !== "number" || !Number.isFinite(options.cost) || options.cost < 0)) {
    throw new RangeError(`Expected \`cost\` to be a finite number of at least 0 or a function of the request, got \`${String(options.cost)}\` (${typeof options.cost})`);
  }
  const { rate, burst, limits } = dynamicLimits
    ? { rate: Infinity, burst: 1, limits: undefined }
    : limitSettings({ ...options, limits: options.limits as readonly RequestLimit[] | undefined }, costed);
  if (dynamicLimits) {
    for (const name of ["rate", "burst"] as const) {
      if (options[name] !== undefined) throw new TypeError(`Expected \`${name}\` or \`limits\`, not both: write the bucket as one of the limits, \`{ rate, burst }\``);
    }
    if (options.classes !== undefined) throw new TypeError("Expected `limits` as an array with `classes`: the classes share one set of limits, not one per request");
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
  for (const name of ["key", "skip", "onDecision", "log"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "function") throw new TypeError(`Expected \`${name}\` to be a function, got \`${String(value)}\` (${typeof value})`);
  }
  for (const name of ["headers", "legacyHeaders", "retryAfterMs"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "boolean") throw new TypeError(`Expected \`${name}\` to be true or false, got \`${String(value)}\` (${typeof value})`);
  }
  const message = options.message;
  if (message !== undefined && typeof message !== "string" && typeof message !== "function" && (typeof message !== "object" || message === null)) {
    throw new TypeError(`Expected \`message\` to be a string, an object (sent as JSON) or a function, got \`${String(message)}\` (${typeof message})`);
  }
  const classes = checkClasses(options, limits ?? [{ kind: "bucket", unit: "count", rate, burst }]);
  const clock = options.clock;
  const clockNow = clock ? () => clock.now() : () => Date.now();
  const total = checkTotal(options, classes !== undefined);
  return { rate, burst, limits, total, maxWaitMs, maxKeys, classes, clockNow };
}

/** `total` as LimitSpecs: rates and windows, never with classes; every mistake a TypeError or RangeError naming `total[i]`. */
function checkTotal<Req>(options: LimitOptions<Req>, withClasses: boolean): LimitSpec[] | undefined {
  if (options.total === undefined) return undefined;
  if (withClasses) throw new TypeError("Expected no `total` with `classes`: a total beside classes is not built");
  let total: LimitSpec[];
  try {
    total = checkLimits(options.total);
  } catch (error) {
    const message = (error as Error).message.replace(/`limits/g, "`total");
    throw error instanceof RangeError ? new RangeError(message) : new TypeError(message);
  }
  if (total.some((limit) => limit.kind === "concurrency")) throw new TypeError("Expected no `concurrency` in `total`: a total counts rates and windows; give concurrency in `limits`, per key");
  return total;
}

/**
 * The limits as the gate takes them: one bucket (`rate`, `burst`), or a
 * set. One bucket stays one bucket unless requests cost more than one
 * (`costed`): a private bucket takes one token a request, so costs go
 * through a set of that one bucket.
 */
function limitSettings(options: { rate?: number; burst?: number; limits?: readonly RequestLimit[] }, costed = false): { rate: number; burst: number; limits: LimitSpec[] | undefined } {
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
  if (costed && limits === undefined && rate !== Infinity) limits = [{ kind: "bucket", unit: "count", rate, burst }];
  return { rate, burst, limits };
}

/** The classes, checked against the limits they share; every mistake a TypeError or RangeError naming the option. */
function checkClasses<Req>(options: LimitOptions<Req>, limits: LimitSpec[]): Settings["classes"] {
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

/**
 * The class of each request: `classOf`'s answer (or `defaultClass`),
 * checked against the classes; what is not a defined class is a
 * ClassFunctionError, thrown or rejected.
 */
function classFunction<Req>(options: LimitOptions<Req>, names: readonly string[]): (req: Req) => MaybePromise<string> {
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

/** Calls an option's function of the request; what it throws or rejects becomes a RequestFunctionError naming the option. */
function call<Req, T>(option: string, fn: (req: Req) => MaybePromise<T>, req: Req): MaybePromise<T> {
  const failed = (error: unknown): never => {
    throw error instanceof RequestFunctionError ? error : new RequestFunctionError(option, `the \`${option}\` function failed: ${oneLine(error)}`, { cause: error });
  };
  let given: MaybePromise<T>;
  try {
    given = fn(req);
  } catch (error) {
    return failed(error);
  }
  return isThenable(given) ? Promise.resolve(given).then(undefined, failed) : given;
}

/** `f(value)`, at once when `value` is not a promise: the steps stay synchronous while nothing is async. */
function then<T, U>(value: MaybePromise<T>, f: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isThenable(value) ? Promise.resolve(value).then(f) : f(value);
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

function keyFunctionFailed(error: unknown): KeyFunctionError {
  return new KeyFunctionError(`the \`key\` function failed: ${oneLine(error)}`, { cause: error });
}

/** An error's message on one line, for a log that holds one line per event. */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, " ");
}

export function describeValue(value: unknown): string {
  if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
  return String(value);
}
