import { Redis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSet, type LimitReservation } from "../../src/core/limit-set.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import type { SetReservation } from "../../src/store/limit-set-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { limitRedisKeyOf, RedisSetStore } from "../../src/store/redis-set-store.js";
import { redisKeyOf } from "../../src/store/redis-store.js";
import { MIXED_SET, setTrace, type TraceStep } from "../helpers/limit-set-trace.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

const T0 = 1_700_000_000_000;

/** Odd numbers: a fractional rate, an unlimited one, a paused one, fractional window sizes. */
const ODD_SET: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 0.7, burst: 3 },
  { kind: "bucket", unit: "bytes", rate: Infinity, burst: 0 },
  { kind: "window", unit: "bytes", n: 777.25, windowMs: 333.3 },
  { kind: "window", unit: "count", n: 5, windowMs: 1000 / 3 },
  { kind: "concurrency", n: 2 },
  { kind: "bucket", unit: "bytes", rate: 2 * 1024 * 1024, burst: 1000 },
];

const PAUSED_SET: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 0, burst: 3 },
  { kind: "window", unit: "count", n: 2, windowMs: 500 },
];

let server: RedisServer;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await admin.quit();
  await server.stop();
});

/** Plays a trace on LimitSet and on the script, and expects the same answer, bit for bit, at every step; resolves to how many takes were owed for ever. */
async function expectAgreement(sets: RedisSetStore, clock: FakeClock, specs: LimitSpec[], steps: TraceStep[]): Promise<number> {
  let owed = 0;
  const core = new LimitSet(specs, { clock: { now: () => T0, sleep: async () => {} } });
  await sets.configureSet("trace", specs);
  const theirs: LimitReservation[] = [];
  const mine: Array<SetReservation | undefined> = [];
  for (const [index, step] of steps.entries()) {
    const atMs = T0 + step.atMs;
    clock.set(atMs);
    const context = `step ${index}: ${JSON.stringify(step)}`;
    if (step.op === "take") {
      const want = core.reserveAt(atMs, step.costs, step.maxWaitMs);
      const got = (await sets.takeSet("trace", step.costs, { maxWaitMs: step.maxWaitMs, leaseMs: 1e12 }))!;
      expect([got.ok, got.timeToActMs, got.waitMs, got.limitedBy, got.noSlot], context).toEqual([want.ok, want.timeToActMs, want.waitMs, [...want.limitedBy], want.noSlot]);
      if (got.ok) {
        expect([got.reservation!.amounts, got.reservation!.bucketTaken, got.reservation!.bucketLevels], context).toEqual([
          Array.from(want.amounts),
          Array.from(want.bucketTaken),
          Array.from(want.bucketLevels),
        ]);
      }
      if (want.ok && want.timeToActMs === Infinity) owed++;
      theirs.push(want);
      mine.push(got.reservation);
    } else {
      const want = theirs[step.take]!;
      const reservation = mine[step.take];
      if (reservation === undefined || want.cancelled || (step.op === "release" && want.released)) continue;
      if (step.op === "cancel") {
        core.cancelAt(atMs, want);
        await sets.cancelSet("trace", reservation);
      } else if (step.op === "release") {
        core.releaseAt(atMs, want);
        await sets.releaseSet("trace", reservation);
      } else if (step.op === "settle") {
        core.settleAt(atMs, want, step.costs);
        mine[step.take] = await sets.settleSet("trace", reservation, step.costs);
        expect(mine[step.take]!.bucketLevels, context).toEqual(Array.from(want.bucketLevels));
      }
    }
    const levels = (await sets.readSet("trace"))!.limits.map((limit) => limit.level);
    expect(levels, context).toEqual(specs.map((_, i) => core.levelAt(atMs, i)));
  }
  return owed;
}

describe("the limit set script on a real redis-server", () => {
  let clock: FakeClock;
  let client: Redis;
  let sets: RedisSetStore;

  beforeEach(async () => {
    await admin.flushdb();
    clock = new FakeClock(T0);
    client?.disconnect();
    client = new Redis(server.url);
    sets = new RedisSetStore(client, { url: server.url, clock });
  });
  afterAll(() => client?.disconnect());

  for (const seed of [21, 22, 23]) {
    it(`agrees with LimitSet decision by decision, bit for bit, over 600 seeded steps of three kinds, seed ${seed}`, async () => {
      await expectAgreement(sets, clock, MIXED_SET, setTrace(seed, 600));
    });
  }

  it("agrees with LimitSet on odd numbers: a fractional rate, an unlimited and a fast one, fractional windows", async () => {
    await expectAgreement(sets, clock, ODD_SET, setTrace(31, 600));
  });

  it("agrees with LimitSet on a paused bucket: what it holds, then owed for ever, and windows that record nothing at an infinite time", async () => {
    expect(await expectAgreement(sets, clock, PAUSED_SET, setTrace(32, 120))).toBeGreaterThan(0);
  });

  it("agrees with the memory store across changes of the set, a reservation made before one given back to the limits it took from", async () => {
    const memoryClock = new FakeClock(T0);
    const memory = new MemoryStore({ clock: memoryClock });
    const first: LimitSpec[] = [
      { kind: "bucket", unit: "count", rate: 10, burst: 5 },
      { kind: "window", unit: "bytes", n: 1000, windowMs: 1000 },
    ];
    const second: LimitSpec[] = [{ kind: "concurrency", n: 2 }, first[1]!, { kind: "bucket", unit: "count", rate: 20, burst: 4 }];
    const both = async <T>(step: (store: MemoryStore | RedisSetStore) => Promise<T>): Promise<[T, T]> => [await step(memory), await step(sets)];
    const at = (ms: number) => {
      clock.set(T0 + ms);
      memoryClock.set(T0 + ms);
    };
    await both((store) => store.configureSet("k", first));
    const [a, b] = await both((store) => store.takeSet("k", { count: 5, bytes: 600 }));
    const [c, d] = await both((store) => store.takeSet("k", { count: 2, bytes: 300 }));
    expect(b).toEqual(a);
    expect(d).toEqual(c);
    at(50);
    const [changedHere, changedThere] = await both((store) => store.configureSet("k", second));
    expect(changedThere).toEqual(changedHere);
    at(60);
    await memory.settleSet("k", c!.reservation!, { bytes: 100 });
    await sets.settleSet("k", d!.reservation!, { bytes: 100 });
    await memory.cancelSet("k", c!.reservation!);
    await sets.cancelSet("k", d!.reservation!);
    const [here, there] = await both((store) => store.readSet("k"));
    expect(there).toEqual(here);
    at(2000);
    expect(await sets.readSet("k")).toEqual(await memory.readSet("k"));
  });

  it("takes in one script call, once the key's size is known", async () => {
    await sets.configureSet("k", MIXED_SET);
    const calls = async () => {
      const stats = await admin.info("commandstats");
      return [...stats.matchAll(/cmdstat_(evalsha|eval):calls=(\d+)/g)].reduce((sum, match) => sum + Number(match[2]), 0);
    };
    const before = await calls();
    for (let i = 0; i < 10; i++) await sets.takeSet("k", { count: 1, bytes: 10 });
    expect((await calls()) - before).toBe(10);
    // Another process that has not seen the key passes every limit's key the first time, then its size.
    const other = new RedisSetStore(client, { url: server.url, clock });
    const first = await calls();
    await other.takeSet("k", { count: 1 });
    await other.takeSet("k", { count: 1 });
    expect((await calls()) - first).toBe(2);
  });

  it("keeps a window's records and the holders pruned as time slides: never more than n records", async () => {
    await sets.configureSet("k", [
      { kind: "window", unit: "count", n: 4, windowMs: 1000 },
      { kind: "concurrency", n: 100 },
    ]);
    let most = 0;
    for (let i = 0; i < 60; i++) {
      clock.set(T0 + i * 137);
      await sets.takeSet("k", { count: 1 }, { maxWaitMs: 0, leaseMs: 500 });
      most = Math.max(most, await admin.zcard(limitRedisKeyOf("k", 1)));
      expect(await admin.zcard(limitRedisKeyOf("k", 2))).toBeLessThanOrEqual(4);
    }
    expect(most).toBe(4);
  });

  it("reads the server's clock without a fake one", async () => {
    const real = new RedisSetStore(client, { url: server.url });
    await real.configureSet("k", [{ kind: "window", unit: "count", n: 1, windowMs: 60_000 }]);
    const before = Date.now();
    const taken = (await real.takeSet("k", { count: 1 }))!;
    expect(Math.abs(taken.timeToActMs - before)).toBeLessThan(1000);
    expect((await real.takeSet("k", { count: 1 }))!.timeToActMs).toBe(taken.timeToActMs + 60_000);
  });

  it("lets a key expire once it is as new, and never a paused bucket below full", async () => {
    const margin = { idleExpiryMs: 10_000, fullKeyMarginMs: 1000 };
    const expiring = new RedisSetStore(client, { url: server.url, clock, ...margin });
    await expiring.configureSet("k", [
      { kind: "bucket", unit: "count", rate: 10, burst: 10 },
      { kind: "window", unit: "count", n: 5, windowMs: 3000 },
    ]);
    await expiring.takeSet("k", { count: 5 });
    // Full again once the window's record leaves at 3 s, then the idle expiry (less the real time since the call).
    for (const key of [redisKeyOf("k"), limitRedisKeyOf("k", 2)]) {
      const ttl = await admin.pttl(key);
      expect([ttl > 12_900, ttl <= 13_000], key).toEqual([true, true]);
    }
    await expiring.configureSet("client", [{ kind: "bucket", unit: "tokens", rate: 10, burst: 10 }], { expireWhenFull: true });
    await expiring.takeSet("client", { tokens: 10 });
    const clientTtl = await admin.pttl(redisKeyOf("client"));
    expect([clientTtl > 1900, clientTtl <= 2000]).toEqual([true, true]);
    await expiring.configureSet("paused", PAUSED_SET);
    await expiring.takeSet("paused", { count: 1 });
    expect(await admin.pttl(redisKeyOf("paused"))).toBe(-1);
  });
});

describe("the limit set script on Redis Cluster", () => {
  let node: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    // One node holding every slot: it refuses a script whose keys are in two slots (CROSSSLOT), as a cluster of many would.
    node = await startRedisServer(["--cluster-enabled", "yes"]);
    client = new Redis(node.url);
    await client.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    for (let i = 0; i < 100 && !/cluster_state:ok/.test(String(await client.call("CLUSTER", "INFO"))); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  });
  afterAll(async () => {
    client.disconnect();
    await node.stop();
  });

  it("keeps every key of a set in one slot: each operation runs, and the slots agree", async () => {
    const clock = new FakeClock(T0);
    const sets = new RedisSetStore(client, { url: node.url, clock });
    await sets.configureSet("api:10.0.0.1", MIXED_SET);
    const taken = (await sets.takeSet("api:10.0.0.1", { count: 1, bytes: 100 }))!;
    expect(taken.ok).toBe(true);
    await sets.settleSet("api:10.0.0.1", taken.reservation!, { bytes: 50 });
    await sets.cancelSet("api:10.0.0.1", taken.reservation!);
    expect(await sets.renewSet("api:10.0.0.1", taken.reservation!)).toBe(false);
    expect((await sets.listSets()).map((state) => state.key)).toEqual(["api:10.0.0.1"]);
    const slots = await Promise.all(
      [redisKeyOf("api:10.0.0.1"), ...MIXED_SET.map((_, i) => limitRedisKeyOf("api:10.0.0.1", i + 1))].map((key) => client.call("CLUSTER", "KEYSLOT", key)),
    );
    expect(new Set(slots).size).toBe(1);
    expect(await sets.deleteSet("api:10.0.0.1")).toBe(true);
    expect(await sets.readSet("api:10.0.0.1")).toBeUndefined();
  });
});
