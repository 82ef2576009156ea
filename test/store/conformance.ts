import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import type { BucketStore } from "../../src/store/bucket-store.js";

/** What the shared suite runs on (conformance.test.ts, once per registered backend): a fresh, empty store on a fake clock. */
export interface StoreFixture {
  store: BucketStore;
  clock: FakeClock;
  cleanup?: () => Promise<void>;
}

const T0 = 1_700_000_000_000;

interface Step {
  atMs: number;
  n: number;
  maxWaitMs?: number;
}

/** Takes whose answers must match TokenBucket.reserveAt exactly. */
const TABLES: Array<{ name: string; rate: number; burst: number; steps: Step[] }> = [
  {
    name: "rate 10/s, burst 5: drain, queue, refill",
    rate: 10,
    burst: 5,
    steps: [
      { atMs: 0, n: 5 },
      { atMs: 0, n: 1 },
      { atMs: 50, n: 1 },
      { atMs: 50, n: 6 },
      { atMs: 400, n: 2, maxWaitMs: 10 },
      { atMs: 400, n: 1, maxWaitMs: 1000 },
      { atMs: 10_000, n: 0 },
      { atMs: 10_000, n: 5 },
    ],
  },
  {
    name: "a clock stepping back is clamped, never credited",
    rate: 2,
    burst: 2,
    steps: [
      { atMs: 1000, n: 2 },
      { atMs: 500, n: 1 },
      { atMs: 0, n: 1 },
      { atMs: 1200, n: 1 },
    ],
  },
  {
    name: "fractional rate: waits in whole nanoseconds (x/time/rate rounding)",
    rate: 0.7,
    burst: 3,
    steps: [
      { atMs: 0, n: 3 },
      { atMs: 1, n: 0.5 },
      { atMs: 3, n: 1 },
      { atMs: 1428.5714285714287, n: 1 },
      { atMs: 2857.142857142857, n: 1, maxWaitMs: 1428.571428 },
      { atMs: 9000, n: 2.25 },
    ],
  },
  {
    name: "a fast byte rate",
    rate: 2 * 1024 * 1024,
    burst: 209_715,
    steps: [
      { atMs: 0, n: 41_943 },
      { atMs: 0.5, n: 200_000 },
      { atMs: 20, n: 41_943 },
      { atMs: 20.000001, n: 41_943 },
      { atMs: 100, n: 209_715, maxWaitMs: 50 },
    ],
  },
];

/** A deterministic pseudo-random walk: 300 takes at rising times, some with wait limits. */
function randomSteps(seed: number): Step[] {
  let state = seed;
  const next = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const steps: Step[] = [];
  let atMs = 0;
  for (let i = 0; i < 300; i++) {
    atMs += next() < 0.3 ? 0 : next() * 400;
    if (next() < 0.05) atMs -= 100; // a clock stepping back
    const step: Step = { atMs, n: Math.floor(next() * 8) + (next() < 0.2 ? 0.5 : 0) };
    if (next() < 0.3) step.maxWaitMs = next() * 1000;
    steps.push(step);
  }
  return steps;
}

/** The contract every BucketStore meets; conformance.test.ts runs it against every backend in STORE_BACKENDS. */
export function describeStoreConformance(name: string, setup: () => Promise<StoreFixture>): void {
  describe(`${name}: the BucketStore contract`, () => {
    let fixture: StoreFixture;
    let store: BucketStore;
    let clock: FakeClock;

    beforeEach(async () => {
      fixture = await setup();
      ({ store, clock } = fixture);
      clock.set(T0);
    });
    afterEach(async () => {
      await fixture.store.close();
      await fixture.cleanup?.();
    });

    it("knows nothing of a key never configured", async () => {
      expect(await store.take("nope", 1)).toBeUndefined();
      expect(await store.read("nope")).toBeUndefined();
      expect(await store.delete("nope")).toBe(false);
      expect(await store.list()).toEqual([]);
    });

    it("starts a new bucket full and reports its settings", async () => {
      const state = await store.configure("backups", { rate: 1024, burst: 4096, kind: "bytes" });
      expect(state).toEqual({ key: "backups", rate: 1024, burst: 4096, kind: "bytes", tokens: 4096, updatedAtMs: T0 });
      expect(await store.read("backups")).toEqual(state);
    });

    it("marks a key made with expireWhenFull, and never a key a user configured (key set makes it permanent)", async () => {
      const config = { rate: 10, burst: 5, kind: "count" as const };
      expect(await store.configure("client", config, { expireWhenFull: true })).toMatchObject({ expiresWhenFull: true });
      await store.take("client", 2);
      expect(await store.read("client")).toMatchObject({ expiresWhenFull: true, tokens: 3 });
      // Made again by another proxy: still marked, level kept.
      expect(await store.configure("client", config, { expireWhenFull: true })).toMatchObject({ expiresWhenFull: true, tokens: 3 });
      expect((await store.list()).map((state) => state.expiresWhenFull)).toEqual([true]);
      // tbucket key set: permanent from now on, even if a proxy asks again.
      expect((await store.configure("client", { ...config, rate: 20 })).expiresWhenFull).toBeUndefined();
      expect((await store.configure("client", config, { expireWhenFull: true })).expiresWhenFull).toBeUndefined();
      await store.configure("set-by-user", config);
      expect((await store.configure("set-by-user", config, { expireWhenFull: true })).expiresWhenFull).toBeUndefined();
      expect((await store.read("set-by-user"))?.expiresWhenFull).toBeUndefined();
    });

    for (const table of TABLES) {
      it(`agrees with TokenBucket: ${table.name}`, async () => {
        await expectAgreement(store, clock, table.rate, table.burst, table.steps);
      });
    }

    it("agrees with TokenBucket over 300 pseudo-random takes", async () => {
      await expectAgreement(store, clock, 3.3, 7, randomSteps(42));
    });

    it("admits everything at an unlimited rate", async () => {
      await store.configure("free", { rate: Infinity, burst: 10, kind: "count" });
      const result = await store.take("free", 1000);
      expect(result).toEqual({ ok: true, waitMs: 0, timeToActMs: T0, tokens: 10, rate: Infinity, burst: 10, kind: "count" });
      expect((await store.read("free"))?.rate).toBe(Infinity);
    });

    it("changes the rate keeping the tokens gained so far, like setRateAt", async () => {
      const bucket = new TokenBucket({ rate: 10, burst: 20, clock });
      await store.configure("k", { rate: 10, burst: 20, kind: "count" });
      bucket.reserveAt(T0, 20);
      await store.take("k", 20);
      clock.set(T0 + 500);
      bucket.setRateAt(T0 + 500, 40);
      const changed = await store.configure("k", { rate: 40, burst: 20, kind: "count" });
      expect(changed.tokens).toBe(bucket.tokensAt(T0 + 500));
      clock.set(T0 + 750);
      const taken = await store.take("k", 10);
      expect(taken?.rate).toBe(40);
      expect(taken?.waitMs).toBe(bucket.reserveAt(T0 + 750, 10).waitMs);
    });

    it("caps the level at a lowered burst, and refills a bucket whose kind changes", async () => {
      await store.configure("k", { rate: 10, burst: 20, kind: "count" });
      expect((await store.configure("k", { rate: 10, burst: 5, kind: "count" })).tokens).toBe(5);
      await store.take("k", 5);
      const rekinded = await store.configure("k", { rate: 1024, burst: 2048, kind: "bytes" });
      expect(rekinded).toMatchObject({ kind: "bytes", tokens: 2048 });
    });

    it("takes a lease above the burst only when asked, as back-to-back reservations", async () => {
      await store.configure("k", { rate: 10, burst: 10, kind: "bytes" });
      expect((await store.take("k", 25))?.ok).toBe(false);
      const lease = await store.take("k", 25, { overBurst: true });
      expect(lease).toMatchObject({ ok: true, waitMs: 1500, tokens: -15 });
    });

    it("serves concurrent takes one after another, first come first served", async () => {
      await store.configure("k", { rate: 10, burst: 5, kind: "count" });
      const results = await Promise.all(Array.from({ length: 20 }, () => store.take("k", 1)));
      const waits = results.map((r) => r!.waitMs).sort((a, b) => a - b);
      expect(waits).toEqual([0, 0, 0, 0, 0, ...Array.from({ length: 15 }, (_, i) => (i + 1) * 100)]);
      expect((await store.read("k"))?.tokens).toBe(-15);
    });

    it("gives back a reservation cancelled before its time to act (an interrupted wait)", async () => {
      // Ctrl-C while waiting for a launch at 1/100s must not leave the next run 100 s of debt.
      await store.configure("k", { rate: 0.01, burst: 1, kind: "count" });
      expect((await store.take("k", 1))?.waitMs).toBe(0);
      const waiting = (await store.take("k", 1))!;
      expect(waiting).toMatchObject({ ok: true, waitMs: 100_000, timeToActMs: T0 + 100_000, tokens: -1 });
      clock.set(T0 + 2000);
      expect(await store.cancel("k", { n: 1, timeToActMs: waiting.timeToActMs })).toBeCloseTo(1, 9);
      expect((await store.read("k"))?.tokens).toBeCloseTo(0.02, 9);
    });

    it("cancels as TokenBucket.cancelAt: later reservations keep their tokens, a due one gives nothing back", async () => {
      const bucket = new TokenBucket({ rate: 10, burst: 10, clock });
      await store.configure("k", { rate: 10, burst: 10, kind: "count" });
      const steps: Array<{ atMs: number; n: number } | { atMs: number; cancel: number }> = [
        { atMs: 0, n: 10 },
        { atMs: 0, n: 5 },
        { atMs: 100, cancel: 1 }, // the last one: all 5 back
        { atMs: 100, n: 5 },
        { atMs: 100, n: 3 },
        { atMs: 150, cancel: 2 }, // 3 reserved after it stay taken: 2 back
        { atMs: 200, cancel: 3 }, // the last one again: all 3 back
        { atMs: 300, n: 3 },
        { atMs: 5000, cancel: 0 }, // due long ago: nothing back
        { atMs: 5000, cancel: 4 },
      ];
      const mine: Array<{ n: number; timeToActMs: number }> = [];
      const theirs: ReturnType<TokenBucket["reserveAt"]>[] = [];
      for (const [index, step] of steps.entries()) {
        clock.set(T0 + step.atMs);
        const context = `step ${index}: ${JSON.stringify(step)}`;
        if ("n" in step) {
          const got = (await store.take("k", step.n))!;
          const want = bucket.reserveAt(T0 + step.atMs, step.n);
          expect(got.timeToActMs, context).toBe(want.timeToActMs);
          mine.push({ n: step.n, timeToActMs: got.timeToActMs });
          theirs.push(want);
        } else {
          const before = bucket.tokensAt(T0 + step.atMs);
          bucket.cancelAt(T0 + step.atMs, theirs[step.cancel]!);
          const restored = await store.cancel("k", mine[step.cancel]!);
          expect(restored, context).toBeCloseTo(bucket.tokensAt(T0 + step.atMs) - before, 9);
        }
        expect((await store.read("k"))?.tokens, context).toBeCloseTo(bucket.tokensAt(T0 + step.atMs), 9);
      }
    });

    it("gives back a whole lease above the burst, and nothing for a key it does not know", async () => {
      await store.configure("k", { rate: 10, burst: 10, kind: "bytes" });
      const lease = (await store.take("k", 25, { overBurst: true }))!;
      expect(lease.timeToActMs).toBe(T0 + 1500);
      expect(await store.cancel("k", { n: 25, timeToActMs: lease.timeToActMs })).toBe(25);
      expect((await store.read("k"))?.tokens).toBe(10);
      expect(await store.cancel("nope", { n: 25, timeToActMs: lease.timeToActMs })).toBeUndefined();
      await expect(store.cancel("k", { n: -1, timeToActMs: T0 })).rejects.toThrow("Expected `n` to be a non-negative finite number, got `-1`");
    });

    it("pauses at a rate of 0: the level is kept, a take past it is owed with an infinite wait, raising the rate repays it", async () => {
      await store.configure("k", { rate: 10, burst: 5, kind: "count" });
      await store.take("k", 5);
      clock.set(T0 + 100);
      expect(await store.configure("k", { rate: 0, burst: 5, kind: "count" })).toMatchObject({ rate: 0, tokens: 1 });
      clock.set(T0 + 10_000);
      expect((await store.read("k"))?.tokens).toBe(1);
      expect(await store.take("k", 1)).toMatchObject({ ok: true, waitMs: 0, tokens: 0, rate: 0 });
      const owed = (await store.take("k", 2))!;
      expect(owed).toMatchObject({ ok: true, waitMs: Infinity, timeToActMs: Infinity, tokens: -2, rate: 0 });
      // A wait limit refuses instead, taking nothing; a lease above the burst is owed the same way.
      expect(await store.take("k", 1, { maxWaitMs: 60_000 })).toMatchObject({ ok: false, tokens: -2 });
      expect(await store.take("k", 7, { overBurst: true })).toMatchObject({ ok: true, waitMs: Infinity, tokens: -9 });
      expect(await store.cancel("k", { n: 7, timeToActMs: Infinity })).toBe(7);
      // Cancelled while paused: all its tokens back, nothing stored is infinite.
      expect(await store.cancel("k", { n: 2, timeToActMs: owed.timeToActMs })).toBe(2);
      expect(await store.read("k")).toMatchObject({ rate: 0, tokens: 0 });
      await store.take("k", 2);
      clock.set(T0 + 20_000);
      expect(await store.configure("k", { rate: 10, burst: 5, kind: "count" })).toMatchObject({ rate: 10, tokens: -2 });
      expect(await store.take("k", 1)).toMatchObject({ ok: true, waitMs: 300, tokens: -3 });
      const listed = (await store.list()).find((state) => state.key === "k")!;
      expect([listed.tokens, listed.updatedAtMs].every(Number.isFinite)).toBe(true);
    });

    it("gives back, once paused, a reservation made at the earlier rate", async () => {
      await store.configure("k", { rate: 10, burst: 5, kind: "count" });
      await store.take("k", 5);
      const waiting = (await store.take("k", 2))!;
      expect(waiting.timeToActMs).toBe(T0 + 200);
      await store.configure("k", { rate: 0, burst: 5, kind: "count" });
      expect(await store.cancel("k", { n: 2, timeToActMs: waiting.timeToActMs })).toBe(2);
      expect(await store.read("k")).toMatchObject({ rate: 0, tokens: 0 });
    });

    it("lists buckets sorted by key and deletes them", async () => {
      await store.configure("b", { rate: 5, burst: 1, kind: "count" });
      await store.configure("a/x:1", { rate: 1024, burst: 100, kind: "bytes" });
      expect((await store.list()).map((s) => s.key)).toEqual(["a/x:1", "b"]);
      expect(await store.delete("b")).toBe(true);
      expect(await store.take("b", 1)).toBeUndefined();
      expect((await store.list()).map((s) => s.key)).toEqual(["a/x:1"]);
    });

    it("refuses bad arguments with the value named", async () => {
      await expect(store.take("k", -1)).rejects.toThrow("Expected `n` to be a non-negative finite number, got `-1`");
      await expect(store.configure("k", { rate: -1, burst: 1, kind: "count" })).rejects.toThrow("Expected `rate` to be a non-negative number or Infinity, got `-1`");
      await expect(store.configure("k", { rate: 1, burst: Infinity, kind: "count" })).rejects.toThrow("Expected `burst`");
    });
  });
}

async function expectAgreement(store: BucketStore, clock: FakeClock, rate: number, burst: number, steps: Step[]): Promise<void> {
  clock.set(T0);
  const bucket = new TokenBucket({ rate, burst, clock });
  await store.configure("table", { rate, burst, kind: "count" });
  for (const [index, step] of steps.entries()) {
    clock.set(T0 + step.atMs);
    const want = bucket.reserveAt(T0 + step.atMs, step.n, step.maxWaitMs ?? Infinity);
    const got = await store.take("table", step.n, step.maxWaitMs === undefined ? undefined : { maxWaitMs: step.maxWaitMs });
    const context = `step ${index}: ${JSON.stringify(step)}`;
    expect({ ok: got?.ok, waitMs: got?.waitMs }, context).toEqual({ ok: want.ok, waitMs: want.ok ? want.waitMs : Infinity });
    expect(got?.tokens, context).toBe(bucket.tokensAt(T0 + step.atMs));
  }
}
