import { describe, expect, it } from "vitest";
import { ClassScheduler } from "../../src/core/class-scheduler.js";
import { ClassDefinitionError, type ClassSpec, resolveClasses, UnknownClassError } from "../../src/core/class-spec.js";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";

/** The key: 100 a second, burst 20. */
const KEY: LimitSpec[] = [{ kind: "bucket", unit: "count", rate: 100, burst: 20 }];
const ONE = { count: 1 };

/**
 * a: guarantee 20, may borrow up to 40, first in line. b and c: 10 each,
 * prio 1, weights 3:1. d: 5, prio 2. The rule's answer when all ask for far
 * more than 100/s: 20 + 10 + 10 + 5 guaranteed, 55 lent; a borrows 20 to
 * its ceil, b and c split the 35 left 3:1; d keeps its 5.
 */
const CLASSES: ClassSpec[] = [
  { name: "a", rate: 20, ceil: 40, prio: 0 },
  { name: "b", rate: 10, prio: 1, weight: 30 },
  { name: "c", rate: 10, prio: 1, weight: 10 },
  { name: "d", rate: 5, prio: 2 },
];
const RULE = [40, 10 + 35 * 0.75, 10 + 35 * 0.25, 5];

const BIN_MS = 100;

/** Every class in `asking` asks for one token every millisecond (far more than the key's rate), for `seconds`; admitted per class per 100 ms. */
function saturate(classes: ClassSpec[], asking: number[], seconds: number, limits = KEY): number[][] {
  const scheduler = new ClassScheduler(limits, classes, { clock: new FakeClock(0) });
  const bins = classes.map(() => new Array<number>((seconds * 1000) / BIN_MS).fill(0));
  for (let t = 0; t < seconds * 1000; t++) {
    // The order of the asks within a millisecond turns, so that none is always first.
    for (let k = 0; k < asking.length; k++) {
      const c = asking[(k + t) % asking.length]!;
      const atMs = t + k * 0.1;
      if (scheduler.allowAt(atMs, c, ONE)) bins[c]![Math.floor(atMs / BIN_MS)]!++;
    }
  }
  return bins;
}

/** What each window of `windowBins` bins, sliding by one bin, admitted. */
function windows(bins: number[], windowBins: number, fromBin = 0): number[] {
  const sums: number[] = [];
  for (let start = fromBin; start + windowBins <= bins.length; start++) sums.push(bins.slice(start, start + windowBins).reduce((a, b) => a + b, 0));
  return sums;
}

function within(got: number, want: number, share: number): boolean {
  return Math.abs(got - want) <= want * share;
}

describe("ClassScheduler on saturating traffic (a fake clock, one token every millisecond per class)", () => {
  const seconds = 60;
  const bins = saturate(CLASSES, [0, 1, 2, 3], seconds);
  const WINDOW = 10_000 / BIN_MS;

  it("gives each class at least its guarantee, within 1 %, over any 10 s", () => {
    CLASSES.forEach((spec, c) => {
      const least = Math.min(...windows(bins[c]!, WINDOW));
      expect({ class: spec.name, ok: least >= spec.rate * 10 * 0.99 }).toEqual({ class: spec.name, ok: true });
    });
  });

  it("lends the rest by prio, then by weight, within 1 % of the rule's answer over any 10 s once the first burst is spent", () => {
    CLASSES.forEach((spec, c) => {
      // The buckets start full: the first two seconds hold the key's burst besides the rate.
      const got = windows(bins[c]!, WINDOW, 2000 / BIN_MS);
      const off = got.filter((n) => !within(n, RULE[c]! * 10, 0.01));
      expect({ class: spec.name, off }).toEqual({ class: spec.name, off: [] });
    });
  });

  it("never lets a class past its ceiling, nor the total past the key's envelope b + r·T", () => {
    const classes = resolveClasses(CLASSES, 100, 20);
    for (const windowBins of [1, 10, 100]) {
      const T = (windowBins * BIN_MS) / 1000;
      classes.forEach((spec, c) => expect(Math.max(...windows(bins[c]!, windowBins))).toBeLessThanOrEqual(spec.ceilBurst + spec.ceil * T + 1e-9));
      const total = bins[0]!.map((_, i) => bins.reduce((sum, b) => sum + b[i]!, 0));
      expect(Math.max(...windows(total, windowBins))).toBeLessThanOrEqual(20 + 100 * T + 1e-9);
    }
  });

  it("is work-conserving: the four together take the key's whole rate", () => {
    const total = bins.reduce((sum, b) => sum + b.slice(20).reduce((x, y) => x + y, 0), 0);
    expect(within(total, 100 * (seconds - 2), 0.001)).toBe(true);
  });
});

describe("ClassScheduler: a class alone", () => {
  it("gets min(ceil, the key's rate) within 1 %", () => {
    for (const [c, want] of [[0, 40], [1, 100], [3, 100]] as const) {
      const got = windows(saturate(CLASSES, [c], 30)[c]!, 100, 20);
      expect({ c, off: got.filter((n) => !within(n, want * 10, 0.01)) }).toEqual({ c, off: [] });
    }
  });

  it("gets what another stops asking for: b and c alone split the 55 + 10 + 20 lent 3:1 past their guarantees", () => {
    const bins = saturate(CLASSES, [1, 2], 30);
    const lent = 100 - 20;
    expect(within(windows(bins[1]!, 100, 20)[0]!, (10 + lent * 0.75) * 10, 0.01)).toBe(true);
    expect(within(windows(bins[2]!, 100, 20)[0]!, (10 + lent * 0.25) * 10, 0.01)).toBe(true);
  });
});

describe("ClassScheduler: nothing starves", () => {
  it("a prio-2 class with a guarantee keeps it while prio 0 and prio 1 ask for everything", () => {
    const classes: ClassSpec[] = [
      { name: "interactive", rate: 50, prio: 0 },
      { name: "backup", rate: 30, prio: 1 },
      { name: "bulk", rate: 10, prio: 2 },
    ];
    const bins = saturate(classes, [0, 1, 2], 60);
    const bulk = windows(bins[2]!, 100);
    expect(Math.min(...bulk)).toBeGreaterThanOrEqual(10 * 10 * 0.99);
    // And prio 0 takes all that is lent, to its ceil (the key's rate) less the guarantees of the others.
    expect(within(windows(bins[0]!, 100, 20)[0]!, (100 - 30 - 10) * 10, 0.01)).toBe(true);
  });
});

describe("ClassScheduler: the two ways to consume", () => {
  it("a refused allow takes nothing from the key, the guarantee or the ceiling", () => {
    const scheduler = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    for (let i = 0; i < 20; i++) expect(scheduler.allowAt(0, 0, ONE)).toBe(i < 8);
    const before = [scheduler.keyLevelAt(0), scheduler.guaranteeLevelAt(0, 0), scheduler.ceilingLevelAt(0, 0)];
    expect(scheduler.allowAt(0, 0, ONE)).toBe(false);
    expect(scheduler.lastRefusal).toBe("ceil");
    expect([scheduler.keyLevelAt(0), scheduler.guaranteeLevelAt(0, 0), scheduler.ceilingLevelAt(0, 0)]).toEqual(before);
  });

  it("serves a guarantee first, then lends", () => {
    const scheduler = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    // a's guarantee bucket holds 20 × 20/100 = 4.
    const paths = Array.from({ length: 6 }, () => (scheduler.allowAt(0, 0, ONE), scheduler.lastPath));
    expect(paths).toEqual(["guarantee", "guarantee", "guarantee", "guarantee", "borrow", "borrow"]);
  });

  it("earliestAt names an instant at which the refused item is admitted", () => {
    const scheduler = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    let t = 0;
    let admitted = 0;
    while (t < 10_000) {
      if (scheduler.allowAt(t, 3, { count: 2 })) admitted += 2;
      else {
        const next = scheduler.earliestAt(t, 3, { count: 2 });
        expect(next).toBeGreaterThan(t);
        t = next;
        expect(scheduler.allowAt(t, 3, { count: 2 })).toBe(true);
        admitted += 2;
      }
    }
    // d alone waits only for the key's rate (its ceil): 100 a second and the burst.
    expect(within(admitted, 20 + 100 * 10, 0.01)).toBe(true);
  });

  it("a lower prio leaves the ask of a waiting higher prio in the surplus", () => {
    const scheduler = new ClassScheduler(KEY, [{ name: "hi", rate: 0, prio: 0 }, { name: "lo", rate: 0, prio: 1 }], { clock: new FakeClock(0) });
    // lo takes the whole burst; hi asks for 5 at 10 ms: refused, it marks its turn.
    for (let i = 0; i < 20; i++) expect(scheduler.allowAt(0, 1, ONE)).toBe(true);
    expect(scheduler.allowAt(10, 0, { count: 5 })).toBe(false);
    // At 60 ms the key holds 6: lo may take 1 (leaving hi's 5), not 2.
    expect(scheduler.allowAt(60, 1, { count: 2 })).toBe(false);
    expect(scheduler.lastRefusal).toBe("lending");
    expect(scheduler.allowAt(60, 1, ONE)).toBe(true);
    expect(scheduler.allowAt(60, 0, { count: 5 })).toBe(true);
  });
});

describe("ClassScheduler: its state, as a store keeps it between steps", () => {
  /** JSON as a store writes it: a non-finite number as a string. */
  const roundTrip = <T>(value: T): T =>
    JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v)), (_k, v: unknown) =>
      v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : v,
    ) as T;

  it("answers every ask as a scheduler kept in memory does, rebuilt from its state at each step", () => {
    const kept = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    let state = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) }).state();
    let differ = 0;
    let admitted = 0;
    for (let t = 0; t < 3000; t += 0.7) {
      const c = Math.floor(t * 13) % CLASSES.length;
      const stepped = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(t), state: roundTrip(state) });
      const answer = stepped.allowAt(t, c, ONE);
      const earliest = answer ? 0 : stepped.earliestAt(t, c, ONE);
      state = stepped.state();
      if (answer !== kept.allowAt(t, c, ONE) || earliest !== (answer ? 0 : kept.earliestAt(t, c, ONE))) differ++;
      if (answer) admitted++;
    }
    expect(differ).toBe(0);
    // Saturating: the key's 100/s over 3 s and its burst of 20.
    expect(admitted).toBeGreaterThan(290);
    expect(admitted).toBeLessThanOrEqual(320);
  });

  it("keeps a class's state by name when the classes change; a new class starts full", () => {
    const scheduler = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    while (scheduler.allowAt(0, 0, ONE));
    const changed = [{ name: "new", rate: 10 }, CLASSES[0]!];
    const after = new ClassScheduler(KEY, changed, { clock: new FakeClock(0), state: scheduler.state() });
    expect(after.guaranteeLevelAt(0, 1)).toBe(scheduler.guaranteeLevelAt(0, 0));
    expect(after.guaranteeLevelAt(0, 0)).toBe(after.classes[0]!.burst);
    expect(after.keyLevelAt(0)).toBe(scheduler.keyLevelAt(0));
  });
});

describe("classes: definitions", () => {
  it("fill in the defaults: burst scaled from the key's, ceil the key's rate, weight the guarantee, prio 0", () => {
    expect(resolveClasses([{ name: "x", rate: 25 }], 100, 20)).toEqual([{ name: "x", rate: 25, burst: 5, ceil: 100, ceilBurst: 20, prio: 0, weight: 25 }]);
    // A key of burst 1 scales to less than an item: each guarantee bucket holds one at least, else it would serve nothing.
    expect(resolveClasses([{ name: "a", rate: 15 }, { name: "b", rate: 5 }], 20, 1).map((c) => c.burst)).toEqual([1, 1]);
  });

  it("refuse guarantees past the key's rate, a ceil below the guarantee, a name given twice", () => {
    expect(() => resolveClasses([{ name: "x", rate: 60 }, { name: "y", rate: 50 }], 100, 20)).toThrow(ClassDefinitionError);
    expect(() => resolveClasses([{ name: "x", rate: 60, ceil: 50 }], 100, 20)).toThrow(/below its guarantee/);
    expect(() => resolveClasses([{ name: "x", rate: 1 }, { name: "x", rate: 1 }], 100, 20)).toThrow(/defined twice/);
  });

  it("an unknown class names the defined ones", () => {
    const scheduler = new ClassScheduler(KEY, CLASSES, { clock: new FakeClock(0) });
    expect(() => scheduler.classIndex("e")).toThrow(UnknownClassError);
    expect(() => scheduler.classIndex("e")).toThrow('No class "e"; the classes are a, b, c, d');
  });
});
