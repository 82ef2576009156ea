import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type BucketConfig, StoreError } from "../../src/store/bucket-store.js";
import { FailoverLimiter } from "../../src/store/failover-limiter.js";
import { KeyBuckets, keyName } from "../../src/store/key-buckets.js";
import { FlakyStore } from "../helpers/flaky-store.js";

const FLAGS: BucketConfig = { rate: 100, burst: 10, kind: "bytes" };

function setup() {
  const clock = new FakeClock(0);
  const store = new FlakyStore({ clock });
  const told: string[] = [];
  const keys = new KeyBuckets({
    store,
    clock,
    whileLost: { mode: "wait", timeoutMs: Infinity, giveUp: (error) => error },
    onLost: (error) => told.push(`lost: ${error.failure}`),
    onBack: (lostForMs) => told.push(`back after ${lostForMs}`),
  });
  return { clock, store, keys, told };
}

describe("keyName: one naming rule", () => {
  it("puts what the key is for after the user's name, each after a colon", () => {
    expect(keyName("backups")).toBe("backups");
    expect(keyName("api", "up")).toBe("api:up");
    expect(keyName("api", "down", "10.0.0.1")).toBe("api:down:10.0.0.1");
    expect(keyName("api", "::1")).toBe("api:::1");
  });
});

describe("KeyBuckets", () => {
  it("opens a key with the settings the store holds, else makes it with the wanted ones (marked for a client)", async () => {
    const { store, keys } = setup();
    await store.configure("api:set", { rate: 5, burst: 2, kind: "bytes" });
    const set = await keys.open("api:set", { settings: FLAGS });
    const made = await keys.open("api:client", { settings: FLAGS, expireWhenFull: true });
    expect(set).toBeInstanceOf(FailoverLimiter);
    expect({ rate: set.rate, burst: set.burst }).toEqual({ rate: 5, burst: 2 });
    expect(await store.read("api:client")).toMatchObject({ rate: 100, burst: 10, expiresWhenFull: true });
    await keys.close([set, made]);
  });

  it("without a store, every key is a private bucket of its settings", async () => {
    const keys = new KeyBuckets({ store: new StoreError("unreachable", "store redis://h:1: gone", { storeUrl: "redis://h:1" }), whileLost: { mode: "local" } });
    const bucket = await keys.open("api:up", { settings: FLAGS });
    expect(bucket).not.toBeInstanceOf(FailoverLimiter);
    expect({ rate: bucket.rate, burst: bucket.burst, kind: bucket.kind, tokens: bucket.tokens() }).toEqual({ rate: 100, burst: 10, kind: "bytes", tokens: 10 });
    expect(keys.url).toBe("redis://h:1");
    await keys.close([bucket]);
  });

  it("a required key's set-up failing on the store is thrown, not waited out", async () => {
    const { store, keys } = setup();
    store.down = true;
    await expect(keys.open("k", { required: true, setUp: (s) => s.configure("k", FLAGS) })).rejects.toMatchObject({ failure: "lost" });
    await keys.close();
  });

  it("a key opened while the store is lost waits for it, and is made once it answers; each end of the outage is told once", async () => {
    const { clock, store, keys, told } = setup();
    store.down = true;
    const first = await keys.open("k", { settings: FLAGS });
    const second = await keys.open("k2", { settings: FLAGS });
    expect(told).toEqual(["lost: lost"]);
    let done = false;
    const waiting = first.wait(1).then(() => (done = true));
    await clock.advance(1000);
    expect(done).toBe(false);
    store.down = false;
    await clock.advance(1000);
    await waiting;
    // Probes at 100, 300, 700, 1200 ms: the first after the return ends the outage.
    expect(told).toEqual(["lost: lost", "back after 1200"]);
    expect(await store.read("k")).toMatchObject({ rate: 100, burst: 10 });
    await keys.close([first, second]);
  });

  // The proxy's link keys take the command line's settings: a store lost at the start must not leave them to what an earlier run stored.
  it("a key's own set-up, missed while the store was lost, is what opens it once the store answers", async () => {
    const { clock, store, keys } = setup();
    await store.configure("p:up", { rate: 1, burst: 1, kind: "bytes" });
    store.down = true;
    const link = await keys.open("p:up", { settings: FLAGS, setUp: (s) => s.configure("p:up", FLAGS) });
    store.down = false;
    await clock.advance(200);
    const waiting = link.wait(1);
    await clock.advance(1000);
    await waiting;
    expect(await store.read("p:up")).toMatchObject({ rate: 100, burst: 10 });
    expect({ rate: link.rate, burst: link.burst }).toEqual({ rate: 100, burst: 10 });
    await keys.close([link]);
  });

  it("a key holding a set goes on with a private set of its limits while the store is lost (local), and is shared again once it is back", async () => {
    const clock = new FakeClock(0);
    const store = new FlakyStore({ clock });
    const keys = new KeyBuckets({ store, clock, whileLost: { mode: "local" } });
    const limits = [
      { kind: "bucket" as const, unit: "count" as const, rate: 1000, burst: 10 },
      { kind: "window" as const, unit: "count" as const, n: 3, windowMs: 1000 },
    ];
    const set = await keys.openSet("api", { unit: "count", limits, setUp: (sets) => sets.configureSet("api", limits) });
    expect({ rate: set.rate, burst: set.burst }).toEqual({ rate: 3, burst: 3 });
    await set.wait(1);
    store.down = true;
    // The private set holds the window on its own: three now, the fourth a second later.
    await set.wait(1);
    await set.wait(1);
    await set.wait(1);
    expect(await set.tryWait(1, 0)).toBe(false);
    // A bucket of the set's rate would have refilled by half a second; the sliding window has not.
    await clock.advance(500);
    expect(await set.tryWait(1, 0)).toBe(false);
    store.down = false;
    await clock.advance(200);
    await set.wait(1);
    // Shared again: the store's window counts the take made after its return.
    expect((await store.readSet("api"))!.limits[1]!.level).toBeLessThan(3);
    await keys.close([set]);
  });
});
