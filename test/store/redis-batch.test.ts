import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { BucketConfig, BucketStore, TakeRequest } from "../../src/store/bucket-store.js";
import { RedisStore } from "../../src/store/redis-store.js";
import { SharedLimiter } from "../../src/store/shared-limiter.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

const T0 = 1_700_000_000_000;

let server: RedisServer;
let admin: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await admin?.quit();
  await server?.stop();
});
beforeEach(async () => {
  await admin.flushdb();
});

/** How many times Redis ran the script, from INFO commandstats. */
async function scriptCalls(): Promise<number> {
  const info = await admin.info("commandstats");
  return Number(/cmdstat_evalsha:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** A key's hash and time to live, to see that nothing changed. */
async function stored(key: string): Promise<[Record<string, string>, number]> {
  return [await admin.hgetall(`tbucket:{${key}}`), await admin.pttl(`tbucket:{${key}}`)];
}

const config: BucketConfig = { rate: 10, burst: 5, kind: "count" };

// Taken whole, refused (over the burst, past the wait limit), taken into debt, over the burst as a lease.
const takes: TakeRequest[] = [
  { n: 2 },
  { n: 6 },
  { n: 3, options: { maxWaitMs: 0 } },
  { n: 3 },
  { n: 1, options: { maxWaitMs: 50 } },
  { n: 1, options: { maxWaitMs: 500 } },
  { n: 0.5 },
  { n: 12, options: { overBurst: true } },
  { n: 1, options: { maxWaitMs: 1000 } },
];

describe("RedisStore: several takes in one script call", () => {
  it("answers them in order with what one take at a time answers, on a fixed clock, in one call", async () => {
    const clock = new FakeClock(T0);
    const store = await RedisStore.open(server.url, { clock });
    await store.configure("alone", config);
    await store.configure("batched", config);
    const alone = [];
    for (const { n, options } of takes) alone.push(await store.take("alone", n, options));
    const before = await scriptCalls();
    const batched = await store.takeMany("batched", takes);
    expect(await scriptCalls()).toBe(before + 1);
    expect(batched).toEqual(alone);
    expect(batched!.map((result) => result.ok)).toEqual([true, false, true, true, false, true, true, true, false]);
    const [aloneHash] = await stored("alone");
    const [batchedHash] = await stored("batched");
    expect(batchedHash).toEqual(aloneHash);
    await store.close();
  });

  it("changes nothing for takes it refuses: the hash and its expiry stay as they were", async () => {
    const clock = new FakeClock(T0);
    const store = await RedisStore.open(server.url, { clock });
    await store.configure("k", config);
    await store.take("k", 5);
    const [hashBefore, ttlBefore] = await stored("k");
    const results = await store.takeMany("k", [{ n: 6 }, { n: 1, options: { maxWaitMs: 50 } }, { n: 5, options: { maxWaitMs: 0 } }]);
    expect(results!.map((result) => [result.ok, result.tokens])).toEqual([
      [false, 0],
      [false, 0],
      [false, 0],
    ]);
    const [hash, ttl] = await stored("k");
    expect(hash).toEqual(hashBefore);
    // Counting down in real time, not set again.
    expect(ttl).toBeLessThanOrEqual(ttlBefore);
    expect(ttl).toBeGreaterThan(ttlBefore - 1000);
    await store.close();
  });

  it("answers nothing for a key it does not have", async () => {
    const store = await RedisStore.open(server.url);
    expect(await store.takeMany("none", [{ n: 1 }, { n: 2 }])).toBeUndefined();
    await store.close();
  });
});

describe("SharedLimiter on Redis: tryWaits of one key in batches", () => {
  it("sends the tryWaits that wait on a call in one call after it, answered in order", async () => {
    const clock = new FakeClock(T0);
    const store = await RedisStore.open(server.url, { clock });
    await store.configure("k", { rate: 10, burst: 20, kind: "count" });
    const limiter = new SharedLimiter({ store, key: "k", config: { rate: 10, burst: 20, kind: "count" }, clock });
    const before = await scriptCalls();
    const granted = await Promise.all(Array.from({ length: 30 }, () => limiter.tryWait(1, 0)));
    // The first goes alone; the 29 that came meanwhile share the next call. First come, first served: the first 20.
    expect(limiter.roundTrips).toBe(2);
    expect((await scriptCalls()) - before).toBe(2);
    expect(granted).toEqual([...Array(20).fill(true), ...Array(10).fill(false)]);
    expect((await store.read("k"))!.tokens).toBe(0);
    await limiter.close();
    await store.close();
  });

  it("keeps the envelope b + r·T with three processes refusing at once on one key", async () => {
    const clock = new FakeClock(T0);
    const settings: BucketConfig = { rate: 1000, burst: 50, kind: "count" };
    const stores = await Promise.all([0, 1, 2].map(() => RedisStore.open(server.url, { clock })));
    await stores[0]!.configure("busy", settings);
    const limiters = stores.map((store) => new SharedLimiter({ store, key: "busy", config: settings, clock }));
    let admitted = 0;
    let asked = 0;
    for (let ms = 0; ms <= 200; ms++) {
      const answers = await Promise.all(limiters.flatMap((limiter) => Array.from({ length: 20 }, () => limiter.tryWait(1, 0))));
      asked += answers.length;
      admitted += answers.filter(Boolean).length;
      // The envelope at every instant, not only at the end.
      expect(admitted).toBeLessThanOrEqual(settings.burst + (settings.rate * ms) / 1000 + 1e-9);
      await clock.advance(1);
    }
    // The burst, then one token every ms: all of them, none lost to the batching.
    expect(admitted).toBe(50 + 200);
    const trips = limiters.reduce((sum, limiter) => sum + limiter.roundTrips, 0);
    expect(trips).toBeLessThanOrEqual(asked / 5);
    for (const limiter of limiters) await limiter.close();
    for (const store of stores) await store.close();
  });

  it("keeps the envelope b + r·W in every window with three processes queueing at once on one key", async () => {
    const clock = new FakeClock(T0);
    const settings: BucketConfig = { rate: 100, burst: 10, kind: "count" };
    const stores = await Promise.all([0, 1, 2].map(() => RedisStore.open(server.url, { clock })));
    await stores[0]!.configure("queued", settings);
    const watched = stores.map(countingCalls);
    const limiters = watched.map((store) => new SharedLimiter({ store, key: "queued", config: settings, clock }));
    const admittedAtMs: number[] = [];
    const waits: Promise<void>[] = [];
    for (let ms = 0; ms <= 300; ms++) {
      for (const limiter of limiters) {
        for (let i = 0; i < 3; i++) waits.push(limiter.tryWait(1, 100).then((granted) => void (granted && admittedAtMs.push(clock.now() - T0))));
      }
      // Every call answered before the clock moves on: an answer late on a fake clock would look like a late admission.
      await settled(watched);
      await clock.advance(1);
    }
    for (let ms = 0; ms < 200; ms++) {
      await settled(watched);
      await clock.advance(1);
    }
    await Promise.all(waits);
    admittedAtMs.sort((a, b) => a - b);
    for (const windowMs of [0, 10, 100, 250]) {
      let most = 0;
      for (let i = 0, j = 0; i < admittedAtMs.length; i++) {
        while (admittedAtMs[i]! - admittedAtMs[j]! > windowMs) j++;
        most = Math.max(most, i - j + 1);
      }
      expect(most).toBeLessThanOrEqual(settings.burst + (settings.rate * windowMs) / 1000 + 1e-9);
    }
    // Not undershot either: the burst, then one every 10 ms until the last queued (at 300 ms, for up to 100 ms) is let through.
    expect(admittedAtMs.length).toBe(10 + 40);
    expect(admittedAtMs.at(-1)).toBe(400);
    for (const limiter of limiters) await limiter.close();
    for (const store of stores) await store.close();
  });
});

/** A store that counts its calls under way, so a test on a fake clock can wait for every answer. */
function countingCalls(store: RedisStore): BucketStore & { pending: number } {
  const counted = {
    pending: 0,
    url: store.url,
    track<T>(call: Promise<T>): Promise<T> {
      counted.pending++;
      return call.finally(() => counted.pending--);
    },
    take: (key: string, n: number, options?: TakeRequest["options"]) => counted.track(store.take(key, n, options)),
    takeMany: (key: string, takes: readonly TakeRequest[]) => counted.track(store.takeMany(key, takes)),
    cancel: (key: string, reservation: { n: number; timeToActMs: number }) => counted.track(store.cancel(key, reservation)),
    read: (key: string) => counted.track(store.read(key)),
    configure: (key: string, config: BucketConfig) => counted.track(store.configure(key, config)),
    list: () => store.list(),
    delete: (key: string) => store.delete(key),
    close: () => store.close(),
  };
  return counted;
}

async function settled(stores: Array<{ pending: number }>): Promise<void> {
  do await new Promise((resolve) => setImmediate(resolve));
  while (stores.some((store) => store.pending > 0));
}
