import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type GateResult, rateLimit, RequestFunctionError } from "../../src/http/index.js";
import { openStore } from "../../src/http/open-store.js";
import { get, listen } from "./http-helpers.js";

/** A server answering 200 "ok" behind the middleware. */
async function serve(limit: ReturnType<typeof rateLimit>, log?: string[]) {
  return listen((req, res) => {
    limit(req, res, (error) => {
      if (error) {
        log?.push(error instanceof RequestFunctionError ? `${error.name} ${error.option}: ${error.message}` : String(error));
        res.statusCode = 500;
        res.end("failed\n");
        return;
      }
      res.end("ok\n");
    });
  });
}

const header = (name: string) => (req: IncomingMessage) => req.headers[name] as string | undefined;

describe("rateLimit: skip", () => {
  it("lets what skip says through uncounted, sync or async, and fails the request when skip fails", async () => {
    const limit = rateLimit({ rate: 1, burst: 1, skip: (req) => req.url === "/health", headers: false });
    const { url } = await serve(limit);
    for (let i = 0; i < 3; i++) expect((await get(`${url}/health`)).status).toBe(200);
    expect((await get(`${url}/`)).status).toBe(200);
    expect((await get(`${url}/`)).status).toBe(429);
    expect((await get(`${url}/health`)).headers["ratelimit-policy"]).toBeUndefined();

    const errors: string[] = [];
    const failing = rateLimit({ rate: 1, burst: 1, skip: async (req) => (req.url === "/boom" ? Promise.reject(new Error("no db")) : (req.url as unknown as boolean)) });
    const second = await serve(failing, errors);
    expect((await get(`${second.url}/boom`)).status).toBe(500);
    expect((await get(`${second.url}/x`)).status).toBe(500);
    expect(errors).toEqual([
      "RequestFunctionError skip: the `skip` function failed: no db",
      "RequestFunctionError skip: the `skip` function gave `/x`, not true or false",
    ]);
  });
});

describe("rateLimit: cost", () => {
  it("takes each request's cost from the key's bucket: a cost of 3 from a burst of 5 leaves 2", async () => {
    const clock = new FakeClock();
    const results: GateResult[] = [];
    const limit = rateLimit({ rate: 1, burst: 5, clock, cost: (req) => Number(req.headers["x-cost"] ?? 1), onDecision: (_req, result) => results.push(result) });
    const { url } = await serve(limit);
    const first = await get(url, { "x-cost": "3" });
    expect(first.status).toBe(200);
    expect(first.headers["ratelimit"]).toBe('"limit-1";r=2;t=3');
    expect((await get(url, { "x-cost": "3" })).status).toBe(429);
    expect((await get(url, { "x-cost": "2" })).status).toBe(200);
    // Free requests pass even with the bucket empty.
    expect((await get(url, { "x-cost": "0" })).status).toBe(200);
    const refused = await get(url, { "x-cost": "4" });
    expect(refused.status).toBe(429);
    // 4 tokens at 1/s, and the client refused before (cost 3) still expected back ahead of it: 5 s (no stampede).
    expect(refused.headers["retry-after"]).toBe("5");
    await clock.advance(4000);
    expect((await get(url, { "x-cost": "4" })).status).toBe(200);
    expect(results.map((result) => result.decision)).toEqual(["admitted", "refused", "admitted", "admitted", "refused", "admitted"]);
  });

  it("counts cost in a window and a shared store, and a slot whatever the cost", async () => {
    const store = await openStore("memory:");
    try {
      const limit = rateLimit({ limits: [{ n: 10, windowMs: 60_000 }, { concurrency: 5 }], cost: 4, store: { store, name: "api" } });
      const { url } = await serve(limit);
      expect((await get(url)).status).toBe(200);
      expect((await get(url)).status).toBe(200);
      const third = await get(url);
      expect(third.status).toBe(429);
      expect(third.headers["ratelimit"]).toMatch(/^"limit-1";r=0;t=\d+$/);
    } finally {
      await store.close();
    }
  });

  it("refuses a cost no bucket can ever hold with the longest Retry-After, and fails a bad cost", async () => {
    const errors: string[] = [];
    const limit = rateLimit({ rate: 10, burst: 5, cost: (req) => (req.url === "/big" ? 6 : req.url === "/nan" ? Number.NaN : -1) });
    const { url } = await serve(limit, errors);
    const big = await get(`${url}/big`);
    expect(big.status).toBe(429);
    expect(big.headers["retry-after"]).toBe("86400");
    expect((await get(`${url}/nan`)).status).toBe(500);
    expect((await get(`${url}/neg`)).status).toBe(500);
    expect(errors).toEqual([
      "RequestFunctionError cost: the `cost` function gave `NaN` (number), not a finite number of at least 0",
      "RequestFunctionError cost: the `cost` function gave `-1` (number), not a finite number of at least 0",
    ]);
  });
});

describe("rateLimit: limits per request", () => {
  it("gives each plan its own limits, and keeps a key's plans apart", async () => {
    const plans = { free: [{ rate: 1, burst: 1 }], paid: [{ rate: 10, burst: 3 }] };
    const limit = rateLimit({ key: header("x-user"), limits: async (req) => plans[req.headers["x-plan"] === "paid" ? "paid" : "free"], headers: false });
    const { url } = await serve(limit);
    const statuses = async (headers: Record<string, string>, n: number) => {
      const got: number[] = [];
      for (let i = 0; i < n; i++) got.push((await get(url, headers)).status);
      return got;
    };
    expect(await statuses({ "x-user": "a" }, 2)).toEqual([200, 429]);
    expect(await statuses({ "x-user": "b", "x-plan": "paid" }, 4)).toEqual([200, 200, 200, 429]);
    // The same user on another plan is counted in that plan's keys.
    expect(await statuses({ "x-user": "a", "x-plan": "paid" }, 1)).toEqual([200]);
    expect(limit.liveKeys).toBe(3);
  });

  it("fails a request whose limits are bad, naming the limit, and refuses more than 100 plans", async () => {
    const errors: string[] = [];
    const limit = rateLimit({ key: () => "k", limits: (req) => (req.url === "/bad" ? [{ rate: 1, burst: 0 }] : [{ rate: Number(req.url!.slice(1)) + 1 }]) });
    const { url } = await serve(limit, errors);
    expect((await get(`${url}/bad`)).status).toBe(500);
    for (let i = 0; i < 100; i++) expect((await get(`${url}/${i}`)).status).toBe(200);
    expect((await get(`${url}/100`)).status).toBe(500);
    expect(errors).toEqual([
      "RequestFunctionError limits: the `limits` function gave bad limits: Expected `limits[0].burst` to be a finite number of at least 1, got `0` (number)",
      "RequestFunctionError limits: the `limits` function gave more than 100 different sets of limits; give a few plans (each keeps its own keys), not limits made per request",
    ]);
  });

  it("takes a cost on a plan of one bucket, as on the options' own", async () => {
    // The proxy's rules per route are such plans, each with its cost (a plan's one private bucket used to take only 1 a request).
    const limit = rateLimit({ key: () => "k", limits: (req) => (req.url === "/login" ? [{ rate: 0.01, burst: 2 }] : [{ rate: 0.01, burst: 4 }]), cost: (req) => (req.url === "/export" ? 3 : 1), headers: false });
    const { url } = await serve(limit);
    expect((await get(`${url}/export`)).status).toBe(200);
    expect((await get(`${url}/export`)).status).toBe(429);
    expect((await get(`${url}/`)).status).toBe(200);
    expect((await get(`${url}/`)).status).toBe(429);
    expect([(await get(`${url}/login`)).status, (await get(`${url}/login`)).status, (await get(`${url}/login`)).status]).toEqual([200, 200, 429]);
  });

  it("refuses limits as a function beside rate or classes, at construction", () => {
    expect(() => rateLimit({ rate: 1, limits: () => [{ rate: 1 }] })).toThrow("Expected `rate` or `limits`, not both");
    expect(() => rateLimit({ limits: () => [{ rate: 1 }], classes: [{ name: "a", rate: 1 }], defaultClass: "a" })).toThrow("Expected `limits` as an array with `classes`");
  });
});

describe("rateLimit: refusals", () => {
  it("sends a message as text or JSON, or as a function of the request and the decision", async () => {
    const text = await serve(rateLimit({ rate: 1, burst: 1, message: "slow down\n" }));
    await get(text.url);
    const refusedText = await get(text.url);
    expect([refusedText.status, refusedText.headers["content-type"], refusedText.body]).toEqual([429, "text/plain; charset=utf-8", "slow down\n"]);

    const json = await serve(rateLimit({ rate: 1, burst: 1, message: async (req, result) => ({ error: "rate_limited", path: req.url, retryAfter: result.retryAfterSeconds }) }));
    await get(json.url);
    const refusedJson = await get(`${json.url}/v1`);
    expect(refusedJson.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(refusedJson.body)).toEqual({ error: "rate_limited", path: "/v1", retryAfter: 1 });
    expect(refusedJson.headers["content-length"]).toBe(String(Buffer.byteLength(refusedJson.body)));
  });

  it("hands a refusal to the handler with the status and fields set; it may let it through", async () => {
    const seen: number[] = [];
    const limit = rateLimit({
      rate: 1,
      burst: 1,
      handler: (req, res, next, result) => {
        seen.push(result.retryAfterSeconds);
        if (req.url === "/let") return next();
        res.end(`custom ${res.statusCode} ${String(res.getHeader("retry-after"))}\n`);
      },
    });
    const { url } = await serve(limit);
    await get(url);
    const refused = await get(url);
    expect([refused.status, refused.body]).toEqual([429, "custom 429 1\n"]);
    expect(refused.headers["ratelimit-policy"]).toBe('"default";q=1;w=1');
    const let_ = await get(`${url}/let`);
    expect([let_.status, let_.body]).toEqual([200, "ok\n"]);
    expect(seen).toEqual([1, 2]);
  });

  it("sends retry-after-ms and the legacy X-RateLimit fields when asked", async () => {
    const clock = new FakeClock(1_700_000_000_000);
    const limit = rateLimit({ rate: 2, burst: 4, clock, retryAfterMs: true, legacyHeaders: true });
    const { url } = await serve(limit);
    const first = await get(url);
    expect([first.headers["x-ratelimit-limit"], first.headers["x-ratelimit-remaining"], first.headers["x-ratelimit-reset"]]).toEqual(["4", "3", "1700000001"]);
    expect(first.headers["retry-after-ms"]).toBeUndefined();
    for (let i = 0; i < 3; i++) await get(url);
    const refused = await get(url);
    expect(refused.status).toBe(429);
    expect([refused.headers["retry-after"], refused.headers["retry-after-ms"]]).toEqual(["1", "500"]);
    expect([refused.headers["x-ratelimit-remaining"], refused.headers["x-ratelimit-reset"]]).toEqual(["0", "1700000002"]);
    // 250 ms on, half a token is back; the client refused before is due first, so this one is told 750 ms (no stampede).
    await clock.advance(250);
    const later = await get(url);
    expect(later.headers["retry-after-ms"]).toBe("750");
  });
});
