import { describe, expect, it } from "vitest";
import { MAX_RETRY_AFTER_SECONDS, MAX_SF_INTEGER, rateLimitPolicy, rateLimitRefused, rateLimitState, retryAfterSeconds } from "../../src/http/rate-limit-fields.js";

describe("RateLimit fields (draft-ietf-httpapi-ratelimit-headers)", () => {
  it.each([
    [50, `"default";q=50;w=1`],
    [2.5, `"default";q=2;w=1`],
    [0.5, `"default";q=1;w=2`],
    [0.3, `"default";q=1;w=4`],
    [1 / 60, `"default";q=1;w=60`],
    [0, `"default";q=0`],
  ])("RateLimit-Policy at %s/s is %s: whole requests over whole seconds, never more than the rate earns", (rate, field) => {
    expect(rateLimitPolicy(rate)).toBe(field);
  });

  it("advertises nothing at an infinite rate", () => {
    expect(rateLimitPolicy(Infinity)).toBeUndefined();
    expect(rateLimitState(10, Infinity, 10)).toBeUndefined();
  });

  it("RateLimit gives the whole requests left and the seconds until the bucket is full", () => {
    expect(rateLimitState(10, 50, 10)).toBe(`"default";r=10;t=0`);
    expect(rateLimitState(9.4, 50, 10)).toBe(`"default";r=9;t=1`);
    expect(rateLimitState(-3, 1, 10)).toBe(`"default";r=0;t=13`);
    expect(rateLimitState(0.5, 0, 10)).toBe(`"default";r=0`);
    expect(rateLimitRefused(3)).toBe(`"default";r=0;t=3`);
  });

  // Regression: at 1e16/s RateLimit-Policy said q=10000000000000000, and RFC 9651 parsers reject the field.
  it.each([1e15, 1e16, 1e20, Number.MAX_VALUE, 1e-15, 1e-16, 1e-300])("every number at %s/s is an Integer of at most 15 digits (RFC 9651)", (rate) => {
    const integers = (field: string | undefined) => [...field!.matchAll(/[qwrt]=([^;]*)/g)].map((match) => match[1]!);
    const burst = 1e20;
    for (const field of [rateLimitPolicy(rate), rateLimitState(burst, rate, burst), rateLimitState(0, rate, burst), rateLimitState(-burst, rate, burst)]) {
      for (const integer of integers(field)) expect(integer).toMatch(/^\d{1,15}$/);
    }
    expect(rateLimitPolicy(1e16)).toBe(`"default";q=${MAX_SF_INTEGER};w=1`);
  });

  it("Retry-After rounds up to whole seconds and is never 0", () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1000.000001)).toBe(2);
    expect(retryAfterSeconds(Infinity)).toBe(MAX_RETRY_AFTER_SECONDS);
  });
});
