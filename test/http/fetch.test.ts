import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { rateLimit } from "../../src/http/fetch.js";

const request = (path = "/", headers: Record<string, string> = {}) => new Request(`http://localhost${path}`, { headers });

describe("tbucket/fetch", () => {
  it("answers a Request with a 429 Response or undefined, the key given per call", async () => {
    const limit = rateLimit({ rate: 1, burst: 2 });
    expect(await limit(request(), { key: "a" })).toBeUndefined();
    expect(await limit(request(), { key: "a" })).toBeUndefined();
    const refused = await limit(request(), { key: "a" });
    expect(refused?.status).toBe(429);
    expect(refused?.headers.get("retry-after")).toBe("1");
    expect(refused?.headers.get("ratelimit-policy")).toBe('"default";q=1;w=1');
    expect(refused?.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(await refused?.text()).toBe("Too Many Requests: retry after 1 s\n");
    // Another key has its own bucket.
    expect(await limit(request(), { key: "b" })).toBeUndefined();
  });

  it("gives the fields for the response that goes on, from check()", async () => {
    const limit = rateLimit({ rate: 10, burst: 5, key: (req) => req.headers.get("x-api-key") ?? undefined, legacyHeaders: true, clock: new FakeClock(1_700_000_000_000) });
    const checked = await limit.check(request("/", { "x-api-key": "k" }));
    expect(checked.response).toBeUndefined();
    expect(checked.headers.get("ratelimit")).toBe('"default";r=4;t=1');
    expect(checked.headers.get("x-ratelimit-remaining")).toBe("4");
    // No key: let through uncounted, no fields.
    const uncounted = await limit.check(request());
    expect([uncounted.response, [...uncounted.headers.keys()]]).toEqual([undefined, []]);
  });

  it("runs in Hono as the README shows", async () => {
    const app = new Hono();
    const limit = rateLimit({ rate: 5, burst: 2, key: (req) => req.headers.get("x-forwarded-for") ?? "unknown" });
    app.use(async (c, next) => {
      const refused = await limit(c.req.raw);
      if (refused) return refused;
      await next();
    });
    app.get("/", (c) => c.text("hello\n"));
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.fetch(request("/", { "x-forwarded-for": "192.0.2.7" }))).status);
    expect(statuses).toEqual([200, 200, 429]);
    expect((await app.fetch(request("/", { "x-forwarded-for": "192.0.2.8" }))).status).toBe(200);
  });

  it("rejects a request with no key to be had, and refuses a concurrency limit at construction", async () => {
    const limit = rateLimit({ rate: 1, burst: 1 });
    await expect(limit(request())).rejects.toThrow("the `key` function failed: a Request carries no client address: give the `key` option or the key with each call, `limit(request, { key })`");
    expect(() => rateLimit({ limits: [{ rate: 1 }, { concurrency: 2 }], key: () => "k" })).toThrow("Expected no `concurrency` limit in tbucket/fetch");
    expect(() => rateLimit({ rate: 1, burst: 1, handlr: () => new Response() } as never)).toThrow("Unknown option `handlr`");
  });

  it("queues until its turn and gives the turn back when the request's signal aborts", async () => {
    const clock = new FakeClock();
    const limit = rateLimit({ rate: 1, burst: 1, policy: "queue", maxWaitMs: 5000, clock, key: () => "k" });
    expect(await limit(request())).toBeUndefined();
    const controller = new AbortController();
    const leaving = limit(new Request("http://localhost/", { signal: controller.signal }));
    const waiting = limit(request());
    await Promise.resolve();
    controller.abort();
    expect((await leaving)?.status).toBe(499);
    // The one that left gave its turn back: the next waits one token, not two.
    await clock.advance(1000);
    expect(await waiting).toBeUndefined();
  });

  it("answers with the handler or message, and 503 while the store is lost", async () => {
    const custom = rateLimit({ rate: 1, burst: 1, key: () => "k", handler: (_req, result, headers) => Response.json({ wait: result.retryAfterSeconds }, { status: 429, headers }) });
    await custom(request());
    const refused = await custom(request());
    expect([refused?.status, refused?.headers.get("retry-after"), await refused?.json()]).toEqual([429, "1", { wait: 1 }]);

    const store = new MemoryStore();
    store.read = async () => {
      throw new StoreError("lost", "store memory: gone", { storeUrl: "memory:" });
    };
    const shared = rateLimit({ rate: 1, burst: 1, key: () => "k", store: { store, name: "api" } });
    const lost = await shared(request());
    expect([lost?.status, lost?.headers.get("retry-after")]).toEqual([503, "1"]);
    shared.close();
  });
});
