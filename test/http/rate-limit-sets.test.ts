import { request } from "node:http";
import express from "express";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type GateResult, rateLimit, type RateLimitOptions } from "../../src/http/index.js";
import { get, listen, until } from "./http-helpers.js";

/** An Express app behind the middleware; `/hold` answers only when the test lets it. */
async function app(options: RateLimitOptions) {
  const held: Array<() => void> = [];
  const decisions: GateResult[] = [];
  const limit = rateLimit({ ...options, onDecision: (_req, result) => decisions.push(result) });
  const server = express();
  server.use(limit);
  server.get("/hold", (_req, res) => held.push(() => res.end("done\n")));
  server.get("/", (_req, res) => res.end("ok\n"));
  const { url } = await listen(server);
  return { url, held, decisions, limit };
}

describe("rateLimit({ limits }) on Express", () => {
  it("lets through what every limit admits and answers 429 with Retry-After and the bound limit's RateLimit", async () => {
    const clock = new FakeClock();
    const { url, decisions } = await app({ limits: [{ rate: 10, burst: 5 }, { n: 3, windowMs: 2000 }], clock });
    const first = await get(url);
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit-policy"]).toBe(`"limit-1";q=10;w=1, "limit-2";q=3;w=2`);
    expect(first.headers.ratelimit).toBe(`"limit-1";r=4;t=1, "limit-2";r=2;t=2`);
    expect((await get(url)).status).toBe(200);
    expect((await get(url)).status).toBe(200);
    const refused = await get(url);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("2");
    expect(refused.headers.ratelimit).toBe(`"limit-2";r=0;t=2`);
    expect(refused.body).toBe("Too Many Requests: retry after 2 s\n");
    expect(decisions.at(-1)).toMatchObject({ decision: "refused", limitedBy: [2] });
    clock.set(2000);
    expect((await get(url)).status).toBe(200);
  });

  it("holds a concurrency slot until the response ends, and gives it back when the client aborts", async () => {
    const clock = new FakeClock();
    const { url, held, limit } = await app({ limits: [{ concurrency: 1 }], clock });
    const first = get(`${url}/hold`);
    await until(() => held.length === 1, "the first request to reach its handler");
    const refused = await get(url);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    // A concurrency limit has no quota over time: no RateLimit fields.
    expect(refused.headers["ratelimit-policy"]).toBeUndefined();
    held[0]!();
    expect((await first).status).toBe(200);
    expect((await get(url)).status).toBe(200);

    // A client that hangs up while its handler still holds the response: the slot comes back at once.
    const aborted = request(`${url}/hold`, { agent: false });
    aborted.on("error", () => {});
    aborted.end();
    await until(() => held.length === 2, "the aborted request to reach its handler");
    expect((await get(url)).status).toBe(429);
    aborted.destroy();
    let status = 0;
    // The server sees the hang-up a moment later: ask until the slot is back (a second at most).
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await get(url)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status).toBe(200);
    expect(limit.liveKeys).toBe(1);
  });

  it("queues a request to the earliest instant every limit admits (policy queue)", async () => {
    const clock = new FakeClock();
    const { url, decisions } = await app({ limits: [{ rate: 1, burst: 1 }, { n: 2, windowMs: 10_000 }], policy: "queue", maxWaitMs: 5000, clock });
    expect((await get(url)).status).toBe(200);
    const second = get(url);
    await until(() => clock.pendingSleeps === 1, "the second request to wait its turn");
    await clock.advance(1000);
    expect((await second).status).toBe(200);
    expect(decisions.at(-1)).toMatchObject({ decision: "queued", waitMs: 1000, limitedBy: [1] });
    // The window is full until 10 s, past the wait limit: 429, Retry-After from when it would be queued (5 s from 1 s).
    const refused = await get(url);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("4");
  });

  it("keeps one { rate, burst } limit the same as the rate and burst shorthand", async () => {
    const { url } = await app({ limits: [{ rate: 2, burst: 1 }], clock: new FakeClock() });
    const first = await get(url);
    expect(first.headers["ratelimit-policy"]).toBe(`"default";q=2;w=1`);
    expect((await get(url)).headers["retry-after"]).toBe("1");
  });
});

describe("rateLimit({ limits }): options", () => {
  const cases: Array<[RateLimitOptions, string]> = [
    [{ limits: [] }, "Expected `limits` to be a non-empty array of limits"],
    [{ rate: 1, burst: 1, limits: [{ rate: 1 }] }, "Expected `rate` or `limits`, not both"],
    [{ limits: [{ rate: 1 }, { n: 0, windowMs: 1000 }] }, "Expected `limits[1].n` to be a finite number of at least 1, got `0` (number)"],
    [{ limits: [{ n: 5, windowMs: -1 }] }, "Expected `limits[0].windowMs` to be a positive finite number of milliseconds, got `-1` (number)"],
    [{ limits: [{ concurrency: 2.5 }] }, "Expected `limits[0].concurrency` to be a whole number of at least 1, got `2.5` (number)"],
    [{ limits: [{ rate: -1 }] }, "Expected `limits[0].rate` to be a non-negative number or Infinity, got `-1` (number)"],
    [{ limits: [{ rate: 5, burst: 0 }] }, "Expected `limits[0].burst` to be a finite number of at least 1, got `0` (number)"],
    [{ limits: [{ rate: 5, window: 3 } as never] }, "Expected `limits[0]` to be { rate, burst? }, { n, windowMs } or { concurrency }, got `window` beside `rate`"],
    [{ limits: [{ burst: 3 } as never] }, "Expected `limits[0]` to be { rate, burst? }, { n, windowMs } or { concurrency }, got none of rate, n or concurrency"],
  ];
  for (const [options, message] of cases) {
    it(`refuses ${JSON.stringify(options)} naming the option`, () => {
      expect(() => rateLimit(options)).toThrow(message);
    });
  }


});
