import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ClassScheduler } from "../../src/core/class-scheduler.js";
import { ClassDefinitionError, type ClassSpec, UnknownClassError } from "../../src/core/class-spec.js";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { seeded } from "../helpers/limit-set-trace.js";
import type { SetStoreFixture } from "./set-conformance.js";

const T0 = 1_700_000_000_000;

/** The key: 100 a second, burst 20, and 2,000 a minute. */
const KEY: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 100, burst: 20 },
  { kind: "window", unit: "count", n: 2000, windowMs: 60_000 },
];
const CLASSES: ClassSpec[] = [
  { name: "interactive", rate: 20, ceil: 40, prio: 0 },
  { name: "backup", rate: 10, prio: 1, weight: 30 },
  { name: "bulk", rate: 5, prio: 2 },
];
const count = (n: number) => ({ count: n });

/** The contract of a store's classes (design section 12); conformance.test.ts runs it against every backend. */
export function describeClassConformance(name: string, setup: () => Promise<SetStoreFixture>): void {
  describe(`${name}: classes on a shared key`, () => {
    let fixture: SetStoreFixture;
    let clock: FakeClock;

    beforeEach(async () => {
      fixture = await setup();
      clock = fixture.clock;
      clock.set(T0);
    });
    afterEach(async () => {
      await fixture.store.close();
      await fixture.cleanup?.();
    });

    const sets = () => {
      const store = fixture.sets;
      if (!store.configureClasses || !store.takeClass) throw new Error(`the ${name} store keeps no classes`);
      return store as Required<typeof store>;
    };

    it("defines classes on a configured key only, and reads them with their defaults and use", async () => {
      expect(await sets().configureClasses("nope", CLASSES)).toBeUndefined();
      await sets().configureSet("uplink", KEY);
      const state = await sets().configureClasses("uplink", CLASSES);
      expect(state?.classes?.map(({ name, rate, ceil, prio, weight, burst }) => ({ name, rate, ceil, prio, weight, burst }))).toEqual([
        { name: "interactive", rate: 20, ceil: 40, prio: 0, weight: 20, burst: 4 },
        { name: "backup", rate: 10, ceil: 100, prio: 1, weight: 30, burst: 2 },
        { name: "bulk", rate: 5, ceil: 100, prio: 2, weight: 5, burst: 1 },
      ]);
      expect(state?.classes?.map((c) => c.usedRate)).toEqual([0, 0, 0]);
      const read = await sets().readSet("uplink");
      expect(read?.classes?.map((c) => c.name)).toEqual(["interactive", "backup", "bulk"]);
      expect((await sets().listSets()).find((s) => s.key === "uplink")?.classes).toHaveLength(3);
    });

    it("answers every ask as one ClassScheduler does, for every taker together", async () => {
      await sets().configureSet("uplink", KEY);
      await sets().configureClasses("uplink", CLASSES);
      const oracle = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(T0) });
      const mismatches: string[] = [];
      let admitted = 0;
      // Three classes asking far more than the key's rate, in turns, for 1.5 s of the fake clock.
      for (let step = 0; step < 600; step++) {
        const t = T0 + step * 2.5;
        clock.set(t);
        const c = (step * 7) % 3;
        const n = 1 + (step % 3);
        const got = await sets().takeClass("uplink", CLASSES[c]!.name, count(n));
        const ok = oracle.allowAt(t, c, count(n));
        const waitMs = ok ? 0 : Math.max(0, oracle.earliestAt(t, c, count(n)) - t);
        if (got?.ok !== ok || Math.abs((got?.waitMs ?? NaN) - waitMs) > 1e-6) mismatches.push(`${step}: got ${got?.ok} ${got?.waitMs}, expected ${ok} ${waitMs}`);
        if (ok) admitted += n;
      }
      expect(mismatches.slice(0, 5)).toEqual([]);
      expect(admitted).toBeGreaterThan(150);
      expect(admitted).toBeLessThanOrEqual(20 + 100 * 1.5 + 1);
      const used = (await sets().readSet("uplink"))!.classes!;
      expect(used.every((c) => c.usedRate > 0)).toBe(true);
    });

    it("answers a seeded trace as ClassScheduler does: random costs, a window first, a second unit, long pauses, classes changed live", async () => {
      // The key's rate is its second limit; the window often binds, the bytes bucket sometimes.
      const limits: LimitSpec[] = [
        { kind: "window", unit: "count", n: 40, windowMs: 500 },
        { kind: "bucket", unit: "count", rate: 80, burst: 10 },
        { kind: "bucket", unit: "bytes", rate: 4000, burst: 1500 },
      ];
      const before: ClassSpec[] = [
        { name: "a", rate: 30, ceil: 50, prio: 0 },
        { name: "b", rate: 20, prio: 1, weight: 5 },
        { name: "c", rate: 10, prio: 1, burst: 3.5 },
        { name: "d", rate: 0, prio: 2 },
      ];
      // Live: b dropped, a's guarantee lowered, e new and ahead of the rest.
      const after: ClassSpec[] = [{ name: "e", rate: 15, ceil: 30, prio: 0, weight: 2 }, { name: "a", rate: 20, ceil: 50, prio: 1 }, before[2]!, before[3]!];
      await sets().configureSet("mixed", limits);
      await sets().configureClasses("mixed", before);
      const fake = new FakeClock(T0);
      let oracle = new ClassScheduler(limits, before, { clock: fake });
      let specs = before;
      const next = seeded(7);
      const mismatches: string[] = [];
      const seen = new Set<string>();
      let t = T0;
      for (let step = 0; step < 1200; step++) {
        const r = next();
        t += r < 0.02 ? 300 + next() * 2700 : r < 0.2 ? 0 : next() * 6;
        clock.set(t);
        fake.set(t);
        if (step === 600) {
          await sets().configureClasses("mixed", after);
          oracle = new ClassScheduler(limits, after, { clock: fake, state: oracle.state() });
          specs = after;
        }
        const c = Math.floor(next() * specs.length);
        const costs = { count: next() < 0.1 ? 0 : Math.round((0.25 + next() * 4) * 100) / 100, bytes: Math.floor(next() * 400) };
        const got = await sets().takeClass("mixed", specs[c]!.name, costs);
        const ok = oracle.allowAt(t, c, costs);
        const how = ok ? oracle.lastPath : oracle.lastRefusal;
        const waitMs = ok ? 0 : Math.max(0, oracle.earliestAt(t, c, costs) - t);
        seen.add(how!);
        const gotHow = got?.ok ? got.path : got?.refusal;
        const close = got !== undefined && (got.waitMs === waitMs || Math.abs(got.waitMs - waitMs) <= 1e-6);
        if (got?.ok !== ok || gotHow !== how || !close) mismatches.push(`${step}: got ${got?.ok} ${gotHow} ${got?.waitMs}, expected ${ok} ${how} ${waitMs}`);
        if (step % 100 === 99) {
          const levels = (await sets().readSet("mixed"))!.classes!;
          levels.forEach((level, i) => {
            const want = [oracle.guaranteeLevelAt(t, i), oracle.usedRateAt(t, i)];
            if (Math.abs(level.level - want[0]!) > 1e-9 || Math.abs(level.usedRate - want[1]!) > 1e-9) mismatches.push(`${step}: ${level.name} reads ${level.level} ${level.usedRate}, expected ${want}`);
          });
        }
      }
      expect(mismatches.slice(0, 5)).toEqual([]);
      // The trace went every way a take goes.
      expect([...seen].sort()).toEqual(["borrow", "ceil", "guarantee", "lending", "parent"]);
    });

    it("says how it served a take, and how long a refused one waits", async () => {
      await sets().configureSet("uplink", KEY);
      await sets().configureClasses("uplink", CLASSES);
      const first = await sets().takeClass("uplink", "bulk", count(1));
      expect(first).toMatchObject({ ok: true, waitMs: 0, path: "guarantee", classes: CLASSES, limits: KEY });
      const loan = await sets().takeClass("uplink", "bulk", count(1));
      expect(loan).toMatchObject({ ok: true, path: "borrow" });
      // Interactive's ceiling holds 8 (the key's burst scaled to its ceil of 40): a loan of 8 empties it.
      const big = await sets().takeClass("uplink", "interactive", count(8));
      expect(big).toMatchObject({ ok: true, path: "borrow" });
      const refused = await sets().takeClass("uplink", "interactive", count(8));
      expect(refused).toMatchObject({ ok: false, refusal: "ceil" });
      // Its ceiling refills at 40/s: 8 in 200 ms.
      expect(refused?.waitMs).toBeCloseTo(200, 6);
    });

    it("refuses an unknown class naming the defined ones, a take naming no class, and a class on a key without classes", async () => {
      await sets().configureSet("uplink", KEY);
      await sets().configureSet("plain", KEY);
      await sets().configureClasses("uplink", CLASSES);
      await expect(sets().takeClass("uplink", "video", count(1))).rejects.toThrow(UnknownClassError);
      await expect(sets().takeClass("uplink", "video", count(1))).rejects.toThrow('No class "video"; the classes are interactive, backup, bulk');
      const noClass = await sets().takeSet("uplink", count(1)).catch((error: unknown) => error);
      expect(noClass).toBeInstanceOf(StoreError);
      expect((noClass as StoreError).failure).toBe("classes");
      expect((noClass as StoreError).message).toMatch(/key uplink is shared by classes \(interactive, backup, bulk\); name one with --class$/);
      const plain = await sets().takeClass("plain", "bulk", count(1)).catch((error: unknown) => error);
      expect((plain as StoreError).failure).toBe("classes");
      expect((plain as StoreError).message).toMatch(/key plain has no classes; define them with tbucket key set plain --class NAME=RATE, or take without --class$/);
      expect(await sets().takeClass("nope", "bulk", count(1))).toBeUndefined();
    });

    it("keeps the classes and their state when the key's limits change, refuses limits they no longer fit, and drops them on null", async () => {
      await sets().configureSet("uplink", KEY);
      await sets().configureClasses("uplink", CLASSES);
      for (let i = 0; i < 4; i++) await sets().takeClass("uplink", "interactive", count(1));
      const faster = [{ ...KEY[0]!, rate: 200 } as LimitSpec, KEY[1]!];
      const changed = await sets().configureSet("uplink", faster);
      expect(changed.classes?.[0]).toMatchObject({ name: "interactive", level: 0 });
      await expect(sets().configureSet("uplink", [{ kind: "bucket", unit: "count", rate: 30, burst: 20 }])).rejects.toThrow(ClassDefinitionError);
      expect((await sets().readSet("uplink"))!.limits[0]).toMatchObject({ rate: 200 });
      const none = await sets().configureClasses("uplink", null);
      expect(none?.classes).toBeUndefined();
      expect((await sets().takeSet("uplink", count(1)))?.ok).toBe(true);
    });

    it("changes a class live, keeping the state of those still defined; refuses classes a key cannot have", async () => {
      await sets().configureSet("uplink", KEY);
      await sets().configureClasses("uplink", CLASSES);
      for (let i = 0; i < 4; i++) await sets().takeClass("uplink", "interactive", count(1));
      const state = await sets().configureClasses("uplink", [{ name: "video", rate: 50 }, CLASSES[0]!]);
      expect(state?.classes?.map((c) => [c.name, c.level])).toEqual([
        ["video", 10],
        ["interactive", 0],
      ]);
      await expect(sets().configureClasses("uplink", [{ name: "a", rate: 80 }, { name: "b", rate: 30 }])).rejects.toThrow(ClassDefinitionError);
      await sets().configureSet("slots", [...KEY, { kind: "concurrency", n: 3 }]);
      await expect(sets().configureClasses("slots", CLASSES)).rejects.toThrow("a key with a concurrency limit cannot have classes");
    });

    it("keeps the classes of a one-bucket key as a set (a BucketStore take is refused the same way)", async () => {
      await sets().configureSet("one", [KEY[0]!]);
      await sets().configureClasses("one", CLASSES);
      expect((await sets().takeClass("one", "bulk", count(1)))?.ok).toBe(true);
      const take = await fixture.store.take("one", 1).catch((error: unknown) => error);
      expect((take as StoreError).failure).toBe("classes");
    });
  });
}
