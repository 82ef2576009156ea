import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type GateResult, rateLimit } from "../../src/http/index.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { get, listen, until } from "./http-helpers.js";

describe("rateLimit on node:http", () => {
  it("lets the burst through with the RateLimit fields, then answers 429 with an honest Retry-After", async () => {
    const limit = rateLimit({ rate: 1, burst: 2 });
    const { url } = await listen(limit.wrap((_req, res) => res.end("ok\n")));
    const answers = [await get(url), await get(url), await get(url)];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(answers[0]!.headers["ratelimit-policy"]).toBe(`"default";q=1;w=1`);
    expect(answers[0]!.headers.ratelimit).toBe(`"default";r=1;t=1`);
    expect(answers[1]!.headers.ratelimit).toBe(`"default";r=0;t=2`);
    expect(answers[2]).toMatchObject({ body: "Too Many Requests: retry after 1 s\n" });
    expect(answers[2]!.headers).toMatchObject({ "retry-after": "1", ratelimit: `"default";r=0;t=1`, "ratelimit-policy": `"default";q=1;w=1` });
    expect(limit.liveKeys).toBe(1);
  });

  it("works as a Connect or Express middleware: next() for requests let through, nothing for the refused", async () => {
    const limit = rateLimit({ rate: 1, burst: 1, headers: false });
    let handled = 0;
    const { url } = await listen((req, res) => {
      limit(req, res, (error) => {
        if (error) throw error;
        handled++;
        res.end("ok\n");
      });
    });
    const answers = [await get(url), await get(url)];
    expect(answers.map((a) => a.status)).toEqual([200, 429]);
    expect(answers[0]!.headers.ratelimit).toBeUndefined();
    expect(handled).toBe(1);
  });

  it("keys by the key function; undefined lets a request through uncounted", async () => {
    const limit = rateLimit({ rate: 1, burst: 1, key: (req) => req.headers["x-api-key"] as string | undefined });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    const statuses = [];
    for (const key of ["a", "a", "b", undefined, undefined]) statuses.push((await get(url, key ? { "x-api-key": key } : {})).status);
    expect(statuses).toEqual([200, 429, 200, 200, 200]);
  });

  it("believes X-Forwarded-For only from trusted proxies", async () => {
    const trusting = rateLimit({ rate: 1, burst: 1, trustProxy: ["127.0.0.1/32"] });
    const wary = rateLimit({ rate: 1, burst: 1 });
    const { url: trustingUrl } = await listen(trusting.wrap((_req, res) => res.end()));
    const { url: waryUrl } = await listen(wary.wrap((_req, res) => res.end()));
    const statuses = async (url: string) => {
      const out = [];
      for (const client of ["1.1.1.1", "2.2.2.2", "1.1.1.1"]) out.push((await get(url, { "x-forwarded-for": client })).status);
      return out;
    };
    expect(await statuses(trustingUrl)).toEqual([200, 200, 429]);
    expect(await statuses(waryUrl)).toEqual([200, 429, 429]);
  });

  it("queues: a client that hangs up while waiting gives its turn back to the next", async () => {
    const clock = new FakeClock();
    const decisions: GateResult[] = [];
    const limit = rateLimit({ rate: 2, burst: 1, policy: "queue", maxWaitMs: 5000, clock, onDecision: (_req, result) => decisions.push(result) });
    const { url } = await listen(limit.wrap((_req, res) => res.end("ok\n")));
    expect((await get(url)).status).toBe(200);
    const leaving = request(url, { agent: false });
    leaving.on("error", () => {});
    leaving.end();
    await until(() => clock.pendingSleeps === 1, "the second request to wait");
    leaving.destroy();
    await until(() => decisions.length === 2, "the hang-up to be seen");
    expect(decisions[1]!.decision).toBe("cancelled");
    const third = get(url);
    await until(() => clock.pendingSleeps === 1, "the third request to wait");
    await clock.advance(500);
    expect((await third).status).toBe(200);
    expect(decisions[2]).toMatchObject({ decision: "queued", waitMs: 500 });
  });

  it("queues up to maxWaitMs and refuses beyond, with a Retry-After after which the wait fits", async () => {
    const clock = new FakeClock();
    const limit = rateLimit({ rate: 1, burst: 1, policy: "queue", maxWaitMs: 1500, clock });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    await get(url);
    const second = get(url);
    await until(() => clock.pendingSleeps === 1, "the second request to wait");
    const third = await get(url);
    expect(third.status).toBe(429);
    // Level -1 now; a retry after 1 s finds level 0 and waits 1 s, within the limit.
    expect(third.headers["retry-after"]).toBe("1");
    await clock.advance(1000);
    expect((await second).status).toBe(200);
  });

  it("shares each client's limit through a store between two servers", async () => {
    const store = new MemoryStore();
    const one = rateLimit({ rate: 1, burst: 2, store: { store, name: "api" } });
    const two = rateLimit({ rate: 1, burst: 2, store: { store, name: "api" } });
    const { url: first } = await listen(one.wrap((_req, res) => res.end()));
    const { url: second } = await listen(two.wrap((_req, res) => res.end()));
    const statuses = [];
    for (const url of [first, second, first, second]) statuses.push((await get(url)).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    one.close();
    two.close();
  });

  it("answers 503 while the store fails, and with onStoreError local goes on with private buckets (new keys full), telling onError once", async () => {
    const broken = new MemoryStore();
    broken.read = async () => {
      throw new StoreError("lost", "store memory: gone", { storeUrl: "memory:" });
    };
    const errors: StoreError[] = [];
    const failing = rateLimit({ rate: 100, burst: 10, store: { store: broken, name: "api" } });
    const local = rateLimit({ rate: 100, burst: 10, store: { store: broken, name: "api", onStoreError: "local", onError: (error) => errors.push(error) } });
    const { url: failingUrl } = await listen(failing.wrap((_req, res) => res.end()));
    const { url: localUrl } = await listen(local.wrap((_req, res) => res.end()));
    const unavailable = await get(failingUrl);
    expect(unavailable).toMatchObject({ status: 503, body: "Service Unavailable: the rate limit's store cannot be reached\n" });
    expect(unavailable.headers["retry-after"]).toBe("1");
    // A key met after the failure starts full, as a new bucket does.
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await get(localUrl)).status);
    expect(statuses).toEqual([200, 200, 200]);
    expect(errors.map((e) => e.message)).toEqual(["store memory: gone"]);
  });

  // Express's handler turned next(StoreError) into a 500 with a stack trace: the middleware answers itself.
  it("answers a lost store's 503 itself, as middleware, never handing the StoreError to the framework's error handler", async () => {
    const broken = new MemoryStore();
    broken.read = async () => {
      throw new StoreError("lost", "store memory: gone", { storeUrl: "memory:" });
    };
    const limit = rateLimit({ rate: 100, burst: 10, store: { store: broken, name: "api" } });
    const errors: unknown[] = [];
    const { url } = await listen((req, res) =>
      limit(req, res, (error) => {
        errors.push(error);
        res.statusCode = error === undefined ? 200 : 500;
        res.end(error === undefined ? "ok" : String((error as Error).stack));
      }),
    );
    const answer = await get(url);
    expect([answer.status, answer.headers["retry-after"], answer.body]).toEqual([503, "1", "Service Unavailable: the rate limit's store cannot be reached\n"]);
    expect(errors).toEqual([]);
    limit.close();
  });

  it("with onStoreError open lets every request through while the store is lost", async () => {
    const broken = new MemoryStore();
    broken.read = async () => {
      throw new StoreError("lost", "store memory: gone", { storeUrl: "memory:" });
    };
    const limit = rateLimit({ rate: 1, burst: 1, store: { store: broken, name: "api", onStoreError: "open" } });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get(url)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    limit.close();
  });

  it.each([
    [{ rate: -1, burst: 1 }, "Expected `rate` to be a non-negative number or Infinity, got `-1` (number)"],
    [{ rate: 1, burst: 0 }, "Expected `burst` to be a finite number of at least 1, got `0` (number)"],
    [{ rate: 1, burst: 1, policy: "queue" }, 'Expected `maxWaitMs` to be a non-negative number with policy "queue", got `undefined` (undefined)'],
    [{ rate: 1, burst: 1, maxWaitMs: 5 }, 'Expected `maxWaitMs` only with policy "queue", got policy "drop"'],
    [{ rate: 1, burst: 1, policy: "fifo" }, 'Expected `policy` to be "drop" or "queue", got `fifo`'],
    [{ rate: 1, burst: 1, maxKeys: 0 }, "Expected `maxKeys` to be a positive integer, got `0` (number)"],
    [{ rate: 1, burst: 1, trustProxy: ["nope"] }, `"nope" is not an address or a CIDR`],
  ])("rejects bad options, naming the option: %j", (options, message) => {
    expect(() => rateLimit(options as never)).toThrow(message);
  });
});

describe("openStore from tbucket/http", () => {
  it("opens a store by its address for rateLimit to share buckets through", async () => {
    const { openStore } = await import("../../src/http/index.js");
    const store = await openStore("memory:");
    const limit = rateLimit({ rate: 1, burst: 1, store: { store, name: "api" } });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    expect([(await get(url)).status, (await get(url)).status]).toEqual([200, 429]);
    expect((await store.list()).map((bucket) => bucket.key)).toEqual(["api:127.0.0.1"]);
    limit.close();
    await store.close();
  });

  it("refuses an address that is not a store's, saying so", async () => {
    const { openStore } = await import("../../src/http/index.js");
    await expect(openStore("postgres://x")).rejects.toThrow(/postgres:\/\/x/);
  });
});
