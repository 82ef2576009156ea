import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { rateLimit } from "../../src/http/fastify.js";
import { openStore } from "../../src/http/open-store.js";
import { get } from "./http-helpers.js";

const apps: Array<FastifyInstance> = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function app(): FastifyInstance {
  const made = Fastify();
  apps.push(made);
  return made;
}

async function statuses(server: FastifyInstance, url: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const got: number[] = [];
  for (let i = 0; i < n; i++) got.push((await server.inject({ url, headers })).statusCode);
  return got;
}

describe("tbucket/fastify", () => {
  it("limits every route with one limit per client, on a real socket, as the README shows", async () => {
    const fastify = app();
    await fastify.register(rateLimit, { rate: 1, burst: 2 });
    fastify.get("/", async () => "hello\n");
    fastify.get("/other", async () => "other\n");
    await fastify.listen({ port: 0, host: "127.0.0.1" });
    const url = `http://127.0.0.1:${(fastify.server.address() as { port: number }).port}`;
    const first = await get(url);
    expect([first.status, first.body, first.headers["ratelimit"]]).toEqual([200, "hello\n", '"default";r=1;t=1']);
    // The routes share the client's limit.
    expect((await get(`${url}/other`)).status).toBe(200);
    const refused = await get(url);
    expect([refused.status, refused.headers["retry-after"], refused.body]).toEqual([429, "1", "Too Many Requests: retry after 1 s\n"]);
  });

  it("gives a route its own limit in config, or none with false; global false limits only those", async () => {
    const fastify = app();
    await fastify.register(rateLimit, { rate: 1, burst: 1, headers: false });
    fastify.get("/", async () => "ok");
    fastify.get("/login", { config: { rateLimit: { limits: [{ n: 3, windowMs: 60_000 }] } } }, async () => "ok");
    fastify.get("/health", { config: { rateLimit: false } }, async () => "ok");
    await fastify.ready();
    expect(await statuses(fastify, "/", 2)).toEqual([200, 429]);
    expect(await statuses(fastify, "/login", 4)).toEqual([200, 200, 200, 429]);
    expect(await statuses(fastify, "/health", 5)).toEqual([200, 200, 200, 200, 200]);

    const only = app();
    await only.register(rateLimit, { rate: 1, burst: 1, global: false });
    only.get("/", async () => "ok");
    only.get("/limited", { config: { rateLimit: {} } }, async () => "ok");
    await only.ready();
    expect(await statuses(only, "/", 3)).toEqual([200, 200, 200]);
    expect(await statuses(only, "/limited", 2)).toEqual([200, 429]);
  });

  it("keys by Fastify's request.ip, honouring its trustProxy", async () => {
    const fastify = Fastify({ trustProxy: "127.0.0.1" });
    apps.push(fastify);
    await fastify.register(rateLimit, { rate: 1, burst: 1 });
    fastify.get("/", async () => "ok");
    await fastify.ready();
    expect(await statuses(fastify, "/", 2, { "x-forwarded-for": "192.0.2.1" })).toEqual([200, 429]);
    expect(await statuses(fastify, "/", 1, { "x-forwarded-for": "192.0.2.2" })).toEqual([200]);
  });

  it("takes skip, cost, message and handler, and passes a failing function to Fastify's error handler", async () => {
    const fastify = app();
    await fastify.register(rateLimit, {
      rate: 1,
      burst: 4,
      cost: (request) => Number(request.headers["x-cost"] ?? 1),
      skip: (request) => request.url === "/skip",
      message: (request, result) => ({ error: "slow down", url: request.url, retryAfter: result.retryAfterSeconds }),
    });
    fastify.get("/", async () => "ok");
    fastify.get("/skip", async () => "ok");
    fastify.get("/custom", { config: { rateLimit: { handler: (_request, reply, result) => void reply.send(`custom ${result.retryAfterSeconds}`) } } }, async () => "ok");
    await fastify.ready();
    expect(await statuses(fastify, "/", 1, { "x-cost": "4" })).toEqual([200]);
    const refused = await fastify.inject({ url: "/" });
    expect([refused.statusCode, refused.headers["content-type"], refused.json()]).toEqual([429, "application/json; charset=utf-8", { error: "slow down", url: "/", retryAfter: 1 }]);
    expect(await statuses(fastify, "/skip", 3)).toEqual([200, 200, 200]);
    await fastify.inject({ url: "/custom", headers: { "x-cost": "4" } });
    const custom = await fastify.inject({ url: "/custom" });
    expect([custom.statusCode, custom.body]).toEqual([429, "custom 1"]);
    const bad = await fastify.inject({ url: "/", headers: { "x-cost": "lots" } });
    expect(bad.statusCode).toBe(500);
    expect(bad.json().message).toBe("the `cost` function gave `NaN` (number), not a finite number of at least 0");
  });

  it("holds a concurrency slot until the response ends, and queues with a fake clock", async () => {
    const fastify = app();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await fastify.register(rateLimit, { limits: [{ concurrency: 1 }] });
    fastify.get("/slow", async () => {
      await held;
      return "done";
    });
    fastify.get("/", async () => "ok");
    await fastify.ready();
    const slow = fastify.inject({ url: "/slow" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await fastify.inject({ url: "/" })).statusCode).toBe(429);
    release();
    expect((await slow).statusCode).toBe(200);
    expect((await fastify.inject({ url: "/" })).statusCode).toBe(200);

    const clock = new FakeClock();
    const queued = app();
    await queued.register(rateLimit, { rate: 1, burst: 1, policy: "queue", maxWaitMs: 2000, clock });
    queued.get("/", async () => "ok");
    await queued.ready();
    expect((await queued.inject({ url: "/" })).statusCode).toBe(200);
    const waiting = queued.inject({ url: "/" });
    await new Promise((resolve) => setTimeout(resolve, 20));
    await clock.advance(1000);
    expect((await waiting).statusCode).toBe(200);
  });

  it("shares a route's limit through a store under its own name", async () => {
    const store = await openStore("memory:");
    try {
      const servers = [app(), app()];
      for (const server of servers) {
        await server.register(rateLimit, { rate: 1, burst: 1, store: { store, name: "api" } });
        server.get("/", async () => "ok");
        server.get("/search", { config: { rateLimit: { rate: 1, burst: 2 } } }, async () => "ok");
        await server.ready();
      }
      expect([...(await statuses(servers[0]!, "/", 1)), ...(await statuses(servers[1]!, "/", 1))]).toEqual([200, 429]);
      expect([...(await statuses(servers[0]!, "/search", 1)), ...(await statuses(servers[1]!, "/search", 2))]).toEqual([200, 200, 429]);
    } finally {
      await Promise.all(apps.splice(0).map((made) => made.close()));
      await store.close();
    }
  });

  it("refuses misspelled options at register, and a bad route config at the route", async () => {
    const fastify = app();
    await expect(fastify.register(rateLimit, { rate: 1, burst: 1, max: 5 } as never).ready()).rejects.toThrow(
      "Unknown option `max`: `max` and `timeWindow` are @fastify/rate-limit's; write `limits: [{ n: 100, windowMs: 60_000 }]` (at most 100 in any minute) or `rate` and `burst`",
    );
    const other = app();
    await other.register(rateLimit, { rate: 1, burst: 1 });
    expect(() => other.get("/", { config: { rateLimit: { rat: 2 } as never } }, async () => "ok")).toThrow("Unknown option `rat` (did you mean `rate`?)");
  });
});
