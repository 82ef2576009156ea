import type { LimitSpec } from "../core/limit-spec.js";
import type { LimitLevel } from "./key-set.js";

/**
 * The response fields of draft-ietf-httpapi-ratelimit-headers (Structured
 * Field lists, draft 11 and later), for a token bucket of `rate` requests a
 * second and `burst` at once:
 *
 *   RateLimit-Policy: "default";q=50;w=1    the sustained quota: q requests per w seconds
 *   RateLimit: "default";r=9;t=1            r requests left now; the bucket is full again in t seconds
 *
 * Both q and w are whole numbers (the draft allows no fractions): w is the
 * fewest seconds in which the rate earns at least one request, and q what it
 * earns in them, rounded down so that a client pacing itself by q/w is never
 * refused. A refused request's RateLimit says r=0 with t equal to Retry-After,
 * since the draft asks that Retry-After not point before the effective
 * window's end. Every number is an Integer of RFC 9651, at most 15 digits:
 * beyond that a strict parser rejects the whole field, so larger values are
 * held at 999,999,999,999,999 (a rate or burst that large is no limit in practice).
 */

/** The policy's name in both fields. */
export const POLICY_NAME = "default";

/** `"default";q=..;w=..`, or undefined at an infinite rate (no limit to advertise). */
export function rateLimitPolicy(rate: number, name = POLICY_NAME): string | undefined {
  if (rate === Infinity) return undefined;
  if (!(rate > 0)) return `"${name}";q=0`;
  const windowSeconds = rate >= 1 ? 1 : sfInteger(Math.ceil(1 / rate));
  return `"${name}";q=${sfInteger(Math.floor(rate * windowSeconds + 1e-9))};w=${windowSeconds}`;
}

/**
 * `"default";r=..;t=..` for a bucket at `level` tokens: whole requests left,
 * and whole seconds (rounded up) until it is full again. Undefined at an infinite rate.
 */
export function rateLimitState(level: number, rate: number, burst: number, name = POLICY_NAME): string | undefined {
  if (rate === Infinity) return undefined;
  const remaining = Math.max(0, Math.floor(level + 1e-9));
  const missing = burst - level;
  const fullInSeconds = missing <= 1e-9 ? 0 : rate > 0 ? Math.ceil(missing / rate - 1e-9) : undefined;
  return `"${name}";r=${sfInteger(remaining)}${fullInSeconds === undefined ? "" : `;t=${sfInteger(fullInSeconds)}`}`;
}

/*
 * A set of limits (several per key) is several policies, as the draft allows
 * (both fields are Lists): each bucket and window is one, named by its number
 * in the set (`"limit-2"`, as in limitedBy). A window of n in W advertises
 * q=n per w = W rounded up to whole seconds (pacing by it is never refused),
 * and its RateLimit t is W rounded up while anything is in it (when it is
 * empty again at the latest, which is what t promises). A concurrency limit
 * has no quota over time and is not advertised.
 */

/** The policy name of limit `number` (from 1) of a set. */
export function setPolicyName(number: number): string {
  return `limit-${number}`;
}

/** RateLimit-Policy of a set: one policy per bucket and window; undefined when none has a limit to advertise. */
export function rateLimitSetPolicy(limits: readonly LimitSpec[]): string | undefined {
  const policies = limits.map((limit, index) => {
    const name = setPolicyName(index + 1);
    if (limit.kind === "bucket") return rateLimitPolicy(limit.rate, name);
    if (limit.kind === "window") return `"${name}";q=${sfInteger(Math.floor(limit.n + 1e-9))};w=${windowSeconds(limit.windowMs)}`;
    return undefined;
  });
  return joinList(policies);
}

/** RateLimit of a set: each bucket and window with what is left now. */
export function rateLimitSetState(limits: readonly LimitLevel[]): string | undefined {
  const states = limits.map((limit, index) => {
    const name = setPolicyName(index + 1);
    if (limit.kind === "bucket") return rateLimitState(limit.level, limit.rate, limit.burst, name);
    if (limit.kind === "window") {
      const emptyInSeconds = limit.level >= limit.n - 1e-9 ? 0 : windowSeconds(limit.windowMs);
      return `"${name}";r=${sfInteger(Math.max(0, Math.floor(limit.level + 1e-9)))};t=${emptyInSeconds}`;
    }
    return undefined;
  });
  return joinList(states);
}

/** RateLimit of a request a set refused: nothing left until Retry-After, in each bucket and window that bound it. */
export function rateLimitSetRefused(limits: readonly LimitSpec[], limitedBy: readonly number[], retryAfterSeconds: number): string | undefined {
  return joinList(limitedBy.map((number) => (limits[number - 1]?.kind === "concurrency" ? undefined : `"${setPolicyName(number)}";r=0;t=${retryAfterSeconds}`)));
}

/*
 * A total beside each client's set (everyone's requests together) is more
 * policies in the same fields, after the client's: `"total"` when it is one
 * limit, `"total-1"`, `"total-2"`... when it is several, numbered as its
 * limits are within it.
 */

/** The policy name of limit `number` (from 1) of a total of `count` limits. */
export function totalPolicyName(number: number, count: number): string {
  return count === 1 ? "total" : `total-${number}`;
}

/** RateLimit-Policy's policies of a total; undefined when none has a limit to advertise. */
export function rateLimitTotalPolicy(limits: readonly LimitSpec[]): string | undefined {
  return renamed(rateLimitSetPolicy(limits), limits.length);
}

/** RateLimit's items of a total at its levels now. */
export function rateLimitTotalState(limits: readonly LimitLevel[]): string | undefined {
  return renamed(rateLimitSetState(limits), limits.length);
}

/** RateLimit's items of a total that refused a request (or none, when the client's set did). */
export function rateLimitTotalRefused(limits: readonly LimitSpec[], limitedBy: readonly number[], retryAfterSeconds: number): string | undefined {
  return renamed(rateLimitSetRefused(limits, limitedBy, retryAfterSeconds), limits.length);
}

/** Two lists of one field as one: either may be absent. */
export function joinFields(first: string | undefined, second: string | undefined): string | undefined {
  return joinList([first, second]);
}

/** A set's `"limit-N"` names as a total's. */
function renamed(field: string | undefined, count: number): string | undefined {
  return field?.replace(/"limit-(\d+)"/g, (_match, number: string) => `"${totalPolicyName(Number(number), count)}"`);
}

function windowSeconds(windowMs: number): number {
  return sfInteger(Math.max(1, Math.ceil(windowMs / 1000 - 1e-9)));
}

function joinList(items: ReadonlyArray<string | undefined>): string | undefined {
  const present = items.filter((item): item is string => item !== undefined);
  return present.length === 0 ? undefined : present.join(", ");
}

/** The largest Integer a Structured Field may carry (RFC 9651 3.3.1: at most 15 digits). */
export const MAX_SF_INTEGER = 999_999_999_999_999;

/** `value` (a whole number, not negative) as a Structured Field Integer: held at the largest there is. */
function sfInteger(value: number): number {
  return Math.min(value, MAX_SF_INTEGER);
}

/** The RateLimit field of a refused request: nothing left until Retry-After. */
export function rateLimitRefused(retryAfterSeconds: number): string {
  return `"${POLICY_NAME}";r=0;t=${retryAfterSeconds}`;
}

/**
 * Retry-After in whole seconds from a wait in milliseconds: rounded up, so a
 * client that waits exactly that long finds the token there, and never 0,
 * which would invite an immediate retry that is refused again.
 */
export function retryAfterSeconds(waitMs: number): number {
  if (!Number.isFinite(waitMs)) return MAX_RETRY_AFTER_SECONDS;
  return Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil(waitMs / 1000)));
}

/** A paused bucket (rate 0) has no honest answer; a day asks the client to come back much later. */
export const MAX_RETRY_AFTER_SECONDS = 86_400;
