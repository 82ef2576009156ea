import { join } from "node:path";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { ClassFunctionError, type GateResult, rateLimit, type RateLimitMiddleware, type RateLimitOptions } from "../../src/http/index.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { FlakyStore } from "../helpers/flaky-store.js";
import { get, listen } from "./http-helpers.js";

const tempDir = tempDirs("rate-limit-classes");
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

// Within 10 requests a second: "paid" is guaranteed 6 and borrows first (prio 0), "free" is guaranteed 2 (prio 1).
const CLASSES = [
  { name: "paid", rate: 6 },
  { name: "free", rate: 2, prio: 1 },
];

/** A node:http server behind the middleware, the class from the X-Tier header; every decision recorded. */
async function app(options: Partial<RateLimitOptions>) {
  const decisions: GateResult[] = [];
  const limit = rateLimit({
    rate: 10,
    burst: 2,
    classes: CLASSES,
    classOf: (req) => req.headers["x-tier"] as string | undefined,
    key: () => "everyone",
    onDecision: (_req, result) => decisions.push(result),
    ...options,
  } as RateLimitOptions);
  closers.push(() => limit.close());
  const { url } = await listen(limit.wrap((_req, res) => res.end("ok\n")));
  return { url, decisions, limit };
}

/** Both classes ask every 25 ms for `seconds` of the fake clock; what each was let through. */
async function hammer(url: string, clock: FakeClock, seconds: number, tiers: readonly string[] = ["paid", "free"]) {
  const admitted: Record<string, number> = Object.fromEntries(tiers.map((tier) => [tier, 0]));
  for (let step = 0; step < seconds * 40; step++) {
    await clock.advance(25);
    for (const tier of tiers) if ((await get(url, { "x-tier": tier })).status === 200) admitted[tier]!++;
  }
  return admitted;
}

describe("rateLimit({ classes }) shares a key's limit between classes of requests", () => {
  it("gives each class its guarantee and lends the rest to the lower prio first; one alone gets the whole rate", async () => {
    const clock = new FakeClock();
    const { url } = await app({ clock, burst: 10 });
    await hammer(url, clock, 1); // past the first burst
    const both = await hammer(url, clock, 5);
    // The rule: free keeps its 2/s guarantee; paid gets its 6 and the 2 left: 8/s (±1 over 5 s for the edges).
    expect(both.paid).toBeGreaterThanOrEqual(39);
    expect(both.paid).toBeLessThanOrEqual(41);
    expect(both.free).toBeGreaterThanOrEqual(9);
    expect(both.free).toBeLessThanOrEqual(11);
    const alone = await hammer(url, clock, 5, ["free"]);
    // Work-conserving: free alone gets its ceil, the key's 10/s.
    expect(alone.free).toBeGreaterThanOrEqual(49);
    expect(alone.free).toBeLessThanOrEqual(51);
  });

  it("tells each refused class when it could be served, and that is true", async () => {
    const clock = new FakeClock();
    const { url, decisions } = await app({ rate: 1, burst: 1, classes: [{ name: "paid", rate: 1 }, { name: "free", rate: 0, prio: 1 }], clock });
    expect((await get(url, { "x-tier": "paid" })).status).toBe(200);
    const free = await get(url, { "x-tier": "free" });
    expect(free.status).toBe(429);
    expect(decisions.at(-1)).toMatchObject({ decision: "refused", className: "free" });
    // free borrows only what paid leaves, once the key has refilled: 1 s.
    // paid's guarantee refills in 1 s; free borrows only once paid has not asked for 2 s (activeMs: its
    // guarantee bucket is held for it till then), the first whole second after that being 3.
    const paid = await get(url, { "x-tier": "paid" });
    expect(paid.headers["retry-after"]).toBe("1");
    expect(free.headers["retry-after"]).toBe("3");
    expect(free.headers["ratelimit-policy"]).toBe(`"default";q=1;w=1`);
    expect(free.headers.ratelimit).toBeUndefined();
    clock.set(2000);
    expect((await get(url, { "x-tier": "free" })).status).toBe(429);
    clock.set(3000);
    expect((await get(url, { "x-tier": "free" })).status).toBe(200);
  });

  it("takes a request without a class as defaultClass, and fails one of a class not defined (500, never admitted)", async () => {
    const clock = new FakeClock();
    const logged: string[] = [];
    const { url, decisions } = await app({ clock, defaultClass: "free", log: (line) => logged.push(line) });
    expect((await get(url)).status).toBe(200);
    expect(decisions.at(-1)).toMatchObject({ className: "free" });
    const wrong = await get(url, { "x-tier": "gold" });
    expect(wrong.status).toBe(500);
    expect(logged.at(-1)).toBe("tbucket/http: GET /: answered 500: the `classOf` function gave `gold`; the classes are paid, free");
    expect(decisions).toHaveLength(1);
  });

  it("passes a ClassFunctionError to Express's error handler when classOf rejects", async () => {
    const limit = rateLimit({ rate: 10, burst: 1, classes: CLASSES, classOf: async () => Promise.reject(new Error("no tier\nhere")) });
    closers.push(() => limit.close());
    const errors: unknown[] = [];
    const server = express();
    server.use(limit);
    server.get("/", (_req, res) => res.end("ok\n"));
    server.use((error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      errors.push(error);
      res.status(500).end();
    });
    const { url } = await listen(server);
    expect((await get(url)).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(ClassFunctionError);
    expect((errors[0] as Error).message).toBe("the `classOf` function failed: no tier here");
  });

  it("queues a class's requests for its turn under policy queue", async () => {
    const clock = new FakeClock();
    const { url, decisions } = await app({ rate: 2, burst: 1, classes: [{ name: "paid", rate: 2 }], policy: "queue", maxWaitMs: 2000, clock, defaultClass: "paid" });
    expect((await get(url)).status).toBe(200);
    const queued = get(url);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await clock.advance(500);
    expect((await queued).status).toBe(200);
    expect(decisions.at(-1)).toMatchObject({ decision: "queued", className: "paid", waitMs: 500 });
  });

  it("refuses options that cannot work, naming what to write", () => {
    expect(() => rateLimit({ rate: 10, burst: 1, classOf: () => "a" })).toThrow("Expected `classOf` only with `classes`, the classes that share each key's limit");
    expect(() => rateLimit({ rate: 10, burst: 1, classes: CLASSES })).toThrow("Expected `classOf` (the class of a request) or `defaultClass` with `classes`");
    expect(() => rateLimit({ rate: 10, burst: 1, classes: CLASSES, defaultClass: "gold" })).toThrow("Expected `defaultClass` to be one of the classes, paid, free; got `gold`");
    expect(() => rateLimit({ rate: 5, burst: 1, classes: CLASSES, defaultClass: "paid" })).toThrow(/^`classes`: /);
    expect(() => rateLimit({ limits: [{ rate: 10, burst: 1 }, { concurrency: 2 }], classes: CLASSES, defaultClass: "paid" })).toThrow("Expected no `concurrency` limit with `classes`");
    expect(() => rateLimit({ rate: Infinity, burst: 1, classes: CLASSES, defaultClass: "paid" })).toThrow("`classes`: Classes share a finite rate; the key's rate is Infinity");
  });
});

describe("rateLimit({ classes, store }) with a SQLite file", () => {
  async function appOn(path: string, clock?: FakeClock) {
    const store = await SqliteStore.open(path);
    const limit: RateLimitMiddleware = rateLimit({
      rate: 1,
      burst: 1,
      classes: [{ name: "paid", rate: 1 }, { name: "free", rate: 0, prio: 1 }],
      classOf: (req) => req.headers["x-tier"] as string | undefined,
      store: { store, name: "api" },
      key: () => "client",
      clock,
    });
    closers.push(() => store.close(), () => limit.close());
    return { url: (await listen(limit.wrap((_req, res) => res.end("ok\n")))).url, store };
  }

  it("two middlewares on one file share the client's key between its classes, and the key is made with them", async () => {
    const path = join(tempDir(), "buckets.db");
    const one = await appOn(path);
    const two = await appOn(path);
    expect((await get(one.url, { "x-tier": "paid" })).status).toBe(200);
    const refused = await get(two.url, { "x-tier": "free" });
    expect(refused.status).toBe(429);
    // As a private one: free borrows only once paid has not asked for 2 s.
    expect(refused.headers["retry-after"]).toBe("2");
    expect((await get(two.url, { "x-tier": "paid" })).status).toBe(429);
    const state = await one.store.readSet("api:client");
    expect(state).toMatchObject({ expiresWhenFull: true, limits: [{ kind: "bucket", rate: 1, burst: 1 }] });
    expect(state?.classes?.map((c) => c.name)).toEqual(["paid", "free"]);
  });
});

describe("rateLimit({ classes, store }) while the store is lost", () => {
  const CLASSES_OF_1 = [{ name: "paid", rate: 1 }, { name: "free", rate: 0, prio: 1 }];
  async function appOn(store: FlakyStore, onStoreError: "fail" | "local" | "open") {
    const limit = rateLimit({ rate: 1, burst: 1, classes: CLASSES_OF_1, classOf: (req) => req.headers["x-tier"] as string, store: { store, name: "api", onStoreError }, key: () => "client" });
    closers.push(() => limit.close());
    return (await listen(limit.wrap((_req, res) => res.end("ok\n")))).url;
  }

  it("answers 503 (fail), goes on with the classes' rules in private (local), or lets through (open), and shares again once back", async () => {
    const statuses: Record<string, number[]> = {};
    for (const mode of ["fail", "local", "open"] as const) {
      const store = new FlakyStore();
      const url = await appOn(store, mode);
      expect((await get(url, { "x-tier": "paid" })).status).toBe(200);
      store.down = true;
      statuses[mode] = [];
      for (const tier of ["paid", "free", "paid"]) statuses[mode]!.push((await get(url, { "x-tier": tier })).status);
    }
    // local: one private scheduler of the same classes for the key, new (full, as a private set is): paid takes the
    // key's one token, and free may not borrow it; the classes share it as they share the store's key.
    expect(statuses).toEqual({ fail: [503, 503, 503], local: [200, 429, 429], open: [200, 200, 200] });
  });

  it("uses the store again once it answers, with the key as it was made", async () => {
    const store = new FlakyStore();
    const url = await appOn(store, "fail");
    expect((await get(url, { "x-tier": "paid" })).status).toBe(200);
    store.down = true;
    expect((await get(url, { "x-tier": "paid" })).status).toBe(503);
    store.down = false;
    // The watch asks the store again at most a second apart.
    let status = 503;
    for (let i = 0; i < 60 && status === 503; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await get(url, { "x-tier": "paid" })).status;
    }
    expect(status).not.toBe(503);
    expect((await store.readSet("api:client"))?.classes?.map((c) => c.name)).toEqual(["paid", "free"]);
  });
});
