import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSet } from "../../src/core/limit-set.js";
import type { Costs, LimitSpec } from "../../src/core/limit-spec.js";
import { TokenBucket } from "../../src/core/token-bucket.js";

/** 10 a second (burst 2) and 3 in any second, counting items; 100 bytes a second (burst 100), counting bytes. */
const API: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 10, burst: 2 },
  { kind: "window", unit: "count", n: 3, windowMs: 1000 },
  { kind: "bucket", unit: "bytes", rate: 100, burst: 100 },
];

function limitSet(specs: LimitSpec[] = API, startMs = 0): LimitSet {
  return new LimitSet(specs, { clock: new FakeClock(startMs) });
}

function levels(set: LimitSet, atMs: number): number[] {
  return Array.from({ length: set.size }, (_, i) => set.levelAt(atMs, i));
}

interface Row {
  atMs: number;
  costs: Costs;
  wantOk: boolean;
  wantWaitMs?: number;
  wantLimitedBy: number[];
}

function playAllow(set: LimitSet, rows: Row[]): void {
  rows.forEach((row, step) => {
    const ok = set.allowAt(row.atMs, row.costs);
    expect({ step, ok, limitedBy: set.limitedBy }).toEqual({ step, ok: row.wantOk, limitedBy: row.wantLimitedBy });
  });
}

function playReserve(set: LimitSet, rows: Row[], maxWaitMs = Infinity): void {
  rows.forEach((row, step) => {
    const reservation = set.reserveAt(row.atMs, row.costs, maxWaitMs);
    expect({ step, ok: reservation.ok, waitMs: reservation.waitMs, limitedBy: reservation.limitedBy }).toEqual({
      step,
      ok: row.wantOk,
      waitMs: row.wantOk ? expect.closeTo(row.wantWaitMs ?? 0, 9) : Infinity,
      limitedBy: row.wantLimitedBy,
    });
  });
}

describe("LimitSet allow: all or nothing at one instant", () => {
  it("admits while every limit admits, and names the limits that refuse", () => {
    playAllow(limitSet(), [
      { atMs: 0, costs: { count: 1, bytes: 40 }, wantOk: true, wantLimitedBy: [] },
      { atMs: 0, costs: { count: 1, bytes: 40 }, wantOk: true, wantLimitedBy: [] },
      // The burst of 2 is spent, and 40 bytes are short of 40 + 40 + 40.
      { atMs: 0, costs: { count: 1, bytes: 40 }, wantOk: false, wantLimitedBy: [1, 3] },
      { atMs: 100, costs: { count: 1, bytes: 10 }, wantOk: true, wantLimitedBy: [] },
      // The window holds 3 items of the last second: only it refuses.
      { atMs: 300, costs: { count: 1, bytes: 10 }, wantOk: false, wantLimitedBy: [2] },
      { atMs: 999, costs: { count: 1, bytes: 10 }, wantOk: false, wantLimitedBy: [2] },
      // (t - 1000, t] no longer holds the two items taken at 0.
      { atMs: 1000, costs: { count: 2, bytes: 10 }, wantOk: true, wantLimitedBy: [] },
      // One token in the count bucket; the window holds the 2 taken at 1000.
      { atMs: 1100, costs: { count: 2, bytes: 10 }, wantOk: false, wantLimitedBy: [1, 2] },
      // A unit the item does not have costs it nothing there.
      { atMs: 2200, costs: { count: 1 }, wantOk: true, wantLimitedBy: [] },
      { atMs: 2200, costs: { bytes: 100 }, wantOk: true, wantLimitedBy: [] },
    ]);
  });

  it("a refused take costs nothing in any limit (rate-limiter-flexible's union spent points in every limiter, its #280)", () => {
    const set = limitSet();
    set.allowAt(0, { count: 1, bytes: 90 });
    const before = levels(set, 50);
    // Refused by the bytes bucket alone: the count bucket and the window must not have taken their share.
    expect(set.allowAt(50, { count: 1, bytes: 50 })).toBe(false);
    expect(set.limitedBy).toEqual([3]);
    expect(levels(set, 50)).toEqual(before);
    // A twin that never saw the refusal decides every later item alike.
    const twin = limitSet();
    twin.allowAt(0, { count: 1, bytes: 90 });
    for (const atMs of [50, 60, 100, 200, 300, 1000, 1001]) {
      expect(set.allowAt(atMs, { count: 1, bytes: 5 })).toBe(twin.allowAt(atMs, { count: 1, bytes: 5 }));
      expect(levels(set, atMs)).toEqual(levels(twin, atMs));
    }
  });

  it("never admits a cost beyond a bucket's burst or a window's n, and says which", () => {
    playAllow(limitSet(), [
      { atMs: 0, costs: { count: 1, bytes: 101 }, wantOk: false, wantLimitedBy: [3] },
      { atMs: 0, costs: { count: 4, bytes: 1 }, wantOk: false, wantLimitedBy: [1, 2] },
      { atMs: 0, costs: { count: 2, bytes: 100 }, wantOk: true, wantLimitedBy: [] },
    ]);
    const set = limitSet();
    const reservation = set.reserveAt(0, { count: 1, bytes: 101 });
    expect(reservation).toMatchObject({ ok: false, limitedBy: [3], waitMs: Infinity });
    expect(levels(set, 0)).toEqual([2, 3, 100]);
  });

  it("rejects costs that are not numbers, naming the unit", () => {
    expect(() => limitSet().allowAt(0, { count: -1 })).toThrow("Expected `count` cost to be a non-negative finite number, got `-1` (number)");
    expect(() => limitSet().allowAt(0, { bytes: Number.NaN })).toThrow(RangeError);
  });
});

describe("LimitSet reserve: the earliest instant every limit admits", () => {
  it("waits for the limit that binds, first come first served, and names it", () => {
    playReserve(limitSet(), [
      { atMs: 0, costs: { count: 1, bytes: 10 }, wantOk: true, wantWaitMs: 0, wantLimitedBy: [] },
      { atMs: 0, costs: { count: 1, bytes: 10 }, wantOk: true, wantWaitMs: 0, wantLimitedBy: [] },
      // The count bucket: one more token in 100 ms.
      { atMs: 0, costs: { count: 1, bytes: 10 }, wantOk: true, wantWaitMs: 100, wantLimitedBy: [1] },
      // The window: the item at 0 leaves (t - 1000, t] at 1000.
      { atMs: 0, costs: { count: 1, bytes: 10 }, wantOk: true, wantWaitMs: 1000, wantLimitedBy: [2] },
      // The bytes bucket holds 90 at 1000 (taken to 80 by 100 ms, back to its burst by 1000, then 10 taken): it has 80 before.
      // The count bucket was full at 1000 and the last item took 1 there: its one token is due at 1000 too, so both bind.
      { atMs: 0, costs: { count: 1, bytes: 80 }, wantOk: true, wantWaitMs: 1000, wantLimitedBy: [1, 2] },
      // At 1000 the bytes bucket was taken to 10: 70 more need 0.6 s.
      { atMs: 0, costs: { count: 1, bytes: 70 }, wantOk: true, wantWaitMs: 1600, wantLimitedBy: [3] },
    ]);
  });

  it("a small item does not overtake a large one waiting (limiter's starvation)", () => {
    const set = limitSet([{ kind: "window", unit: "count", n: 10, windowMs: 1000 }]);
    expect(set.reserveAt(0, { count: 6 }).waitMs).toBe(0);
    expect(set.reserveAt(0, { count: 6 }).waitMs).toBe(1000);
    // 4 would fit at once, but the 6 waiting came first.
    expect(set.reserveAt(10, { count: 1 }).timeToActMs).toBe(1000);
    expect(set.allowAt(20, { count: 1 })).toBe(false);
  });

  it("lands at the earliest instant to the millisecond: one millisecond earlier some limit refuses", () => {
    const history: Array<[number, Costs]> = [
      [0, { count: 2, bytes: 50 }],
      [120, { count: 1, bytes: 50 }],
      [130, { count: 1, bytes: 90 }],
    ];
    const replay = () => {
      const set = limitSet();
      for (const [atMs, costs] of history) set.reserveAt(atMs, costs);
      return set;
    };
    const probe: Costs = { count: 1, bytes: 20 };
    const reservation = replay().reserveAt(140, probe);
    expect(reservation.ok).toBe(true);
    const actMs = reservation.timeToActMs;
    expect(Number.isInteger(actMs)).toBe(true);
    expect(replay().allowAt(actMs - 1, probe)).toBe(false);
    expect(replay().allowAt(actMs, probe)).toBe(true);
  });

  it("earliestAt answers the instant a refused item would be admitted, taking nothing (Retry-After)", () => {
    const set = limitSet();
    set.allowAt(0, { count: 2, bytes: 100 });
    expect(set.allowAt(0, { count: 1, bytes: 50 })).toBe(false);
    const before = levels(set, 0);
    expect(set.earliestAt(0, { count: 1, bytes: 50 })).toBe(500);
    expect(set.limitedBy).toEqual([3]);
    expect(levels(set, 0)).toEqual(before);
    expect(set.reserveAt(0, { count: 1, bytes: 50 }).timeToActMs).toBe(500);
    expect(set.earliestAt(0, { count: 1, bytes: 101 })).toBe(Infinity);
  });

  it("refuses a wait beyond maxWaitMs, touching nothing, and names the limits that alone would wait too long", () => {
    const set = limitSet();
    set.allowAt(0, { count: 2, bytes: 100 });
    const before = levels(set, 0);
    expect(set.reserveAt(0, { count: 1, bytes: 50 }, 400)).toMatchObject({ ok: false, limitedBy: [3] });
    expect(levels(set, 0)).toEqual(before);
    expect(set.reserveAt(0, { count: 1, bytes: 50 }, 500)).toMatchObject({ ok: true, waitMs: 500, limitedBy: [3] });
  });

  it("a bucket waiting for another limit banks nothing past its burst (no idle credit at the instant)", () => {
    // 1 a second, burst 2; at most 1 in 10 s.
    const set = limitSet([
      { kind: "bucket", unit: "count", rate: 1, burst: 2 },
      { kind: "window", unit: "count", n: 1, windowMs: 10_000 },
    ]);
    set.allowAt(0, { count: 1 });
    const reservation = set.reserveAt(0, { count: 1 });
    expect(reservation.timeToActMs).toBe(10_000);
    // At 10 s the bucket holds its burst, 2, and the item took 1 there: 1 is left, not the 10 a take at 0 would bank.
    expect(set.levelAt(10_000, 0)).toBeCloseTo(1, 12);
    expect(set.levelAt(20_000, 0)).toBe(2);
  });

  it("a set of one bucket agrees with TokenBucket: waits, levels and refusals", () => {
    const set = limitSet([{ kind: "bucket", unit: "count", rate: 3, burst: 4 }]);
    const bucket = new TokenBucket({ rate: 3, burst: 4, clock: new FakeClock(0) });
    const steps: Array<[number, number, number]> = [
      [0, 1, Infinity], [0, 3, Infinity], [0, 2, Infinity], [100, 1, 500], [100, 5, Infinity], [2000, 4, 0], [2000, 1, 400], [9000, 0, Infinity],
    ];
    for (const [atMs, n, maxWaitMs] of steps) {
      const mine = set.reserveAt(atMs, { count: n }, maxWaitMs);
      const theirs = bucket.reserveAt(atMs, n, maxWaitMs);
      expect([mine.ok, mine.timeToActMs, mine.waitMs]).toEqual([theirs.ok, theirs.timeToActMs, theirs.waitMs]);
      expect(set.levelAt(atMs, 0)).toBe(bucket.tokensAt(atMs));
    }
  });
});

describe("LimitSet cancel and settle", () => {
  it("cancel gives back to every limit: the bucket by CancelAt's rule, the window forgets the item", () => {
    const set = limitSet();
    set.allowAt(0, { count: 1, bytes: 10 });
    const before = levels(set, 50);
    const reservation = set.reserveAt(50, { count: 1, bytes: 80 });
    expect(reservation.ok).toBe(true);
    set.cancelAt(50, reservation);
    expect(levels(set, 50)).toEqual(before);
    // Cancelling twice gives back nothing more.
    set.cancelAt(50, reservation);
    expect(levels(set, 50)).toEqual(before);
  });

  it("cancelling a reservation not yet due frees its instant for the next item (an interrupted wait)", () => {
    const set = limitSet([{ kind: "window", unit: "count", n: 1, windowMs: 1000 }, { kind: "bucket", unit: "count", rate: 1, burst: 1 }]);
    set.allowAt(0, { count: 1 });
    const waiting = set.reserveAt(0, { count: 1 });
    expect(waiting.timeToActMs).toBe(1000);
    set.cancelAt(400, waiting);
    // The record at 1000 is forgotten and the bucket has its token back: the next item is due at 1000 again, not 2000.
    expect(set.reserveAt(500, { count: 1 }).timeToActMs).toBe(1000);
  });

  it("cancel after the time to act gives nothing back (x/time/rate), but frees a concurrency slot", () => {
    const set = limitSet([{ kind: "bucket", unit: "count", rate: 1, burst: 1 }, { kind: "concurrency", n: 1 }]);
    const reservation = set.reserveAt(0, { count: 1 });
    set.cancelAt(10, reservation);
    expect(set.levelAt(10, 0)).toBeCloseTo(0.01, 12);
    expect(set.levelAt(10, 1)).toBe(1);
  });

  it("settle up goes into debt that later items wait for; settle down gives back", () => {
    const set = limitSet([{ kind: "bucket", unit: "tokens", rate: 100, burst: 1000 }, { kind: "window", unit: "tokens", n: 1000, windowMs: 60_000 }]);
    const estimate = set.reserveAt(0, { tokens: 200 });
    set.settleAt(10, estimate, { tokens: 1200 });
    // The bucket owes 200 (at 10 ms it has gained 1); the window holds 1200 of 1000.
    expect(set.levelAt(10, 0)).toBeCloseTo(-199, 9);
    expect(set.levelAt(10, 1)).toBe(-200);
    const next = set.reserveAt(10, { tokens: 1 });
    // The window's record leaves at 60 s.
    expect(next).toMatchObject({ ok: true, timeToActMs: 60_000, limitedBy: [2] });
    set.cancelAt(10, next);
    set.settleAt(20, estimate, { tokens: 100 });
    // Back to a cost of 100: the window holds 100; the bucket gets 1100 back, capped by what a take of 100 at 0 would leave, 900, plus 2 gained.
    expect(set.levelAt(20, 1)).toBe(900);
    expect(set.levelAt(20, 0)).toBeCloseTo(902, 9);
  });

  it("settle down long after the item gives back only what the bucket's cap would not have cut off", () => {
    const set = limitSet([{ kind: "bucket", unit: "tokens", rate: 10, burst: 100 }]);
    const reservation = set.reserveAt(0, { tokens: 50 });
    // By 5 s the bucket would be full with or without the 50: nothing is given back.
    set.settleAt(5000, reservation, { tokens: 0 });
    expect(set.levelAt(5000, 0)).toBe(100);
    const second = set.reserveAt(5000, { tokens: 100 });
    set.allowAt(5000, { tokens: 0 });
    // At 6 s it holds 10; had the take been 40 rather than 100, it would hold 70: 60 back.
    set.settleAt(6000, second, { tokens: 40 });
    expect(set.levelAt(6000, 0)).toBeCloseTo(70, 9);
  });
});

describe("LimitSet concurrency", () => {
  it("holds a slot until released; Allow refuses and Reserve reports no slot when none is free", () => {
    const set = limitSet([{ kind: "concurrency", n: 2 }, { kind: "bucket", unit: "count", rate: 1000, burst: 10 }]);
    const first = set.reserveAt(0, { count: 1 });
    expect(set.allowAt(0, { count: 1 })).toBe(true);
    expect(set.allowAt(0, { count: 1 })).toBe(false);
    expect(set.limitedBy).toEqual([1]);
    expect(set.lastNoSlot).toBe(true);
    const refused = set.reserveAt(0, { count: 1 });
    expect(refused).toMatchObject({ ok: false, noSlot: true, limitedBy: [1] });
    expect(set.levelAt(0, 1)).toBe(8);
    set.releaseAt(5, first);
    set.releaseAt(5, first);
    expect(set.levelAt(5, 0)).toBe(1);
    expect(set.reserveAt(5, { count: 1 }).ok).toBe(true);
  });
});

describe("LimitSet specs", () => {
  it.each([
    [[], "Expected `limits` to be an array of 1 to 31 limits, got `0 limits`"],
    [[{ kind: "bucket", unit: "count", rate: -1, burst: 1 }], "Expected `limits[0].rate` to be a non-negative number or Infinity, got `-1` (number)"],
    [[{ kind: "window", unit: "count", n: 1, windowMs: 0 }], "Expected `limits[0].windowMs` to be a positive finite number of milliseconds, got `0` (number)"],
    [[{ kind: "concurrency", n: 1.5 }], "Expected `limits[0].n` to be a whole number of slots, got `1.5` (number)"],
    [[{ kind: "queue", n: 1 }], 'Expected `limits[0].kind` to be "bucket", "window" or "concurrency", got `queue`'],
    [[{ kind: "window", unit: "", n: 1, windowMs: 1 }], 'Expected `limits[0].unit` to be a unit such as "count" or "bytes", got ``'],
  ])("refuses %j", (specs, message) => {
    expect(() => new LimitSet(specs as LimitSpec[])).toThrow(message);
  });
});

describe("LimitSet.reserveInDebtAt: an item that must go out whole, past a bucket's burst", () => {
  const SPECS: LimitSpec[] = [
    { kind: "bucket", unit: "bytes", rate: 10, burst: 5 },
    { kind: "window", unit: "bytes", n: 20, windowMs: 1000 },
  ];

  it("the bucket waits to be full and owes the rest; the window counts the whole item at that instant", () => {
    const set = limitSet(SPECS);
    expect(set.allowAt(0, { bytes: 3 })).toBe(true);
    const reservation = set.reserveInDebtAt(0, { bytes: 12 });
    // Full (5) at 300 ms: it takes 5 and owes 7.
    expect([reservation.ok, reservation.timeToActMs, Array.from(reservation.amounts)]).toEqual([true, 300, [12, 12]]);
    expect(levels(set, 300)).toEqual([-7, 5]);
    // The next item waits for the debt: 3 tokens from -7 is a second.
    expect(set.reserveAt(300, { bytes: 3 }).timeToActMs).toBe(1300);
  });

  it("a window must admit the whole item: it waits for room, or refuses one above its n, touching nothing", () => {
    const set = limitSet(SPECS);
    expect(set.allowAt(0, { bytes: 5 })).toBe(true);
    expect(set.allowAt(500, { bytes: 5 })).toBe(true);
    // 10 in the window: 12 more fit once the 5 of 0 ms left, at 1000 ms.
    expect(set.reserveInDebtAt(500, { bytes: 12 }).timeToActMs).toBe(1000);
    const before = levels(set, 1000);
    const refused = set.reserveInDebtAt(1000, { bytes: 21 });
    expect([refused.ok, refused.limitedBy]).toEqual([false, [2]]);
    expect(levels(set, 1000)).toEqual(before);
  });

  it("cancelled before it is due, it gives the whole item back: the bucket its debt too, the window the record", () => {
    const set = limitSet(SPECS);
    const reservation = set.reserveInDebtAt(0, { bytes: 12 });
    set.cancelAt(0, reservation);
    expect(levels(set, 0)).toEqual([5, 20]);
  });
});

describe("LimitSet given costs that are not an object", () => {
  it.each([null, undefined, 5, "count"])("refuses %j with a RangeError that says what to give, touching nothing", (costs) => {
    const set = limitSet();
    const message = `Expected \`costs\` to be an object of costs by unit, such as { count: 1 }, got \`${String(costs)}\``;
    expect(() => set.allowAt(0, costs as never)).toThrow(new RangeError(message));
    expect(() => set.reserveAt(0, costs as never)).toThrow(new RangeError(message));
    const reservation = set.reserveAt(0, { count: 1 });
    expect(() => set.settleAt(0, reservation, costs as never)).toThrow(new RangeError(message));
    expect(levels(set, 0)).toEqual([1, 2, 100]);
  });
});

describe("LimitSet.capLevelAt", () => {
  it("lowers the buckets of the unit to the server's count, never raises one, and leaves windows and other units alone", () => {
    const set = new LimitSet(
      [
        { kind: "bucket", unit: "count", rate: 10, burst: 10 },
        { kind: "window", unit: "count", n: 100, windowMs: 60_000 },
        { kind: "bucket", unit: "cost", rate: 1000, burst: 5000 },
      ],
      { clock: new FakeClock() },
    );
    set.capLevelAt(0, "count", 2);
    expect([set.levelAt(0, 0), set.levelAt(0, 1), set.levelAt(0, 2)]).toEqual([2, 100, 5000]);
    // Below the server's count already: left as it is.
    set.capLevelAt(0, "count", 7);
    expect(set.levelAt(0, 0)).toBe(2);
    set.capLevelAt(0, "cost", 1200);
    expect(set.levelAt(0, 2)).toBe(1200);
    // The rate goes on from the lowered level.
    expect(set.levelAt(500, 0)).toBe(7);
    expect(() => set.capLevelAt(0, "count", -1)).toThrow("Expected `most` to be a non-negative number, got `-1`");
  });
});

describe("LimitSet.holdEmptyUntilAt", () => {
  it("puts the pause's debt in the buckets of the unit, so they are empty when it ends, and leaves the others", () => {
    const set = new LimitSet(
      [
        { kind: "bucket", unit: "count", rate: 10, burst: 10 },
        { kind: "bucket", unit: "cost", rate: 1000, burst: 5000 },
      ],
      { clock: new FakeClock() },
    );
    set.holdEmptyUntilAt(0, "count", 1500);
    expect(set.levelAt(0, 0)).toBeCloseTo(-15, 9);
    expect(set.levelAt(1500, 0)).toBeCloseTo(0, 9);
    expect(set.levelAt(0, 1)).toBe(5000);
    // An earlier end does not shorten it; a later one lengthens it to its own end, not the sum.
    set.holdEmptyUntilAt(500, "count", 1000);
    expect(set.levelAt(1500, 0)).toBeCloseTo(0, 9);
    set.holdEmptyUntilAt(500, "count", 2500);
    expect(set.levelAt(2500, 0)).toBeCloseTo(0, 9);
  });
});

describe("LimitSet roomAt: each limit's room for several, alone (Retry-After's spread)", () => {
  it("a bucket refills the amount less its level at its rate, past its burst too; a window as SlidingWindow.roomAt; a slot now or never", () => {
    const clock = new FakeClock(0);
    const set = new LimitSet(
      [
        { kind: "bucket", unit: "count", rate: 5, burst: 5 },
        { kind: "window", unit: "count", n: 2, windowMs: 10_000 },
        { kind: "concurrency", n: 1 },
      ],
      { clock },
    );
    expect(set.allowAt(0, { count: 1 })).toBe(true);
    // The bucket holds 4: 4 fit now, the 10th once 6 more came (1.2 s); the window has room for 1, the 2nd at 10 s.
    expect([4, 10].map((amount) => set.roomAt(0, 0, amount))).toEqual([0, 1200]);
    expect([1, 2, 3].map((amount) => set.roomAt(0, 1, amount))).toEqual([0, 10_000, 10_000]);
    expect(set.roomAt(0, 2, 1)).toBe(Infinity);
    expect(() => set.roomAt(0, 3, 1)).toThrow("Expected `index` to be a limit's index from 0 to 2, got `3`");
  });
});
