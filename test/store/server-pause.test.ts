import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { openStore, parseStoreLocation } from "../../src/store/open-store.js";
import { ServerPause } from "../../src/store/server-pause.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

// A real server for the Redis case, started here: without redis-server this fails naming the package.
let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedisServer();
}, 60_000);
afterAll(async () => {
  await redis?.stop();
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("ServerPause", () => {
  it.each(["memory", "sqlite", "redis"])("pauses every holder of the key on %s, only ever later, and leaves nothing once over", async (type) => {
    const clock = new FakeClock(1_700_000_000_000);
    const dir = mkdtempSync(join(tmpdir(), "tbucket-pause-"));
    dirs.push(dir);
    const url = type === "memory" ? "memory:" : type === "redis" ? redis.url : `sqlite:${join(dir, "buckets.db")}`;
    const store = await openStore(parseStoreLocation(url), { clock });
    try {
      const one = new ServerPause(store, "api");
      const two = new ServerPause(store, "api");
      expect(await two.remainingMs()).toBe(0);
      await one.pause(1500);
      expect(await two.remainingMs()).toBeCloseTo(1500, 6);
      // A shorter pause does not shorten it; a longer one lengthens it to its own end, not the sum.
      await two.pause(1000);
      expect(await one.remainingMs()).toBeCloseTo(1500, 6);
      await clock.advance(500);
      await two.pause(3000);
      expect(await one.remainingMs()).toBeCloseTo(3000, 6);
      await clock.advance(3000);
      expect(await one.remainingMs()).toBe(0);
      // Another key is not paused.
      expect(await new ServerPause(store, "other").remainingMs()).toBe(0);
      // Full again, the pause's key may be forgotten (made with expireWhenFull).
      expect((await store.read("api/server-pause"))?.expiresWhenFull).toBe(true);
    } finally {
      await store.close();
    }
  });
});
