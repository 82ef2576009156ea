import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type BucketConfig, type BucketStore, StoreError } from "../../src/store/bucket-store.js";
import { FailoverLimiter } from "../../src/store/failover-limiter.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { SharedLimiter } from "../../src/store/shared-limiter.js";
import { StoreWatch } from "../../src/store/store-watch.js";

const T0 = 1_700_000_000_000;

async function setup(config: BucketConfig) {
  const clock = new FakeClock(T0);
  const store = new MemoryStore({ clock });
  await store.configure("k", config);
  return { clock, store };
}

/** Moves the fake clock in 1 ms steps; each advance lets the loops react before it returns. */
async function runFor(clock: FakeClock, ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) await clock.advance(1);
}

interface Admission {
  atMs: number;
  n: number;
}

/** A pipe-like loop: waits for `sliceTokens` again and again, recording when each slice went out. */
function startLoop(limiter: SharedLimiter, clock: FakeClock, sliceTokens: number, signal: AbortSignal): Admission[] {
  const log: Admission[] = [];
  void (async () => {
    while (!signal.aborted) {
      try {
        await limiter.wait(sliceTokens, signal);
      } catch {
        return;
      }
      log.push({ atMs: clock.now() - T0, n: sliceTokens });
    }
  })();
  return log;
}

/** The most admitted in any window of `windowMs` (windows starting at each admission). */
function maxInWindow(log: Admission[], windowMs: number): number {
  const sorted = [...log].sort((a, b) => a.atMs - b.atMs);
  let best = 0;
  for (let i = 0, j = 0, sum = 0; i < sorted.length; i++) {
    sum += sorted[i]!.n;
    while (sorted[i]!.atMs - sorted[j]!.atMs > windowMs) sum -= sorted[j++]!.n;
    best = Math.max(best, sum);
  }
  return best;
}

describe("SharedLimiter", () => {
  it("takes tokens in leases: about 50 round trips a second at any rate", async () => {
    for (const rate of [10_000, 1_000_000, 100 * 1024 * 1024]) {
      const { clock, store } = await setup({ rate, burst: rate / 10, kind: "bytes" });
      const limiter = new SharedLimiter({ store, key: "k", config: { rate, burst: rate / 10, kind: "bytes" }, clock });
      const stop = new AbortController();
      // Slices of 10 ms of the rate, as the throttle stream cuts them.
      const log = startLoop(limiter, clock, rate / 100, stop.signal);
      await runFor(clock, 2000);
      stop.abort();
      const admitted = log.reduce((sum, a) => sum + a.n, 0);
      expect(admitted, `rate ${rate}`).toBeGreaterThanOrEqual(rate * 2 * 0.99);
      expect(admitted, `rate ${rate}`).toBeLessThanOrEqual(rate / 10 + rate * 2 + (rate * 20) / 1000);
      expect(limiter.roundTrips, `rate ${rate}`).toBeLessThanOrEqual(2 * 50 + 6);
    }
  });

  it("keeps 4 processes together within burst + rate·T + one lease each, each getting a fair share", async () => {
    const rate = 2 * 1024 * 1024;
    const config: BucketConfig = { rate, burst: rate / 10, kind: "bytes" };
    const { clock, store } = await setup(config);
    const stop = new AbortController();
    const limiters = Array.from({ length: 4 }, () => new SharedLimiter({ store, key: "k", config, clock }));
    const logs = limiters.map((limiter) => startLoop(limiter, clock, Math.floor(rate / 100), stop.signal));
    await runFor(clock, 3000);
    stop.abort();
    const all = logs.flat();
    const total = all.reduce((sum, a) => sum + a.n, 0);
    const lease = (rate * 20) / 1000;
    expect(total).toBeLessThanOrEqual(config.burst + rate * 3 + 4 * lease);
    expect(total).toBeGreaterThanOrEqual((config.burst + rate * 3) * 0.97);
    for (const window of [100, 500, 1000]) {
      expect(maxInWindow(all, window), `window ${window} ms`).toBeLessThanOrEqual(config.burst + (rate * window) / 1000 + 4 * lease);
    }
    for (const log of logs) expect(log.reduce((sum, a) => sum + a.n, 0) / total).toBeGreaterThanOrEqual(0.15);
  });

  it("follows a rate change made in the store within the poll interval, even mid-wait", async () => {
    const config: BucketConfig = { rate: 1, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
    limiter.startPolling();
    await limiter.wait(1);
    let done = false;
    void limiter.wait(1).then(() => (done = true));
    await clock.advance(0);
    // At 1/s the second token comes at 1000 ms; at 100/s from 100 ms on it comes far sooner.
    await runFor(clock, 100);
    await store.configure("k", { rate: 100, burst: 1, kind: "count" });
    await runFor(clock, 450);
    expect(limiter.rate).toBe(100);
    expect(done).toBe(true);
    limiter.close();
  });

  describe("a key paused at rate 0", () => {
    it("stops a wait under way, and resumes it when the rate is raised, with the debt left repaid at the new rate", async () => {
      const config: BucketConfig = { rate: 1, burst: 1, kind: "count" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
      limiter.startPolling();
      await limiter.wait(1);
      let doneAtMs: number | undefined;
      void limiter.wait(1).then(() => (doneAtMs = clock.now() - T0));
      await clock.advance(0);
      await runFor(clock, 50);
      await store.configure("k", { rate: 0, burst: 1, kind: "count" });
      await runFor(clock, 5000);
      expect(limiter.rate).toBe(0);
      expect(doneAtMs).toBeUndefined();
      // Half a token was still owed at 1/s: 500 ms once the change is seen (within a poll).
      await store.configure("k", { rate: 1, burst: 1, kind: "count" });
      await runFor(clock, 1200);
      expect(doneAtMs).toBeGreaterThanOrEqual(5050 + 500);
      expect(doneAtMs).toBeLessThanOrEqual(5050 + 500 + 500 + 50);
      await limiter.close();
    });

    it("gives what the bucket holds, then waits until the rate is raised", async () => {
      const config: BucketConfig = { rate: 0, burst: 2, kind: "count" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
      limiter.startPolling();
      const controller = new AbortController();
      const log = startLoop(limiter, clock, 1, controller.signal);
      await runFor(clock, 3000);
      expect(log.length).toBe(2);
      expect(log.every((a) => a.atMs <= 1)).toBe(true);
      expect((await store.read("k"))?.tokens).toBe(-1);
      await store.configure("k", { rate: 10, burst: 2, kind: "count" });
      await runFor(clock, 2000);
      // From the change (3000 ms, seen within 500 ms): one owed token (100 ms), then 10 a second.
      const resumed = log.slice(2).map((a) => a.atMs);
      expect(resumed[0]).toBeGreaterThanOrEqual(3100);
      expect(resumed[0]).toBeLessThanOrEqual(3600 + 50);
      expect(resumed.length).toBeGreaterThanOrEqual(14);
      expect(resumed.length).toBeLessThanOrEqual(20);
      controller.abort();
      await limiter.close();
    });

    it("gives the lease back to the store when a paused wait is aborted", async () => {
      const config: BucketConfig = { rate: 0, burst: 1, kind: "count" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
      await limiter.wait(1);
      const controller = new AbortController();
      const waiting = limiter.wait(1, controller.signal).catch((error: unknown) => error);
      await runFor(clock, 1000);
      expect((await store.read("k"))?.tokens).toBe(-1);
      controller.abort();
      expect(await waiting).toBe(controller.signal.reason);
      await clock.advance(0);
      expect((await store.read("k"))?.tokens).toBe(0);
      await limiter.close();
    });
  });

  it("picks up a new rate on the next take, and a new burst with it", async () => {
    const config: BucketConfig = { rate: 1000, burst: 100, kind: "bytes" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    await limiter.wait(50);
    await store.configure("k", { rate: 4000, burst: 400, kind: "bytes" });
    await limiter.wait(50);
    expect([limiter.rate, limiter.burst]).toEqual([4000, 400]);
  });

  it("tryWait refuses a wait past the limit, taking nothing", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    expect(await limiter.tryWait(1, 0)).toBe(true);
    expect(await limiter.tryWait(1, 50)).toBe(false);
    expect((await store.read("k"))!.tokens).toBe(0);
    const pending = limiter.tryWait(1, 150);
    await runFor(clock, 100);
    expect(await pending).toBe(true);
  });

  it("tryWait counts the time spent behind other waits against the limit, as a private bucket's queue does", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    expect(await limiter.tryWait(1, 0)).toBe(true);
    const settled: Array<[number, boolean]> = [];
    const waits = Array.from({ length: 5 }, (_, i) => limiter.tryWait(1, 250).then((granted) => void settled.push([i, granted])));
    await runFor(clock, 300);
    await Promise.all(waits);
    // Turns at 100 and 200 ms; the third would come at 300 ms, past the 250 ms limit.
    expect(settled.sort((a, b) => a[0] - b[0])).toEqual([
      [0, true],
      [1, true],
      [2, false],
      [3, false],
      [4, false],
    ]);
    // The refused took nothing: full again by now.
    expect((await store.read("k"))!.tokens).toBeCloseTo(1, 9);
  });

  it("a wait given up before its turn leaves the line at once, asking the store nothing", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    await limiter.wait(1);
    const first = limiter.tryWait(1, 5000);
    const abort = new AbortController();
    const second = limiter.tryWait(1, 5000, abort.signal);
    await clock.advance(0);
    const trips = limiter.roundTrips;
    abort.abort();
    await expect(second).rejects.toThrow();
    expect(clock.now() - T0).toBe(0);
    await runFor(clock, 100);
    expect(await first).toBe(true);
    expect(limiter.roundTrips).toBe(trips);
    expect((await store.read("k"))!.tokens).toBeCloseTo(0, 9);
  });

  it("refuses more than the burst, as TokenBucket does", async () => {
    const config: BucketConfig = { rate: 10, burst: 5, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    await expect(limiter.wait(6)).rejects.toThrow("Requested 6 tokens, more than the burst of 5");
  });

  it("rejects a wait under way with the StoreError when a poll fails, and every wait after it", async () => {
    const config: BucketConfig = { rate: 1, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const broken = failingAfter(store, 2);
    const limiter = new SharedLimiter({ store: broken, key: "k", config, clock, pollMs: 500 });
    await limiter.wait(1);
    // Its token is 1 s away: the wait sleeps in steps of pollMs and reads the key between them, which fails.
    const waiting = limiter.wait(1).catch((error: unknown) => error);
    await runFor(clock, 600);
    const error = await waiting;
    expect(error).toBeInstanceOf(StoreError);
    await expect(limiter.wait(1)).rejects.toBe(error);
  });

  it("rejects with the StoreError when the store fails, and never takes from it again", async () => {
    const config: BucketConfig = { rate: 1000, burst: 100, kind: "bytes" };
    const { clock, store } = await setup(config);
    const broken = failingAfter(store, 1);
    const limiter = new SharedLimiter({ store: broken, key: "k", config, clock });
    await limiter.wait(20);
    await expect(limiter.wait(100)).rejects.toThrow(new StoreError("lost", "store memory: lost", { storeUrl: "memory:" }));
  });

  it("hands over to a private bucket once when asked, with the key's settings", async () => {
    const config: BucketConfig = { rate: 1000, burst: 100, kind: "bytes" };
    const { clock, store } = await setup(config);
    const calls: string[] = [];
    const watch = new StoreWatch(failingAfter(store, 1), { clock, onLost: (error) => calls.push(error.message) });
    const shared = new SharedLimiter({ store: watch, key: "k", config, clock });
    const limiter = new FailoverLimiter({ watch, key: "k", settings: config, primary: shared, reopen: () => Promise.reject(new Error("gone")), whileLost: { mode: "local" }, clock });
    await limiter.wait(20);
    const pending = limiter.wait(100);
    await runFor(clock, 110);
    await pending;
    const again = limiter.wait(1);
    await runFor(clock, 5);
    await again;
    expect(calls).toEqual(["store memory: lost"]);
    expect(limiter.failedOver).toBe(true);
    expect({ rate: limiter.rate, burst: limiter.burst }).toEqual({ rate: 1000, burst: 100 });
    watch.stop();
  });

  it("hands over once when a poll and a take fail together (real timers)", async () => {
    const config: BucketConfig = { rate: 1000, burst: 100, kind: "bytes" };
    const lost = () => new Promise<never>((_, reject) => setTimeout(() => reject(new StoreError("lost", "store memory: lost", { storeUrl: "memory:" })), 20));
    const store: BucketStore = { ...failingAfter(new MemoryStore(), 0), take: lost, read: lost };
    let calls = 0;
    const watch = new StoreWatch(store, { onLost: () => calls++ });
    const shared = new SharedLimiter({ store: watch, key: "k", config, pollMs: 1 });
    const limiter = new FailoverLimiter({ watch, key: "k", settings: config, primary: shared, reopen: () => Promise.reject(new Error("gone")), whileLost: { mode: "local" } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    shared.startPolling();
    await limiter.wait(10);
    await new Promise((resolve) => setTimeout(resolve, 50));
    shared.close();
    watch.stop();
    expect(calls).toBe(1);
    expect(limiter.failedOver).toBe(true);
  });

  describe("gives back a lease that was never used (x/time/rate's Cancel)", () => {
    // Ctrl-C during `tbucket run --key k --rate 1/100s` left the key at -0.98: the next run waited for a launch nobody made.
    it("when the wait is aborted: the store's level is as if it had never been asked", async () => {
      const config: BucketConfig = { rate: 0.01, burst: 1, kind: "count" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock });
      await limiter.wait(1);
      const abort = new AbortController();
      const waiting = limiter.wait(1, abort.signal);
      await clock.advance(0);
      expect((await store.read("k"))?.tokens).toBe(-1);
      await runFor(clock, 2000);
      abort.abort();
      await expect(waiting).rejects.toThrow();
      expect((await store.read("k"))?.tokens).toBeCloseTo(0.02, 9);
      // The limiter goes on as before: the next wait reserves afresh.
      const again = limiter.wait(1);
      await clock.advance(0);
      expect((await store.read("k"))?.tokens).toBeCloseTo(-0.98, 9);
      // Held from here: the wait ends in a rejection while the clock runs.
      const closedWhileWaiting = expect(again).rejects.toThrow('key "k": the limiter was closed while waiting');
      await limiter.close();
      expect((await store.read("k"))?.tokens).toBeCloseTo(0.02, 9);
      await runFor(clock, 600);
      await closedWhileWaiting;
    });

    it("when tryWait is aborted", async () => {
      const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock });
      await limiter.wait(1);
      const abort = new AbortController();
      const waiting = limiter.tryWait(1, 5000, abort.signal);
      await clock.advance(0);
      expect((await store.read("k"))?.tokens).toBe(-1);
      abort.abort();
      await expect(waiting).rejects.toThrow();
      expect((await store.read("k"))?.tokens).toBe(0);
    });

    it("when the limiter closes while a wait sleeps; later reservations by others keep theirs", async () => {
      const config: BucketConfig = { rate: 100, burst: 10, kind: "bytes" };
      const { clock, store } = await setup(config);
      const mine = new SharedLimiter({ store, key: "k", config, clock, leaseMs: 20 });
      await store.take("k", 10);
      const waiting = mine.wait(5);
      await clock.advance(0);
      // Another process reserves after my lease of 5: its 3 stay taken.
      expect((await store.take("k", 3))?.waitMs).toBe(80);
      const closedWhileWaiting = expect(waiting).rejects.toThrow("the limiter was closed while waiting");
      await mine.close();
      // -8 before: mine is due at 50 ms, theirs at 80 ms, so 5 - 3 come back.
      expect((await store.read("k"))?.tokens).toBeCloseTo(-6, 9);
      await runFor(clock, 600);
      await closedWhileWaiting;
    });

    it("not once the lease is due: tokens waited for count as used", async () => {
      const config: BucketConfig = { rate: 100, burst: 10, kind: "bytes" };
      const { clock, store } = await setup(config);
      const limiter = new SharedLimiter({ store, key: "k", config, clock, leaseMs: 20 });
      await store.take("k", 10);
      const waiting = limiter.wait(2);
      await runFor(clock, 25);
      await waiting;
      await limiter.close();
      expect((await store.read("k"))?.tokens).toBeCloseTo(0.5, 9);
    });
  });

  it("says when the key was deleted while in use", async () => {
    const config: BucketConfig = { rate: 1000, burst: 100, kind: "bytes" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    await store.delete("k");
    const error = await limiter.wait(50).catch((e: unknown) => e);
    // The library names no command: the CLI adds how to set the key again.
    expect(error).toMatchObject({ message: 'key "k": deleted from memory: while in use', failure: "deleted", key: "k", storeUrl: "memory:" });
  });
});

/** A store whose takes fail after the first `goodTakes`. */
function failingAfter(store: BucketStore, goodTakes: number): BucketStore {
  let takes = 0;
  return {
    url: "memory:",
    take: (key, n, options) => (takes++ < goodTakes ? store.take(key, n, options) : Promise.reject(new StoreError("lost", "store memory: lost", { storeUrl: "memory:" }))),
    read: () => Promise.reject(new StoreError("lost", "store memory: lost", { storeUrl: "memory:" })),
    cancel: () => Promise.reject(new StoreError("lost", "store memory: lost", { storeUrl: "memory:" })),
    configure: (key, config) => store.configure(key, config),
    list: () => store.list(),
    delete: (key) => store.delete(key),
    close: () => store.close(),
  };
}

describe("SharedLimiter: tryWaits in batches", () => {
  it("a batched take given up while it waits gives its turn back whole: the last behind it takes that turn", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    const abort = new AbortController();
    const settled: Array<[string, number]> = [];
    const note = (name: string) => () => void settled.push([name, clock.now() - T0]);
    // The first goes alone and is let through; the other two share the next call: turns at 100 and 200 ms.
    const first = limiter.tryWait(1, 1000).then(note("first"));
    const second = limiter.tryWait(1, 1000, abort.signal).catch(note("second given up"));
    const third = limiter.tryWait(1, 1000).then(note("third"));
    await clock.advance(0);
    expect(limiter.roundTrips).toBe(2);
    expect((await store.read("k"))!.tokens).toBe(-2);
    abort.abort();
    await second;
    // x/time/rate's Cancel would give back nothing (the third counts on the tokens): the last turn is given back instead.
    expect((await store.read("k"))!.tokens).toBe(-1);
    await runFor(clock, 200);
    await Promise.all([first, third]);
    expect(settled).toEqual([
      ["first", 0],
      ["second given up", 0],
      ["third", 100],
    ]);
  });

  it("a batched take given up in the middle of the line: every one behind it moves up a turn (first come, first served)", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    const abort = new AbortController();
    const settled: Array<[string, number]> = [];
    const note = (name: string) => () => void settled.push([name, clock.now() - T0]);
    // The first goes alone; the other three share the next call: turns at 100, 200 and 300 ms.
    const first = limiter.tryWait(1, 1000).then(note("first"));
    const second = limiter.tryWait(1, 1000, abort.signal).catch(note("second given up"));
    const third = limiter.tryWait(1, 1000).then(note("third"));
    const fourth = limiter.tryWait(1, 1000).then(note("fourth"));
    await clock.advance(0);
    expect((await store.read("k"))!.tokens).toBe(-3);
    abort.abort();
    await second;
    expect((await store.read("k"))!.tokens).toBe(-2);
    await runFor(clock, 300);
    await Promise.all([first, third, fourth]);
    // Before, the last in line took the freed turn and overtook the third.
    expect(settled).toEqual([
      ["first", 0],
      ["second given up", 0],
      ["third", 100],
      ["fourth", 200],
    ]);
  });

  it("gives back the turns still waiting when it closes, the latest first", async () => {
    const config: BucketConfig = { rate: 10, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock });
    const waits = [0, 1, 2].map(() => limiter.tryWait(1, 1000).catch((error: Error) => error.message));
    await clock.advance(0);
    expect((await store.read("k"))!.tokens).toBe(-2);
    await limiter.close();
    expect((await store.read("k"))!.tokens).toBe(0);
    expect(await Promise.all(waits)).toEqual([true, 'key "k": the limiter was closed while waiting', 'key "k": the limiter was closed while waiting']);
  });

  it("answers as one at a time would: the same grants and the same level", async () => {
    const config: BucketConfig = { rate: 10, burst: 3, kind: "count" };
    const asks = [1, 2, 1, 1, 3, 0.5];
    const oneAtATime = await setup(config);
    const alone = new SharedLimiter({ store: oneAtATime.store, key: "k", config, clock: oneAtATime.clock });
    const expected = [];
    for (const n of asks) expected.push(await alone.tryWait(n, 0));
    const batched = await setup(config);
    const limiter = new SharedLimiter({ store: batched.store, key: "k", config, clock: batched.clock });
    expect(await Promise.all(asks.map((n) => limiter.tryWait(n, 0)))).toEqual(expected);
    expect(limiter.roundTrips).toBe(2);
    expect((await batched.store.read("k"))!.tokens).toBe((await oneAtATime.store.read("k"))!.tokens);
  });

  it("a batched take waiting its turn follows a live rate change, read between steps of pollMs", async () => {
    const config: BucketConfig = { rate: 1, burst: 1, kind: "count" };
    const { clock, store } = await setup(config);
    const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
    const settled: Array<[string, number]> = [];
    const note = (name: string) => () => void settled.push([name, clock.now() - T0]);
    const waits = [limiter.tryWait(1, 5000).then(note("a")), limiter.tryWait(1, 5000).then(note("b")), limiter.tryWait(1, 5000).then(note("c"))];
    // b and c share the call after a's: turns at 1 s and 2 s at 1/s.
    await new Promise((resolve) => setImmediate(resolve));
    expect((await store.read("k"))!.tokens).toBe(-2);
    // Another process: `tbucket key set k --rate 2/s`.
    await store.configure("k", { rate: 2, burst: 1, kind: "count" });
    await runFor(clock, 1500);
    await Promise.all(waits);
    // Read at 500 ms: what was left of each wait at 1/s is repaid at 2/s.
    expect(settled).toEqual([
      ["a", 0],
      ["b", 750],
      ["c", 1250],
    ]);
  });
});


describe("SharedLimiter.emptyFor: the server's pause keeps a one-bucket key from filling", () => {
  it("takes what the bucket holds and the pause's worth, for every process on the key; overlapping pauses hold until the latest", async () => {
    const config: BucketConfig = { rate: 10, burst: 10, kind: "count" };
    const { clock, store } = await setup(config);
    const one = new SharedLimiter({ store, key: "k", config, clock });
    // Full (10), then a second's worth owed: -10, empty again when the pause ends.
    expect(await one.emptyFor(1000)).toBe(true);
    expect((await store.read("k"))!.tokens).toBeCloseTo(-10, 6);
    // Another process's launch waits the pause out, and then one token's time.
    const other = new SharedLimiter({ store, key: "k", config, clock });
    const startedMs = clock.now();
    const waited = other.wait(1);
    await runFor(clock, 1200);
    await waited;
    expect(clock.now() - startedMs).toBeGreaterThanOrEqual(1100);
    // A pause already covered by what the key owes adds nothing.
    await one.emptyFor(1000);
    await one.emptyFor(500);
    expect((await store.read("k"))!.tokens).toBeCloseTo(-10, 6);
    // A key at rate 0 (paused by its owner) or without a limit is left alone.
    await store.configure("k", { ...config, rate: 0 });
    const paused = new SharedLimiter({ store, key: "k", config: { ...config, rate: 0 }, clock });
    expect(await paused.emptyFor(1000)).toBe(false);
    await one.close();
    await other.close();
    await paused.close();
  });
});

describe("SharedLimiter.capLevel: the server's remaining count lowers a one-bucket key", () => {
  it("takes what the bucket holds above the count, for every process; never raises; no round trip at or above the burst", async () => {
    const config: BucketConfig = { rate: 10, burst: 10, kind: "count" };
    const { clock, store } = await setup(config);
    const one = new SharedLimiter({ store, key: "k", config, clock });
    expect(await one.capLevel(2)).toBe(true);
    expect((await store.read("k"))!.tokens).toBeCloseTo(2, 6);
    expect(await one.capLevel(5)).toBe(false);
    expect(await one.capLevel(10)).toBe(false);
    expect((await store.read("k"))!.tokens).toBeCloseTo(2, 6);
    const other = new SharedLimiter({ store, key: "k", config, clock });
    expect(await other.tryWait(3, 0)).toBe(false);
    expect(await other.tryWait(2, 0)).toBe(true);
    await one.close();
    await other.close();
  });
});
