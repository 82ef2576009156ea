import { join } from "node:path";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { rateLimit, type RateLimitMiddleware } from "../../src/http/index.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { get, listen, until } from "./http-helpers.js";

const tempDir = tempDirs("rate-limit-store-sets");
const closers: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** An Express app behind `rateLimit({ limits, store })` on its own connection to the SQLite file at `path`; `/hold` answers when the test lets it. */
async function appOn(path: string, limits: Parameters<typeof rateLimit>[0]["limits"]) {
  const store = await SqliteStore.open(path);
  const limit: RateLimitMiddleware = rateLimit({ limits, store: { store, name: "api" }, key: () => "client" });
  closers.push(() => store.close(), () => limit.close());
  const held: Array<() => void> = [];
  const app = express();
  app.use(limit);
  app.get("/hold", (_req, res) => held.push(() => res.end("done\n")));
  app.get("/", (_req, res) => res.end("ok\n"));
  return { url: (await listen(app)).url, held, store };
}

describe("rateLimit({ limits, store }) on Express with a SQLite file", () => {
  it("two middlewares on one file hold a key's buckets and windows together", async () => {
    const path = join(tempDir(), "buckets.db");
    const limits = [{ rate: 100, burst: 10 }, { n: 4, windowMs: 60_000 }];
    const one = await appOn(path, limits);
    const two = await appOn(path, limits);
    const statuses = [];
    for (const url of [one.url, two.url, one.url, two.url]) statuses.push((await get(url)).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    const refused = await get(two.url);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("60");
    expect(refused.headers.ratelimit).toBe(`"limit-2";r=0;t=60`);
    expect(refused.body).toBe("Too Many Requests: retry after 60 s\n");
    expect((await get(one.url)).status).toBe(429);
    expect(await one.store.readSet("api:client")).toMatchObject({ expiresWhenFull: true, limits: [{ kind: "bucket", rate: 100, burst: 10 }, { kind: "window", n: 4, level: 0 }] });
  });

  it("two middlewares on one file hold a concurrency limit together, and a slot comes back when its response ends", async () => {
    const path = join(tempDir(), "buckets.db");
    const one = await appOn(path, [{ rate: 1000, burst: 100 }, { concurrency: 1 }]);
    const two = await appOn(path, [{ rate: 1000, burst: 100 }, { concurrency: 1 }]);
    const first = get(`${one.url}/hold`);
    await until(() => one.held.length === 1, "the first request to reach its handler");
    const refused = await get(two.url);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    one.held[0]!();
    expect((await first).status).toBe(200);
    // The release is sent as the response ends; the next request on the other server finds the slot.
    let status = 429;
    for (let i = 0; i < 50 && status === 429; i++) {
      status = (await get(two.url)).status;
      if (status === 429) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status).toBe(200);
    expect((await one.store.readSet("api:client"))!.limits[1]!.level).toBe(1);
  });
});
