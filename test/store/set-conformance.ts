import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { FakeClock } from "../../src/core/clock.js";
import { LimitSet, type LimitReservation } from "../../src/core/limit-set.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import type { BucketStore } from "../../src/store/bucket-store.js";
import type { LimitSetStore, SetReservation } from "../../src/store/limit-set-store.js";
import { MIXED_SET, seeded, setTrace } from "../helpers/limit-set-trace.js";

/** What the set part of the suite runs on: a fresh, empty store on a fake clock, as both contracts (one object, or two over one store). */
export interface SetStoreFixture {
  store: BucketStore;
  sets: LimitSetStore;
  clock: FakeClock;
  cleanup?: () => Promise<void>;
  /**
   * False where the store's BucketStore predates limit sets (RedisStore, until
   * its script refuses a set's hash): its take and read find no bucket
   * there, as for a key never configured.
   */
  bucketStoreKnowsSets?: boolean;
}

const T0 = 1_700_000_000_000;
/** A lease no trace outlives: the core's slots are held until released. */
const FOREVER_MS = 1e12;

const count = (n: number) => ({ count: n });

/** The contract every LimitSetStore meets; conformance.test.ts runs it against every backend in STORE_BACKENDS. */
export function describeSetConformance(name: string, setup: () => Promise<SetStoreFixture>): void {
  describe(`${name}: the LimitSetStore contract`, () => {
    let fixture: SetStoreFixture;
    let store: BucketStore;
    let sets: LimitSetStore;
    let clock: FakeClock;

    beforeEach(async () => {
      fixture = await setup();
      ({ store, sets, clock } = fixture);
      clock.set(T0);
    });
    afterEach(async () => {
      await fixture.store.close();
      if ((fixture.sets as unknown) !== fixture.store) await (fixture.sets as unknown as BucketStore).close?.();
      await fixture.cleanup?.();
    });

    const levels = async (key: string) => (await sets.readSet(key))!.limits.map((limit) => limit.level);

    it("knows nothing of a key never configured", async () => {
      expect(await sets.takeSet("nope", count(1))).toBeUndefined();
      expect(await sets.readSet("nope")).toBeUndefined();
      expect(await sets.listSets()).toEqual([]);
      expect(await sets.deleteSet("nope")).toBe(false);
    });

    it("starts a new set full and empty, and reads each limit with its level", async () => {
      const state = await sets.configureSet("api", MIXED_SET);
      expect(state).toEqual({
        key: "api",
        limits: [
          { kind: "bucket", unit: "count", rate: 10, burst: 4, level: 4 },
          { kind: "window", unit: "count", n: 6, windowMs: 1000, level: 6 },
          { kind: "bucket", unit: "bytes", rate: 300, burst: 500, level: 500 },
          { kind: "window", unit: "bytes", n: 900, windowMs: 2500, level: 900 },
          { kind: "concurrency", n: 3, level: 3 },
        ],
        updatedAtMs: T0,
      });
      expect(await sets.readSet("api")).toEqual(state);
    });

    for (const seed of [7, 8]) {
      it(`agrees with LimitSet decision by decision over a seeded trace of takes, cancels, settles and releases, seed ${seed}`, async () => {
        const core = new LimitSet(MIXED_SET, { clock: { now: () => T0, sleep: async () => {} } });
        await sets.configureSet("trace", MIXED_SET);
        const theirs: LimitReservation[] = [];
        const mine: Array<SetReservation | undefined> = [];
        for (const [index, step] of setTrace(seed, 250).entries()) {
          const atMs = T0 + step.atMs;
          clock.set(atMs);
          const context = `step ${index}: ${JSON.stringify(step)}`;
          if (step.op === "take") {
            const want = core.reserveAt(atMs, step.costs, step.maxWaitMs);
            const got = (await sets.takeSet("trace", step.costs, { maxWaitMs: step.maxWaitMs, leaseMs: FOREVER_MS }))!;
            expect([got.ok, got.timeToActMs, got.waitMs, got.limitedBy, got.noSlot], context).toEqual([want.ok, want.timeToActMs, want.waitMs, [...want.limitedBy], want.noSlot]);
            theirs.push(want);
            mine.push(got.reservation);
          } else {
            const want = theirs[step.take]!;
            const reservation = mine[step.take];
            // A refused take has nothing to give back; the core's guards (cancelled, released) are the caller's for a store.
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
            }
          }
          const got = await levels("trace");
          MIXED_SET.forEach((_, i) => expect(got[i], `${context}, limit ${i + 1}`).toBeCloseTo(core.levelAt(atMs, i), 9));
        }
      });
    }

    it("refuses all or nothing: a refusal by any limit costs nothing in any limit", async () => {
      await sets.configureSet("k", MIXED_SET);
      await sets.takeSet("k", { count: 2, bytes: 400 });
      const before = await levels("k");
      // Over the bytes bucket's burst: never.
      expect(await sets.takeSet("k", { count: 1, bytes: 501 })).toMatchObject({ ok: false, limitedBy: [3], noSlot: false, waitMs: Infinity });
      // The count bucket would wait: Allow refuses.
      expect(await sets.takeSet("k", { count: 3, bytes: 1 }, { maxWaitMs: 0 })).toMatchObject({ ok: false, limitedBy: [1] });
      // The bytes window would wait past the limit.
      expect(await sets.takeSet("k", { count: 1, bytes: 501 - 1 }, { maxWaitMs: 100 })).toMatchObject({ ok: false });
      expect(await levels("k")).toEqual(before);
    });

    it("reserves at the earliest instant every limit admits, to the millisecond, and names the limit that set it", async () => {
      const limits: LimitSpec[] = [
        { kind: "bucket", unit: "count", rate: 10, burst: 1 },
        { kind: "window", unit: "count", n: 2, windowMs: 1000 },
      ];
      await sets.configureSet("k", limits);
      expect(await sets.takeSet("k", count(1))).toMatchObject({ ok: true, waitMs: 0, timeToActMs: T0, limitedBy: [] });
      expect(await sets.takeSet("k", count(1))).toMatchObject({ ok: true, waitMs: 100, timeToActMs: T0 + 100, limitedBy: [1] });
      // The window holds two until the first leaves at T0 + 1000; the bucket banks nothing past its burst meanwhile.
      expect(await sets.takeSet("k", count(1))).toMatchObject({ ok: true, waitMs: 1000, timeToActMs: T0 + 1000, limitedBy: [2] });
      expect(await sets.takeSet("k", count(1))).toMatchObject({ ok: true, timeToActMs: T0 + 1100, limitedBy: [1, 2] });
      expect(await sets.takeSet("k", count(1), { maxWaitMs: 1999 })).toMatchObject({ ok: false, limitedBy: [2] });
      expect(await sets.takeSet("k", count(1), { maxWaitMs: 2000 })).toMatchObject({ ok: true, timeToActMs: T0 + 2000 });
    });

    it("serves first come, first served: a small item does not overtake a large one waiting", async () => {
      await sets.configureSet("k", [{ kind: "window", unit: "count", n: 3, windowMs: 1000 }]);
      await sets.takeSet("k", count(3));
      expect((await sets.takeSet("k", count(3)))!.timeToActMs).toBe(T0 + 1000);
      clock.set(T0 + 10);
      expect((await sets.takeSet("k", count(1)))!.timeToActMs).toBe(T0 + 2000);
      const results = await Promise.all(Array.from({ length: 6 }, () => sets.takeSet("k", count(1))));
      expect(results.map((result) => result!.timeToActMs)).toEqual([T0 + 2000, T0 + 2000, T0 + 3000, T0 + 3000, T0 + 3000, T0 + 4000]);
    });

    it("cancels to every limit: the last reservation gives everything back", async () => {
      await sets.configureSet("k", MIXED_SET);
      await sets.takeSet("k", { count: 3, bytes: 450 });
      const before = await levels("k");
      const waiting = (await sets.takeSet("k", { count: 2, bytes: 300 }))!;
      expect(waiting.waitMs).toBeGreaterThan(0);
      expect(await levels("k")).not.toEqual(before);
      expect(await sets.cancelSet("k", waiting.reservation!)).toBe(true);
      const after = await levels("k");
      before.forEach((level, i) => expect(after[i], `limit ${i + 1}`).toBeCloseTo(level, 9));
    });

    it("settles up and down in every limit that counts the unit", async () => {
      const limits: LimitSpec[] = [
        { kind: "bucket", unit: "tokens", rate: 100, burst: 1000 },
        { kind: "window", unit: "tokens", n: 2000, windowMs: 60_000 },
        { kind: "bucket", unit: "count", rate: 1, burst: 5 },
      ];
      await sets.configureSet("llm", limits);
      const taken = (await sets.takeSet("llm", { count: 1, tokens: 500 }))!;
      expect(await levels("llm")).toEqual([500, 1500, 4]);
      const up = (await sets.settleSet("llm", taken.reservation!, { tokens: 1200 }))!;
      expect(await levels("llm")).toEqual([-200, 800, 4]);
      expect((await sets.takeSet("llm", { tokens: 100 }, { maxWaitMs: 0 }))!.ok).toBe(false);
      await sets.settleSet("llm", up, { tokens: 300 });
      expect(await levels("llm")).toEqual([700, 1700, 4]);
    });

    it("never admits more than n in any window of its length (brute force over what it admitted)", async () => {
      const windows: LimitSpec[] = [
        { kind: "window", unit: "count", n: 5, windowMs: 1000 },
        { kind: "window", unit: "bytes", n: 1000, windowMs: 300 },
      ];
      await sets.configureSet("w", windows);
      const next = seeded(11);
      const admitted: Array<{ atMs: number; count: number; bytes: number }> = [];
      let nowMs = T0;
      for (let i = 0; i < 300; i++) {
        nowMs += Math.floor(next() * 80);
        clock.set(nowMs);
        const costs = { count: next() < 0.2 ? 2 : 1, bytes: Math.floor(next() * 600) };
        const result = (await sets.takeSet("w", costs, { maxWaitMs: next() < 0.5 ? 0 : 500 }))!;
        if (result.ok) admitted.push({ atMs: result.timeToActMs, ...costs });
      }
      // Enough admitted to fill the windows, and some refused: the limits bound.
      expect(admitted.length).toBeGreaterThan(40);
      expect(admitted.length).toBeLessThan(300);
      for (const { atMs } of admitted) {
        const held = (windowMs: number, unit: "count" | "bytes") =>
          admitted.filter((item) => item.atMs > atMs - windowMs && item.atMs <= atMs).reduce((sum, item) => sum + item[unit], 0);
        expect(held(1000, "count")).toBeLessThanOrEqual(5);
        expect(held(300, "bytes")).toBeLessThanOrEqual(1000);
      }
    });

    it("holds at most n slots at once; a holder that dies gives its slot back within its lease, one renewed keeps it", async () => {
      await sets.configureSet("jobs", [{ kind: "concurrency", n: 2 }]);
      const a = (await sets.takeSet("jobs", {}, { leaseMs: 1000, holder: "a" }))!;
      const b = (await sets.takeSet("jobs", {}, { leaseMs: 1000 }))!;
      expect([a.ok, b.ok, a.reservation!.holder]).toEqual([true, true, "a"]);
      expect(await sets.takeSet("jobs", {}, { leaseMs: 1000 })).toMatchObject({ ok: false, noSlot: true, limitedBy: [1] });
      expect(await levels("jobs")).toEqual([0]);
      // b's holder lives and says so; a's died.
      clock.set(T0 + 600);
      expect(await sets.renewSet("jobs", b.reservation!, 1000)).toBe(true);
      clock.set(T0 + 1000);
      expect(await levels("jobs")).toEqual([1]);
      expect(await sets.renewSet("jobs", a.reservation!, 1000)).toBe(false);
      const c = (await sets.takeSet("jobs", {}, { leaseMs: 1000 }))!;
      expect(c.ok).toBe(true);
      expect(await sets.takeSet("jobs", {})).toMatchObject({ ok: false, noSlot: true });
      expect(await sets.releaseSet("jobs", b.reservation!)).toBe(true);
      expect(await sets.releaseSet("jobs", b.reservation!)).toBe(false);
      expect(await levels("jobs")).toEqual([1]);
      clock.set(T0 + 2000);
      expect(await levels("jobs")).toEqual([2]);
    });

    it("keeps each unchanged limit's state when the set changes, and starts a new one afresh", async () => {
      await sets.configureSet("k", [
        { kind: "bucket", unit: "count", rate: 10, burst: 10 },
        { kind: "window", unit: "count", n: 5, windowMs: 1000 },
      ]);
      await sets.takeSet("k", count(4));
      clock.set(T0 + 100);
      const changed = await sets.configureSet("k", [
        { kind: "window", unit: "count", n: 5, windowMs: 1000 },
        { kind: "concurrency", n: 2 },
        { kind: "bucket", unit: "count", rate: 20, burst: 8 },
      ]);
      expect(changed.limits.map((limit) => limit.level)).toEqual([1, 2, 7]);
      clock.set(T0 + 150);
      expect(await levels("k")).toEqual([1, 2, 8]);
      clock.set(T0 + 1000);
      expect(await levels("k")).toEqual([5, 2, 8]);
    });

    it("gives a reservation made before the set changed back to the limits it was taken from, and nothing to a new one", async () => {
      await sets.configureSet("k", [
        { kind: "bucket", unit: "count", rate: 10, burst: 10 },
        { kind: "window", unit: "bytes", n: 1000, windowMs: 1000 },
      ]);
      await sets.takeSet("k", { count: 10, bytes: 100 });
      const waiting = (await sets.takeSet("k", { count: 5, bytes: 300 }))!;
      expect(waiting.timeToActMs).toBe(T0 + 500);
      // The window is kept (same limit), the bucket goes on at a new rate (same unit), a byte bucket is new.
      await sets.configureSet("k", [
        { kind: "window", unit: "bytes", n: 1000, windowMs: 1000 },
        { kind: "bucket", unit: "bytes", rate: 100, burst: 100 },
        { kind: "bucket", unit: "count", rate: 20, burst: 10 },
      ]);
      expect(await levels("k")).toEqual([600, 100, -5]);
      clock.set(T0 + 100);
      await sets.cancelSet("k", waiting.reservation!);
      expect(await levels("k")).toEqual([900, 100, 2]);
    });

    it("keeps a key stored as one bucket working: BucketStore's take and cancel exactly, read here as a set of one", async () => {
      const bucket = new TokenBucket({ rate: 10, burst: 5, clock });
      await store.configure("old", { rate: 10, burst: 5, kind: "count" });
      expect(await sets.readSet("old")).toEqual({ key: "old", limits: [{ kind: "bucket", unit: "count", rate: 10, burst: 5, level: 5 }], updatedAtMs: T0 });
      // A set take, then a BucketStore take, then a set take: one bucket, x/time/rate throughout.
      expect(await sets.takeSet("old", count(4))).toMatchObject({ ok: true, waitMs: bucket.reserveAt(T0, 4).waitMs });
      expect((await store.take("old", 3))!.waitMs).toBe(bucket.reserveAt(T0, 3).waitMs);
      const waiting = (await sets.takeSet("old", count(1)))!;
      expect(waiting.waitMs).toBe(bucket.reserveAt(T0, 1).waitMs);
      expect((await store.read("old"))!.tokens).toBeCloseTo(bucket.tokensAt(T0), 9);
      await sets.cancelSet("old", waiting.reservation!);
      expect((await store.read("old"))!.tokens).toBeCloseTo(-2, 9);
      // A set of one bucket counting bytes or counts is such a key too.
      await sets.configureSet("new", [{ kind: "bucket", unit: "bytes", rate: 100, burst: 50 }]);
      expect(await store.take("new", 60, { overBurst: true })).toMatchObject({ ok: true, waitMs: 100, tokens: -10, kind: "bytes" });
      expect((await store.list()).map((state) => state.key)).toEqual(["new", "old"]);
    });

    it("refuses BucketStore's take on a key of another set, leaves it out of its list, and lists every key as a set", async () => {
      await sets.configureSet("api", MIXED_SET);
      await store.configure("plain", { rate: 1, burst: 1, kind: "count" });
      if (fixture.bucketStoreKnowsSets === false) {
        expect(await store.take("api", 1)).toBeUndefined();
        expect(await store.read("api")).toBeUndefined();
      } else {
        await expect(store.take("api", 1)).rejects.toMatchObject({ failure: "holds-a-set", message: expect.stringContaining("key api holds a set of 5 limits") });
        await expect(store.read("api")).rejects.toMatchObject({ failure: "holds-a-set" });
      }
      expect((await store.list()).map((state) => state.key)).toEqual(["plain"]);
      expect((await sets.listSets()).map((state) => [state.key, state.limits.length])).toEqual([
        ["api", 5],
        ["plain", 1],
      ]);
      // BucketStore's configure sets the key anew: one bucket.
      await store.configure("api", { rate: 2, burst: 2, kind: "count" });
      expect((await sets.readSet("api"))!.limits).toEqual([{ kind: "bucket", unit: "count", rate: 2, burst: 2, level: 2 }]);
      expect(await sets.deleteSet("api")).toBe(true);
      expect(await sets.readSet("api")).toBeUndefined();
    });

    it("marks a set made with expireWhenFull, and never one a user configured", async () => {
      expect((await sets.configureSet("client", MIXED_SET, { expireWhenFull: true })).expiresWhenFull).toBe(true);
      await sets.takeSet("client", count(1));
      expect((await sets.configureSet("client", MIXED_SET, { expireWhenFull: true })).expiresWhenFull).toBe(true);
      expect((await sets.configureSet("client", MIXED_SET)).expiresWhenFull).toBeUndefined();
      expect((await sets.configureSet("client", MIXED_SET, { expireWhenFull: true })).expiresWhenFull).toBeUndefined();
    });

    it("refuses bad arguments with the value named", async () => {
      await expect(sets.configureSet("k", [])).rejects.toThrow("Expected `limits` to be an array of 1 to 31 limits");
      await sets.configureSet("k", MIXED_SET);
      await expect(sets.takeSet("k", { count: -1 })).rejects.toThrow("Expected `count` cost to be a non-negative finite number, got `-1`");
      await expect(sets.takeSet("k", count(1), { leaseMs: 0 })).rejects.toThrow("Expected `leaseMs`");
      await expect(sets.cancelSet("k", { timeToActMs: 0 } as SetReservation)).rejects.toThrow("Expected a reservation as takeSet answered it");
    });
  });
}
