import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSetLimiter } from "../../src/core/limit-set-limiter.js";
import type { Limiter } from "../../src/core/limiter.js";
import { ExceedsBurstError, TokenBucket } from "../../src/core/token-bucket.js";
import type { BucketConfig, BucketStore } from "../../src/store/bucket-store.js";
import { FailoverLimiter } from "../../src/store/failover-limiter.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { openSharedKey } from "../../src/store/shared-key.js";
import { SharedLimiter } from "../../src/store/shared-limiter.js";
import { StoreWatch } from "../../src/store/store-watch.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { FlakyStore } from "../helpers/flaky-store.js";
import { tempDirs } from "../helpers/temp-dir.js";

/**
 * One suite for every Limiter: what the stream and the runner rely on holds
 * alike for a private bucket, a shared bucket (memory and SQLite stores), a
 * failover limiter before its store fails and after it came back, and a
 * private set of limits (alone, and among limits that never bind).
 */

const T0 = 1_700_000_000_000;
const START: BucketConfig = { rate: 10, burst: 5, kind: "count" };
const tempDir = tempDirs("limiter-contract");

interface Fixture {
  limiter: Limiter;
  clock: FakeClock;
  /** Changes the settings the way this limiter's owner does (setRate/setBurst, or the store as `tbucket key set`). */
  configure(settings: { rate: number; burst: number }): Promise<void>;
  close(): Promise<void>;
}

async function sharedOn(store: BucketStore, clock: FakeClock): Promise<{ shared: SharedLimiter; fixture: Omit<Fixture, "limiter"> }> {
  await store.configure("k", START);
  const shared = new SharedLimiter({ store, key: "k", config: START, clock });
  return {
    shared,
    fixture: {
      clock,
      configure: async (settings) => void (await store.configure("k", { ...START, ...settings })),
      close: async () => {
        await shared.close();
        await store.close();
      },
    },
  };
}


const FIXTURES: Record<string, () => Promise<Fixture>> = {
  TokenBucket: async () => {
    const clock = new FakeClock(T0);
    const bucket = new TokenBucket({ rate: START.rate, burst: START.burst, clock });
    return {
      limiter: bucket,
      clock,
      configure: async ({ rate, burst }) => {
        bucket.setRate(rate);
        bucket.setBurst(burst);
      },
      close: async () => {},
    };
  },
  "SharedLimiter on a memory store": async () => {
    const clock = new FakeClock(T0);
    const { shared, fixture } = await sharedOn(new MemoryStore({ clock }), clock);
    return { limiter: shared, ...fixture };
  },
  "SharedLimiter on a SQLite file": async () => {
    const clock = new FakeClock(T0);
    const store = await SqliteStore.open(join(tempDir(), "buckets.db"), { clock });
    const { shared, fixture } = await sharedOn(store, clock);
    return { limiter: shared, ...fixture };
  },
  "FailoverLimiter while its store stands": async () => {
    const clock = new FakeClock(T0);
    const store = new StoreWatch(new MemoryStore({ clock }), { clock });
    const { shared, fixture } = await sharedOn(store, clock);
    const limiter = new FailoverLimiter({ watch: store, key: "k", settings: START, primary: shared, reopen: () => Promise.reject(new Error("not reopened")), whileLost: { mode: "fail" }, clock });
    return { limiter, ...fixture };
  },
  "FailoverLimiter made while its store was lost, after it came back": async () => {
    const clock = new FakeClock(T0);
    const broken = new FlakyStore({ clock });
    const store = new StoreWatch(broken, { clock });
    const { fixture } = await sharedOn(store, clock);
    broken.down = true;
    await store.read("k").catch(() => {});
    const limiter = new FailoverLimiter({
      watch: store,
      key: "k",
      settings: START,
      reopen: (settings) => openSharedKey(store, "k", settings, { clock }),
      whileLost: { mode: "wait", timeoutMs: Infinity, giveUp: (error) => error },
      clock,
    });
    broken.down = false;
    // A probe finds the store back; the first wait opens the key on it.
    await clock.advance(100);
    if (store.lost) throw new Error("the store did not come back");
    return { limiter, ...fixture, close: async () => (await limiter.close(), await fixture.close()) };
  },
  "LimitSetLimiter of one bucket": async () => limitSetFixture([]),
  "LimitSetLimiter of a bucket, a window and a concurrency limit": async () =>
    limitSetFixture([
      { kind: "window", unit: "count", n: 1000, windowMs: 1000 },
      { kind: "concurrency", n: 2 },
    ]),
};

/** A private set: START's bucket, alone or among limits roomy enough never to bind in these tests. */
function limitSetFixture(extra: ConstructorParameters<typeof LimitSetLimiter>[0]): Fixture {
  const clock = new FakeClock(T0);
  const limiter = new LimitSetLimiter([{ kind: "bucket", unit: "count", rate: START.rate, burst: START.burst }, ...extra], { unit: "count", clock });
  return {
    limiter,
    clock,
    configure: () => Promise.reject(new Error("a LimitSetLimiter's limits are fixed once made")),
    close: async () => {},
  };
}

/**
 * Limiters whose settings cannot change while they run: a LimitSetLimiter
 * has no setRate or setBurst (a private set lives for one command, whose
 * flags fixed it; a shared key's set changes in the store, which the
 * SharedLimiter fixtures cover). The live-reconfigure tests skip them.
 */
const FIXED_SETTINGS = new Set(["LimitSetLimiter of one bucket", "LimitSetLimiter of a bucket, a window and a concurrency limit"]);

/** Whether a promise has settled, without waiting for it. */
function track<T>(promise: Promise<T>): { readonly done: boolean; readonly promise: Promise<T> } {
  const state = { done: false, promise };
  promise.then(
    () => (state.done = true),
    () => (state.done = true),
  );
  return state;
}

for (const [name, make] of Object.entries(FIXTURES)) {
  describe(`Limiter contract: ${name}`, () => {
    let fixture: Fixture | undefined;
    const setup = async () => (fixture = await make());
    afterEach(async () => {
      await fixture?.close();
      fixture = undefined;
    });

    it("starts full: the burst goes at once, then tokens come at the rate", async () => {
      const { limiter, clock } = await setup();
      const t0 = clock.now();
      expect(limiter.rate).toBe(10);
      expect(limiter.burst).toBe(5);
      await limiter.wait(5);
      expect(clock.now()).toBe(t0);
      const waiting = track(limiter.wait(2));
      await clock.advance(199);
      expect(waiting.done).toBe(false);
      await clock.advance(1);
      expect(waiting.done).toBe(true);
      await waiting.promise;
    });

    it("tokens(): the burst at first, empty once a wait drained it, never above the burst", async () => {
      const { limiter, clock } = await setup();
      const t0 = clock.now();
      expect(limiter.tokens()).toBe(5);
      await limiter.wait(3);
      expect(limiter.tokens()).toBeLessThanOrEqual(2);
      await limiter.wait(2);
      expect(limiter.tokens()).toBeCloseTo(0, 9);
      await clock.advance(10_000);
      await limiter.wait(1);
      expect(limiter.tokens()).toBeLessThanOrEqual(5);
    });

    it("tryWait grants what is there at once, and refuses at once, taking nothing, a wait beyond maxWaitMs", async () => {
      const { limiter, clock } = await setup();
      const t0 = clock.now();
      expect(await limiter.tryWait(5, 0)).toBe(true);
      expect(await limiter.tryWait(2, 199)).toBe(false);
      expect(clock.now()).toBe(t0);
      // Nothing was taken: 2 tokens are still 200 ms away, not 400.
      const granted = track(limiter.tryWait(2, 200));
      await clock.advance(199);
      expect(granted.done).toBe(false);
      await clock.advance(1);
      expect(await granted.promise).toBe(true);
    });

    it("rejects a wait beyond the burst with ExceedsBurstError, wait and tryWait alike", async () => {
      const { limiter } = await setup();
      await expect(limiter.wait(6)).rejects.toBeInstanceOf(ExceedsBurstError);
      await expect(limiter.tryWait(6, 60_000)).rejects.toBeInstanceOf(ExceedsBurstError);
      // Nothing was taken by the refusals.
      expect(await limiter.tryWait(5, 0)).toBe(true);
    });

    it("rejects a count that is negative or not a number with a RangeError, taking nothing", async () => {
      const { limiter, clock } = await setup();
      const t0 = clock.now();
      for (const n of [-1, Number.NaN, Infinity]) {
        await expect(limiter.wait(n)).rejects.toBeInstanceOf(RangeError);
        await expect(limiter.tryWait(n, 1000)).rejects.toBeInstanceOf(RangeError);
      }
      await limiter.wait(5);
      expect(await limiter.tryWait(1, 99)).toBe(false);
      expect(clock.now()).toBe(t0);
    });

    it("an aborted wait rejects with the signal's reason and gives back the tokens not yet due", async () => {
      const { limiter, clock } = await setup();
      const t0 = clock.now();
      const reason = new Error("stop");
      await expect(limiter.wait(1, AbortSignal.abort(reason))).rejects.toBe(reason);
      await expect(limiter.tryWait(1, 1000, AbortSignal.abort(reason))).rejects.toBe(reason);
      await limiter.wait(5);
      const controller = new AbortController();
      const waiting = track(limiter.wait(2, controller.signal));
      await clock.advance(100);
      controller.abort(reason);
      await expect(waiting.promise).rejects.toBe(reason);
      // Given back: 2 tokens are due 200 ms after the drain, as if the aborted wait had never been.
      const next = track(limiter.wait(2));
      await clock.advance(99);
      expect(next.done).toBe(false);
      await clock.advance(1);
      await next.promise;
      expect(clock.now()).toBe(t0 + 200);
    });

    it.skipIf(FIXED_SETTINGS.has(name))("follows a change of rate and burst: the next wait runs at the new rate, and then reports the new settings", async () => {
      const { limiter, clock, configure } = await setup();
      const t0 = clock.now();
      await limiter.wait(5);
      await configure({ rate: 100, burst: 10 });
      const one = track(limiter.wait(1));
      await clock.advance(9);
      expect(one.done).toBe(false);
      await clock.advance(1);
      await one.promise;
      expect(limiter.rate).toBe(100);
      expect(limiter.burst).toBe(10);
      // The new burst is a wait's new ceiling.
      const ten = track(limiter.wait(10));
      await clock.advance(100);
      expect(ten.done).toBe(true);
      await ten.promise;
      expect(clock.now()).toBe(t0 + 110);
    });

    it.skipIf(FIXED_SETTINGS.has(name))("at a rate of 0 is paused: tryWait refuses at once, and a wait beyond the level lasts until aborted", async () => {
      const { limiter, clock, configure } = await setup();
      const t0 = clock.now();
      await limiter.wait(5);
      await configure({ rate: 0, burst: 5 });
      expect(await limiter.tryWait(1, 60_000)).toBe(false);
      expect(clock.now()).toBe(t0);
      expect(limiter.rate).toBe(0);
      const controller = new AbortController();
      const waiting = track(limiter.wait(1, controller.signal));
      await clock.advance(60_000);
      expect(waiting.done).toBe(false);
      controller.abort();
      await expect(waiting.promise).rejects.toThrow();
    });
  });
}
