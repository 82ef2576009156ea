import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rateLimit } from "../../src/http/index.js";
import { redisStore } from "../../src/http/open-store.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";
import { get, listen } from "./http-helpers.js";

// A real server, started here: without redis-server this fails naming the package.
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe("rateLimit on the user's own ioredis client", () => {
  it("shares each client's limit between two servers through it, and leaves the client open when the store closes", async () => {
    const client = new Redis(server.url, { commandTimeout: 2000, maxRetriesPerRequest: 1 });
    try {
      const store = await redisStore(client);
      expect(store.url).toBe(`redis://127.0.0.1:${server.port}`);
      const one = rateLimit({ limits: [{ rate: 1, burst: 2 }, { n: 3, windowMs: 60_000 }], store: { store, name: "api" } });
      const two = rateLimit({ limits: [{ rate: 1, burst: 2 }, { n: 3, windowMs: 60_000 }], store: { store, name: "api" } });
      const first = await listen(one.wrap((_req, res) => res.end("ok")));
      const second = await listen(two.wrap((_req, res) => res.end("ok")));
      expect([(await get(first.url)).status, (await get(second.url)).status, (await get(first.url)).status]).toEqual([200, 200, 429]);
      expect((await client.keys("*")).length).toBeGreaterThan(0);
      one.close();
      two.close();
      await store.close();
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });

  it("waits for a client still connecting, and says so in one line when it never gets ready", async () => {
    const connecting = new Redis(server.url, { lazyConnect: true });
    try {
      const store = await redisStore(connecting);
      expect(await store.take("k", 1)).toBeUndefined();
    } finally {
      connecting.disconnect();
    }
    const nowhere = new Redis({ port: 1, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    nowhere.on("error", () => {});
    await expect(redisStore(nowhere)).rejects.toThrow(/^store redis:\/\/127\.0\.0\.1:1: the Redis client given is not ready \(.*ECONNREFUSED.*\); check its address, or wait for its "ready" event$/);
    nowhere.disconnect();
    // A client its owner has already quit is said at once, not waited for.
    const ended = new Redis(server.url);
    await ended.quit();
    await expect(redisStore(ended)).rejects.toThrow(/the Redis client given is not ready \(the client's connection (is closed|ended)/);
  });
});
