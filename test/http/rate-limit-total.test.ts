import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type GateResult, rateLimit, type RateLimitOptions } from "../../src/http/index.js";
import { get, listen } from "./http-helpers.js";

/** A node:http server behind the middleware, each request keyed by its X-Client header. */
async function server(options: RateLimitOptions) {
  const decisions: GateResult[] = [];
  const limit = rateLimit({ key: (req) => String(req.headers["x-client"]), ...options, onDecision: (_req, result) => decisions.push(result) });
  const { url } = await listen(limit.wrap((_req, res) => res.end("ok\n")));
  return { url, decisions };
}

describe("rateLimit({ total })", () => {
  it("refuses by the total what each client's limit lets through, naming the total in RateLimit-Policy and RateLimit", async () => {
    const clock = new FakeClock();
    const { url, decisions } = await server({ rate: 5, burst: 5, total: [{ rate: 2, burst: 2 }], clock });
    const first = await get(url, { "x-client": "a" });
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe(`"limit-1";q=5;w=1, "total";q=2;w=1`);
    expect(first.headers.ratelimit).toBe(`"limit-1";r=4;t=1, "total";r=1;t=1`);
    expect((await get(url, { "x-client": "b" })).status).toBe(200);
    const refused = await get(url, { "x-client": "c" });
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.headers.ratelimit).toBe(`"total";r=0;t=1`);
    expect(decisions.at(-1)).toMatchObject({ decision: "refused", limitedBy: [], total: { limitedBy: [1] } });
    // Client c lost nothing: its set is as a new one.
    expect(decisions.at(-1)!.limits![0]!.level).toBe(5);
    clock.set(500);
    expect((await get(url, { "x-client": "c" })).status).toBe(200);
  });

  it("names several limits of a total total-1, total-2, and the client's limit when it refuses", async () => {
    const clock = new FakeClock();
    const { url } = await server({ rate: 1, burst: 1, total: [{ rate: 100, burst: 10 }, { n: 50, windowMs: 60_000 }], clock });
    const first = await get(url, { "x-client": "a" });
    expect(first.headers["ratelimit-policy"]).toBe(`"limit-1";q=1;w=1, "total-1";q=100;w=1, "total-2";q=50;w=60`);
    const refused = await get(url, { "x-client": "a" });
    expect(refused.status).toBe(429);
    expect(refused.headers.ratelimit).toBe(`"limit-1";r=0;t=1`);
  });

  it("counts each request's cost in the total too, and holds every plan of a limits function to one total", async () => {
    const clock = new FakeClock();
    const costly = await server({ rate: 100, burst: 100, cost: 3, total: [{ rate: 1, burst: 7 }], clock });
    expect((await get(costly.url, { "x-client": "a" })).status).toBe(200);
    expect((await get(costly.url, { "x-client": "b" })).status).toBe(200);
    // 6 of the total's 7 taken: a third request of 3 is refused by it, and costs client c nothing.
    expect((await get(costly.url, { "x-client": "c" })).status).toBe(429);
    expect(costly.decisions.at(-1)).toMatchObject({ total: { limitedBy: [1] } });
    expect(costly.decisions.at(-1)!.limits![0]!.level).toBe(100);
    const plans = await server({ limits: (req) => (req.headers["x-plan"] === "gold" ? [{ rate: 100, burst: 100 }] : [{ rate: 1, burst: 1 }]), total: [{ rate: 1, burst: 2 }], clock });
    expect((await get(plans.url, { "x-client": "a", "x-plan": "gold" })).status).toBe(200);
    expect((await get(plans.url, { "x-client": "b", "x-plan": "free" })).status).toBe(200);
    expect((await get(plans.url, { "x-client": "c", "x-plan": "gold" })).status).toBe(429);
  });

  it.each([
    [{ total: [{ concurrency: 2 }] }, "Expected no `concurrency` in `total`"],
    [{ total: [{ rate: 5, burst: 0 }] }, "Expected `total[0].burst` to be a finite number of at least 1, got `0` (number)"],
    [{ total: [] }, "Expected `total` to be a non-empty array"],
    [{ total: [{ rate: 5 }], classes: [{ name: "a", rate: 5 }], defaultClass: "a" }, "Expected no `total` with `classes`"],
  ])("refuses %j at construction", (options, message) => {
    expect(() => rateLimit({ rate: 10, burst: 1, ...(options as RateLimitOptions) })).toThrow(message);
  });
});
