import { describe, expect, it } from "vitest";
import { MAX_RETRY_AFTER_SECONDS, rateLimitPolicy, rateLimitRefused, rateLimitState, retryAfterSeconds } from "../../src/http/rate-limit-fields.js";

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

  it("Retry-After rounds up to whole seconds and is never 0", () => {
    expect(retryAfterSeconds(0)).toBe(1);
    expect(retryAfterSeconds(1)).toBe(1);
    expect(retryAfterSeconds(1000)).toBe(1);
    expect(retryAfterSeconds(1000.000001)).toBe(2);
    expect(retryAfterSeconds(Infinity)).toBe(MAX_RETRY_AFTER_SECONDS);
  });
});
