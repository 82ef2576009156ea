import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { ExceedsBurstError } from "../../src/core/token-bucket.js";
import type { BucketConfig } from "../../src/store/bucket-store.js";
import { FailoverLimiter, type WhileLost } from "../../src/store/failover-limiter.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { openSharedKey } from "../../src/store/shared-key.js";
import { StoreWatch } from "../../src/store/store-watch.js";
import { FlakyStore } from "../helpers/flaky-store.js";

const CONFIG: BucketConfig = { rate: 100, burst: 10, kind: "count" };


async function setup(whileLost: WhileLost, options: { openWhileLost?: boolean } = {}) {
  const clock = new FakeClock(0);
  const store = new FlakyStore({ clock });
  const told: string[] = [];
  const watch = new StoreWatch(store, { clock, onLost: () => told.push(`lost at ${clock.now()}`), onBack: (ms) => told.push(`back at ${clock.now()} after ${ms}`) });
  const open = (settings: BucketConfig) => openSharedKey(watch, "k", settings, { clock });
  let primary;
  if (options.openWhileLost) {
    store.down = true;
    await watch.read("k").catch(() => {});
  } else {
    primary = await open(CONFIG);
  }
  const limiter = new FailoverLimiter({ watch, key: "k", settings: CONFIG, primary, reopen: open, whileLost, clock });
  return { clock, store, watch, limiter, told };
}

/** Resolves with the clock's time when the promise settles, or "pending" if it has not by then. */
async function settledAt(clock: FakeClock, promise: Promise<unknown>, withinMs: number): Promise<number | string> {
  let at: number | string = "pending";
  promise.then(
    () => (at = clock.now()),
    (error: unknown) => (at = `rejected at ${clock.now()}: ${(error as Error).message}`),
  );
  for (let i = 0; i < withinMs && at === "pending"; i++) await clock.advance(1);
  return at;
}

describe("FailoverLimiter", () => {
  it("passes waits and settings through while the store stands", async () => {
    const { store, limiter } = await setup({ mode: "fail" });
    await limiter.wait(4);
    expect(await limiter.tryWait(1, 0)).toBe(true);
    expect({ rate: limiter.rate, burst: limiter.burst, kind: limiter.kind, failedOver: limiter.failedOver }).toEqual({ rate: 100, burst: 10, kind: "count", failedOver: false });
    expect((await store.read("k"))?.tokens).toBeLessThan(6);
  });

  it("fail: rejects at once with the store's failure while it is lost, then takes from the store again within a second of its return", async () => {
    const { clock, store, watch, limiter, told } = await setup({ mode: "fail" });
    await limiter.wait(1);
    store.down = true;
    // The lease taken may cover a wait or two; the next round trip fails.
    const failure = await (async () => {
      for (;;) await limiter.wait(1);
    })().catch((error: unknown) => error);
    expect(failure).toMatchObject({ failure: "lost" });
    await expect(limiter.tryWait(1, 0)).rejects.toBe(failure);
    await clock.advance(5000);
    await expect(limiter.wait(1)).rejects.toBe(failure);
    // Back empty, as a Redis restarted without saving: the key is made again with its settings.
    await store.restartEmpty();
    store.down = false;
    const backAtMs = clock.now();
    await clock.advance(1000);
    expect(watch.lost).toBeUndefined();
    expect(told).toEqual(["lost at 0", "back at 5200 after 5200"]);
    expect(clock.now() - backAtMs).toBeLessThanOrEqual(1000);
    await limiter.wait(1);
    expect(await store.read("k")).toMatchObject({ rate: 100, burst: 10, kind: "count" });
    expect((await store.read("k"))!.tokens).toBeLessThan(10);
  });

  it("wait: a wait under way waits for the store's return and then takes from it", async () => {
    const { clock, store, limiter } = await setup({ mode: "wait", timeoutMs: 10_000, giveUp: () => new Error("gave up") });
    await limiter.wait(10);
    store.down = true;
    const waiting = limiter.wait(5);
    expect(await settledAt(clock, waiting, 3000)).toBe("pending");
    store.down = false;
    const at = await settledAt(clock, waiting, 2000);
    expect(at).toBeGreaterThan(3000);
    expect(at).toBeLessThanOrEqual(4000);
    expect((await store.read("k"))!.tokens).toBeLessThan(10);
  });

  it("wait: gives up at the time limit counted from the loss, with what giveUp makes of the failure and the time gone", async () => {
    const { clock, store, limiter } = await setup({ mode: "wait", timeoutMs: 2000, giveUp: (error, ms) => new Error(`${error.message}; away for ${ms} ms`) });
    await limiter.wait(10);
    store.down = true;
    await clock.advance(500);
    const waiting = limiter.wait(5);
    expect(await settledAt(clock, waiting, 2000)).toMatch(/^rejected at 2\d\d\d: store memory: lost; away for 2000 ms$/);
  });

  it("local: a private bucket of the key's settings, empty for a key in use, then the store again once it is back; a new outage makes a new one", async () => {
    const { clock, store, limiter, told } = await setup({ mode: "local" });
    await limiter.wait(10);
    await clock.advance(1000);
    store.down = true;
    // Empty at first: 10 tokens at 100/s are 100 ms away.
    const lostAtMs = clock.now();
    const waiting = limiter.wait(10);
    expect(await settledAt(clock, waiting, 200)).toBe(lostAtMs + 100);
    expect(limiter.failedOver).toBe(true);
    expect({ rate: limiter.rate, burst: limiter.burst }).toEqual({ rate: 100, burst: 10 });
    store.down = false;
    await clock.advance(1000);
    expect(told).toHaveLength(2);
    expect(limiter.failedOver).toBe(false);
    const before = (await store.read("k"))!.tokens;
    await limiter.wait(5);
    expect((await store.read("k"))!.tokens).toBeLessThan(before);
    store.down = true;
    await clock.advance(2000);
    const again = limiter.wait(10);
    // A new private bucket, empty again (the old one would have been full by now).
    expect(await settledAt(clock, again, 50)).toBe("pending");
    expect(limiter.failedOver).toBe(true);
  });

  it("local: a key first met while the store was lost starts full, and goes to the store once it answers", async () => {
    const { clock, store, limiter, watch } = await setup({ mode: "local" }, { openWhileLost: true });
    expect(await limiter.tryWait(10, 0)).toBe(true);
    expect(await limiter.tryWait(1, 0)).toBe(false);
    store.down = false;
    await clock.advance(100);
    expect(watch.lost).toBeUndefined();
    expect(await limiter.tryWait(10, 0)).toBe(true);
    expect((await store.read("k"))!.tokens).toBeLessThan(1);
  });

  it("open: lets every wait through while the store is lost", async () => {
    const { store, limiter } = await setup({ mode: "open" });
    store.down = true;
    await limiter.wait(10).catch(() => {});
    for (let i = 0; i < 100; i++) expect(await limiter.tryWait(10, 0)).toBe(true);
    await limiter.wait(10);
  });

  it("does not count as an outage what is not one: an abort, a request over the burst, the key deleted, the limiter closed", async () => {
    const { clock, store, watch, limiter } = await setup({ mode: "wait", timeoutMs: Infinity, giveUp: () => new Error("gave up") });
    await limiter.wait(10);
    const controller = new AbortController();
    const aborted = limiter.wait(10, controller.signal);
    controller.abort(new Error("interrupted"));
    await expect(aborted).rejects.toThrow("interrupted");
    await expect(limiter.wait(11)).rejects.toThrow(ExceedsBurstError);
    await store.delete("k");
    await clock.advance(1000);
    await expect(limiter.wait(10)).rejects.toMatchObject({ failure: "deleted" });
    expect(watch.lost).toBeUndefined();
    // Closed while waiting for the store: the wait ends, as a closed SharedLimiter's does.
    store.down = true;
    await watch.read("x").catch(() => {});
    const waiting = limiter.wait(1);
    await clock.advance(10);
    await limiter.close();
    await expect(waiting).rejects.toMatchObject({ failure: "closed", message: 'key "k": the limiter was closed while waiting' });
    watch.stop();
  });

  it("a failure the watch no longer takes for an outage (stopped: its owner is closing) is thrown, not asked again at once", async () => {
    const { store, watch, limiter } = await setup({ mode: "local" });
    watch.stop();
    store.down = true;
    let calls = 0;
    const read = store.read.bind(store);
    store.read = (...args) => (calls++, read(...args));
    const take = store.take.bind(store);
    store.take = (...args) => (calls++, take(...args));
    await expect(limiter.wait(10).then(() => limiter.wait(10))).rejects.toMatchObject({ failure: "lost" });
    expect(watch.lost).toBeUndefined();
    expect(calls).toBeLessThanOrEqual(2);
  });

  it("keyFailure: a key deleted while in use is thrown as the owner says", async () => {
    const clock = new FakeClock(0);
    const store = new MemoryStore({ clock });
    const watch = new StoreWatch(store, { clock });
    const primary = await openSharedKey(watch, "k", CONFIG, { clock });
    const limiter = new FailoverLimiter({ watch, key: "k", settings: CONFIG, primary, reopen: (s) => openSharedKey(watch, "k", s, { clock }), whileLost: { mode: "fail" }, keyFailure: (error) => new Error(`stopped: ${error.message}`), clock });
    await limiter.wait(10);
    await store.delete("k");
    await expect(limiter.wait(10)).rejects.toThrow('stopped: key "k": deleted from memory: while in use');
  });
});
