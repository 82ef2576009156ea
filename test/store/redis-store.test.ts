import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type BucketConfig, type BucketStore, StoreError, type TakeRequest } from "../../src/store/bucket-store.js";
import { DEFAULT_IDLE_EXPIRY_MS, RedisStore, redactUrl, writeRefusal } from "../../src/store/redis-store.js";
import { EXPIRY_SLACK_DIVISOR } from "../../src/store/redis-script.js";
import { SharedLimiter } from "../../src/store/shared-limiter.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

const T0 = 1_700_000_000_000;

// The server is started here, not skipped: without redis-server this fails naming the package.
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

describe("RedisStore: the server", () => {
  it("keeps each bucket in one hash under tbucket:, expiring once full and idle (with a sixteenth of slack)", async () => {
    await admin.flushdb();
    const store = await RedisStore.open(server.url);
    const slack = Math.floor(DEFAULT_IDLE_EXPIRY_MS / EXPIRY_SLACK_DIVISOR);
    await store.configure("backups", { rate: 1000, burst: 500, kind: "bytes" });
    expect(await admin.keys("*")).toEqual(["tbucket:{backups}"]);
    const fullTtl = await admin.pttl("tbucket:{backups}");
    expect(fullTtl).toBeGreaterThan(DEFAULT_IDLE_EXPIRY_MS + slack - 5000);
    expect(fullTtl).toBeLessThanOrEqual(DEFAULT_IDLE_EXPIRY_MS + slack);
    await store.take("backups", 1500, { overBurst: true });
    // Empty by 1000 tokens: full again in 1.5 s, then idle for the expiry: within the slack set, so it stands.
    const ttl = await admin.pttl("tbucket:{backups}");
    expect(ttl).toBeGreaterThan(DEFAULT_IDLE_EXPIRY_MS + 1500);
    expect(ttl).toBeLessThanOrEqual(DEFAULT_IDLE_EXPIRY_MS + slack);
    await store.close();
  });

  it("moves a busy key's expiry only when it would come too soon: most takes write no PEXPIRE", async () => {
    await admin.flushdb();
    await admin.config("RESETSTAT");
    const store = await RedisStore.open(server.url, { fullKeyMarginMs: 16_000 });
    await store.configure("busy", { rate: 1000, burst: 1000, kind: "count" }, { expireWhenFull: true });
    const started = Date.now();
    for (let i = 0; i < 50; i++) await store.take("busy", 1);
    const info = await admin.info("commandstats");
    const calls = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
    expect(calls("evalsha")).toBe(51);
    // The configure sets it with 1 s of slack (16 s / 16); the takes move it once a second at most.
    expect(calls("pexpire")).toBeLessThanOrEqual(1 + (Date.now() - started) / 1000);
    // Never sooner than the rule: full again within 50 ms, then the margin.
    expect(await admin.pttl("tbucket:{busy}")).toBeGreaterThan(16_000);
    expect(await admin.pttl("tbucket:{busy}")).toBeLessThanOrEqual(17_000);
    await store.take("busy", 1000);
    // Empty: full again in 1 s, then the margin, past the expiry set: so it moves, slack and all.
    expect(await admin.pttl("tbucket:{busy}")).toBeGreaterThan(17_500);
    await store.close();
  });

  it("finds a key kept by a release before hash tags (tbucket:NAME), moves it to tbucket:{NAME} with its expiry, and lists and deletes either", async () => {
    await admin.flushdb();
    const clock = new FakeClock(T0);
    const store = await RedisStore.open(server.url, { clock });
    // As the previous release left them: one hash per key, without a hash tag.
    await admin.hset("tbucket:backups", { rate: "1000", burst: "500", kind: "bytes", tokens: "100", last: "1700000000000" });
    await admin.pexpire("tbucket:backups", 60_000);
    await admin.hset("tbucket:api", { rate: "10", burst: "1", kind: "count", tokens: "1", last: "1700000000000" });
    expect((await store.list()).map((state) => [state.key, state.tokens])).toEqual([
      ["api", 1],
      ["backups", 100],
    ]);
    expect(await admin.keys("*")).toEqual(expect.arrayContaining(["tbucket:{api}", "tbucket:{backups}"]));
    expect(await admin.keys("*")).toHaveLength(2);
    expect(await admin.pttl("tbucket:{backups}")).toBeGreaterThan(55_000);
    expect(await store.take("backups", 100)).toMatchObject({ ok: true, tokens: 0 });
    await admin.hset("tbucket:old", { rate: "10", burst: "1", kind: "count", tokens: "1", last: "1700000000000" });
    expect(await store.delete("old")).toBe(true);
    expect(await admin.exists("tbucket:old")).toBe(0);
    await store.close();
  });

  it("never forgets a paused bucket below full: at rate 0 it would never fill", async () => {
    await admin.flushdb();
    const store = await RedisStore.open(server.url);
    await store.configure("paused", { rate: 1000, burst: 500, kind: "bytes" });
    await store.take("paused", 100);
    await store.configure("paused", { rate: 0, burst: 500, kind: "bytes" });
    expect(await admin.pttl("tbucket:{paused}")).toBe(-1);
    await store.take("paused", 1000, { overBurst: true });
    expect(await admin.pttl("tbucket:{paused}")).toBe(-1);
    const stored = Number(await admin.hget("tbucket:{paused}", "tokens"));
    expect(Number.isFinite(stored) && stored < -500).toBe(true);
    await store.configure("paused", { rate: 1000, burst: 500, kind: "bytes" });
    expect(await admin.pttl("tbucket:{paused}")).toBeGreaterThan(DEFAULT_IDLE_EXPIRY_MS);
    await store.close();
  });

  it("forgets a bucket left full and idle past its expiry", async () => {
    const store = await RedisStore.open(server.url, { idleExpiryMs: 50 });
    await store.configure("short", { rate: 1000, burst: 10, kind: "count" });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await store.read("short")).toBeUndefined();
    await store.close();
  });

  it("forgets a key made per client (expireWhenFull) once it is full again for the margin, and never one a user set for that", async () => {
    await admin.flushdb();
    const store = await RedisStore.open(server.url, { fullKeyMarginMs: 100 });
    await store.configure("p:down:10.0.0.1", { rate: 1000, burst: 100, kind: "bytes" }, { expireWhenFull: true });
    await store.take("p:down:10.0.0.1", 100);
    // Full again in 100 ms, then the margin (and its slack).
    const ttl = await admin.pttl("tbucket:{p:down:10.0.0.1}");
    expect(ttl).toBeGreaterThan(150);
    expect(ttl).toBeLessThanOrEqual(200 + 100 / EXPIRY_SLACK_DIVISOR);
    await store.configure("p:down:10.0.0.2", { rate: 1000, burst: 100, kind: "bytes" });
    await store.configure("p:down:10.0.0.3", { rate: 1000, burst: 100, kind: "bytes" }, { expireWhenFull: true });
    // tbucket key set on a key a proxy made: the long expiry of a key set by hand again.
    await store.configure("p:down:10.0.0.3", { rate: 2000, burst: 100, kind: "bytes" });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await store.read("p:down:10.0.0.1")).toBeUndefined();
    expect(await admin.pttl("tbucket:{p:down:10.0.0.2}")).toBeGreaterThan(DEFAULT_IDLE_EXPIRY_MS - 5000);
    expect(await store.read("p:down:10.0.0.3")).toMatchObject({ rate: 2000 });
    expect(await admin.pttl("tbucket:{p:down:10.0.0.3}")).toBeGreaterThan(DEFAULT_IDLE_EXPIRY_MS - 5000);
    await store.close();
  });

  it("runs on the server's clock: the level refills in real time", async () => {
    const store = await RedisStore.open(server.url);
    const before = Date.now();
    const state = await store.configure("clocked", { rate: 1000, burst: 100, kind: "count" });
    expect(state.updatedAtMs).toBeGreaterThan(before - 1000);
    expect(state.updatedAtMs).toBeLessThan(Date.now() + 1000);
    await store.take("clocked", 100);
    await new Promise((resolve) => setTimeout(resolve, 60));
    const level = (await store.read("clocked"))!.tokens;
    expect(level).toBeGreaterThan(40);
    expect(level).toBeLessThanOrEqual(100);
    await store.close();
  });

  it("loads the script again after the server forgot it (NOSCRIPT)", async () => {
    const store = await RedisStore.open(server.url);
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    await admin.script("FLUSH");
    expect((await store.take("k", 1))?.ok).toBe(true);
    await store.close();
  });

  it("says in one line when Redis cannot be reached at the start", async () => {
    const error = await RedisStore.open("redis://127.0.0.1:1", { connectTimeoutMs: 500 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(
      /^store redis:\/\/127\.0\.0\.1:1: cannot reach Redis \(.*ECONNREFUSED.*\); check the address and that Redis runs there$/,
    );
    expect(error).toMatchObject({ failure: "unreachable", storeUrl: "redis://127.0.0.1:1" });
  });

  // `--store redis://HOST:PORT/16` on a 16-database server ran on database 0: ioredis ignores a refused SELECT.
  it("refuses a database the server does not have, in one line, instead of using database 0", async () => {
    await admin.flushall();
    const error = await RedisStore.open(`${server.url}/16`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toBe(
      `store ${server.url}/16: Redis has no database 16 (ERR DB index is out of range); use one the server has: 0 to its "databases" setting less 1 (0 to 15 by default)`,
    );
    expect(await admin.keys("*")).toEqual([]);
  });

  it("keeps its buckets in the database the path names", async () => {
    await admin.flushall();
    const store = await RedisStore.open(`${server.url}/3`);
    await store.configure("in-three", { rate: 10, burst: 10, kind: "count" });
    await store.close();
    expect(await admin.keys("*")).toEqual([]);
    const three = new Redis(server.url, { db: 3 });
    expect(await three.keys("*")).toEqual(["tbucket:{in-three}"]);
    await three.quit();
  });

  it("hides the password in messages", () => {
    expect(redactUrl("redis://app:s3cret@db:6379/2")).toBe("redis://app:***@db:6379/2");
    expect(redactUrl("rediss://:s3cret@db:6379")).toBe("rediss://:***@db:6379");
    expect(redactUrl("redis://db:6379")).toBe("redis://db:6379");
  });
});

describe("RedisStore: losing the server mid-run", () => {
  it("fails the next operation with a StoreError", async () => {
    const own = await startRedisServer();
    const store = await RedisStore.open(own.url);
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    await own.stop();
    const error = await store.take("k", 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/^store redis:\/\/127\.0\.0\.1:\d+: lost Redis \(/);
    await store.close();
  });
});

describe("RedisStore: losing the server mid-run, and finding it again", () => {
  // The client gave up after about 3 s of retries and never reconnected: every later call failed.
  it("reconnects for as long as it is open: a server back after 5 s answers again", async () => {
    const own = await startRedisServer();
    const store = await RedisStore.open(own.url);
    try {
      await store.configure("k", { rate: 10, burst: 10, kind: "count" });
      await own.stop("SIGKILL");
      await expect(store.take("k", 1)).rejects.toMatchObject({ failure: "lost" });
      await new Promise((resolve) => setTimeout(resolve, 5000));
      await own.start();
      const backMs = performance.now();
      // Restarted empty: the key is gone, and the server answers that.
      let answer: unknown = "no answer";
      while (answer === "no answer" && performance.now() - backMs < 3000) answer = await store.take("k", 1).catch(() => "no answer");
      expect(answer).toBeUndefined();
      expect(performance.now() - backMs).toBeLessThan(1000);
    } finally {
      await store.close();
      await own.stop();
    }
  }, 20_000);
});

describe("RedisStore: a server restarted faster than the client notices", () => {
  // Killed and started again within the client's retries, no call failed: the key was said deleted, and a pipe stopped.
  it("says the server lost, not the key deleted, when a restarted server lacks a key in use; then answers that it has none", async () => {
    const own = await startRedisServer();
    const store = await RedisStore.open(own.url);
    try {
      await store.configure("k", { rate: 10, burst: 10, kind: "count" });
      await own.start();
      await expect(store.take("k", 1)).rejects.toMatchObject({ failure: "restarted", message: `store ${own.url}: lost Redis (it restarted without the key)` });
      expect(await store.take("k", 1)).toBeUndefined();
      expect(await store.read("other")).toBeUndefined();
    } finally {
      await store.close();
      await own.stop();
    }
  });
});

describe("RedisStore: a server that refuses writes is not a lost store", () => {
  it("a replica (READONLY): says so, and to point the address at the primary", async () => {
    const replica = await startRedisServer(["--replicaof", "127.0.0.1", String(server.port)]);
    const store = await RedisStore.open(replica.url);
    try {
      const error = await store.configure("k", { rate: 10, burst: 10, kind: "count" }).catch((e: unknown) => e);
      expect(error).toMatchObject({ failure: "refused" });
      expect((error as Error).message).toBe(
        `store ${replica.url}: Redis is a read-only replica and refused the write (READONLY You can't write against a read only replica); point the address at the primary`,
      );
    } finally {
      await store.close();
      await replica.stop();
    }
  });

  it("out of memory under noeviction (OOM): says so, and what frees it; writes go again once it is freed", async () => {
    const own = await startRedisServer();
    const config = new Redis(own.url);
    const store = await RedisStore.open(own.url);
    try {
      await store.configure("k", { rate: 10, burst: 10, kind: "count" });
      await config.config("SET", "maxmemory-policy", "noeviction");
      await config.config("SET", "maxmemory", "1");
      const error = await store.take("k", 1).catch((e: unknown) => e);
      expect(error).toMatchObject({ failure: "refused" });
      expect((error as Error).message).toMatch(
        new RegExp(
          `^store ${own.url.replace(/\./g, "\\.")}: Redis is out of memory and refused the write \\(OOM command not allowed when used memory > 'maxmemory'.*\\); free memory on it, raise its maxmemory, or choose a maxmemory-policy that evicts$`,
        ),
      );
      await config.config("SET", "maxmemory", "0");
      expect(await store.take("k", 1)).toMatchObject({ ok: true });
    } finally {
      await config.quit();
      await store.close();
      await own.stop();
    }
  });

  it.each([
    ["MOVED 12182 127.0.0.1:7002"],
    ["ASK 12182 127.0.0.1:7002"],
    ["CLUSTERDOWN The cluster is down"],
    ["TRYAGAIN Multiple keys request during rehashing of slot"],
  ])("a Cluster that cannot serve the key (%s) refused it: not a lost store (classified, no cluster started)", (reply) => {
    expect(writeRefusal(new Error(reply))).toBe(`Redis Cluster could not serve the key (${reply}); check that every slot is served (redis-cli --cluster check HOST:PORT)`);
    expect(writeRefusal(new Error("Connection is closed."))).toBeUndefined();
  });
});

describe("RedisStore: a server that asks for a password", () => {
  let locked: RedisServer;
  beforeAll(async () => {
    locked = await startRedisServer(["--requirepass", "s3cret"]);
  });
  afterAll(async () => {
    await locked?.stop();
  });
  const host = () => `127.0.0.1:${locked.port}`;
  const forms = "redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port for an ACL user";

  // These said "cannot reach Redis ... check the address".
  it("says a password is needed when none is given (NOAUTH)", async () => {
    await expect(RedisStore.open(`redis://${host()}`)).rejects.toThrow(
      new StoreError("refused", `store redis://${host()}: Redis asks for a password; give it in the address: ${forms}`, { storeUrl: `redis://${host()}` }),
    );
  });

  it("says the password was refused (WRONGPASS), hiding it", async () => {
    for (const auth of [":wrong", "default:wrong", "bob:wrong"]) {
      const shown = auth.replace(/:.*/, ":***");
      await expect(RedisStore.open(`redis://${auth}@${host()}`)).rejects.toThrow(
        new StoreError(
          "refused",
          `store redis://${shown}@${host()}: Redis refused the password (WRONGPASS invalid username-password pair or user is disabled); check the password in the address: ${forms}`,
          { storeUrl: `redis://${shown}@${host()}` },
        ),
      );
    }
  });

  it("works with the right password", async () => {
    const store = await RedisStore.open(`redis://:s3cret@${host()}/1`);
    expect((await store.configure("k", { rate: 1, burst: 1, kind: "count" })).tokens).toBe(1);
    await store.close();
  });
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

describe("RedisStore: opening a key in one script call", () => {
  it("keeps the settings a key holds in the wanted kind, makes it anew in another kind or when missing, each as read then configure would", async () => {
    await admin.flushdb();
    const clock = new FakeClock(T0);
    const store = await RedisStore.open(server.url, { clock });
    const wanted: BucketConfig = { rate: 100, burst: 10, kind: "count" };
    await store.configure("set", { rate: 5, burst: 2, kind: "count" });
    await store.take("set", 1);
    await store.configure("bytes", { rate: 5, burst: 2, kind: "bytes" });
    const held = await stored("set");
    const before = await scriptCalls();
    expect(await store.open("set", wanted, { expireWhenFull: true })).toEqual(await store.read("set"));
    expect(await scriptCalls()).toBe(before + 2);
    // Read, not written: the level and the mark stand, and the expiry is not moved.
    const [hash, ttl] = await stored("set");
    expect(hash).toEqual(held[0]);
    expect(ttl).toBeLessThanOrEqual(held[1]);
    expect(await store.open("bytes", wanted)).toEqual({ key: "bytes", ...wanted, tokens: 10, updatedAtMs: T0 });
    expect(await store.open("client", wanted, { expireWhenFull: true })).toEqual({ key: "client", ...wanted, tokens: 10, updatedAtMs: T0, expiresWhenFull: true });
    expect(await store.read("client")).toMatchObject({ expiresWhenFull: true });
    await store.close();
  });
});

describe("RedisStore: several takes in one script call", () => {
  it("answers them in order with what one take at a time answers, on a fixed clock, in one call", async () => {
    await admin.flushdb();
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
    await admin.flushdb();
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
    await admin.flushdb();
    const store = await RedisStore.open(server.url);
    expect(await store.takeMany("none", [{ n: 1 }, { n: 2 }])).toBeUndefined();
    await store.close();
  });
});

describe("SharedLimiter on Redis: tryWaits of one key in batches", () => {
  it("sends the tryWaits that wait on a call in one call after it, answered in order", async () => {
    await admin.flushdb();
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
    await admin.flushdb();
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
    await admin.flushdb();
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
