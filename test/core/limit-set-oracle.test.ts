/**
 * LimitSet against the naive composition of test/helpers/limit-oracle.ts on
 * seeded random traces: both must agree event by event, drop and queue; and
 * over a simulated hour every bucket and window must hold its own guarantee,
 * checked at every window start.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSet } from "../../src/core/limit-set.js";
import type { BucketSpec, LimitSpec, WindowSpec } from "../../src/core/limit-spec.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { Oracle, random, type Take, trace } from "../helpers/limit-oracle.js";

const SETS: Array<[string, LimitSpec[]]> = [
  [
    "two rates and a window",
    [
      { kind: "bucket", unit: "count", rate: 5, burst: 8 },
      { kind: "bucket", unit: "count", rate: 20, burst: 3 },
      { kind: "window", unit: "count", n: 12, windowMs: 4000 },
    ],
  ],
  [
    "a rate and two windows",
    [
      { kind: "window", unit: "count", n: 4, windowMs: 1000 },
      { kind: "bucket", unit: "count", rate: 2.5, burst: 4 },
      { kind: "window", unit: "count", n: 30, windowMs: 20_000 },
    ],
  ],
];

describe("LimitSet agrees with the naive composition, event by event", () => {
  for (const [name, specs] of SETS) {
    for (const seed of [1, 2, 3]) {
      it(`${name}, drop, seed ${seed}`, () => {
        const set = new LimitSet(specs, { clock: new FakeClock(0) });
        const oracle = new Oracle(specs);
        for (const [index, event] of trace(seed, 600, 150, 3).entries()) {
          const want = oracle.admitsAll(event.atMs, event.cost);
          expect({ index, ok: set.allowAt(event.atMs, { count: event.cost }) }).toEqual({ index, ok: want });
          if (want) oracle.take(event.atMs, event.cost);
        }
      });

      for (const maxWaitMs of [Infinity, 1500]) {
        it(`${name}, queue with max wait ${maxWaitMs}, seed ${seed}`, () => {
          const set = new LimitSet(specs, { clock: new FakeClock(0) });
          const oracle = new Oracle(specs);
          let waited = 0;
          for (const [index, event] of trace(seed, 400, 250, 3).entries()) {
            const actMs = oracle.earliest(event.atMs, event.cost);
            const wantOk = actMs - event.atMs <= maxWaitMs;
            const reservation = set.reserveAt(event.atMs, { count: event.cost }, maxWaitMs);
            expect({ index, ok: reservation.ok }).toEqual({ index, ok: wantOk });
            if (!wantOk) continue;
            // The two sum their buckets' levels in different orders: they may round a nanosecond apart, never more.
            expect({ index, actMs: reservation.timeToActMs }).toEqual({ index, actMs: expect.closeTo(actMs, 5) });
            if (actMs > event.atMs) waited++;
            oracle.take(reservation.timeToActMs, event.cost);
          }
          expect(waited).toBeGreaterThan(50);
        });
      }
    }
  }

  it("windows with cancelled reservations: a cancelled item is forgotten, and the queue behind it moves up", () => {
    const specs: LimitSpec[] = [
      { kind: "window", unit: "count", n: 5, windowMs: 1000 },
      { kind: "window", unit: "count", n: 12, windowMs: 5000 },
    ];
    for (const seed of [7, 8, 9]) {
      const set = new LimitSet(specs, { clock: new FakeClock(0) });
      const oracle = new Oracle(specs);
      const next = random(seed);
      const pending: Array<{ reservation: ReturnType<LimitSet["reserveAt"]>; cost: number }> = [];
      let cancelled = 0;
      for (const [index, event] of trace(seed, 400, 120, 2).entries()) {
        // Now and then an item still waiting gives up (an interrupted wait).
        const waiting = pending.filter((p) => p.reservation.timeToActMs >= event.atMs && !p.reservation.cancelled);
        if (waiting.length > 0 && next() < 0.3) {
          const gone = waiting[Math.floor(next() * waiting.length)]!;
          set.cancelAt(event.atMs, gone.reservation);
          for (const w of oracle.windows) w.records.splice(w.records.findIndex((r) => r.atMs === gone.reservation.timeToActMs && r.cost === gone.cost), 1);
          oracle.lastActMs = Math.max(0, ...oracle.windows[0]!.records.map((r) => r.atMs));
          cancelled++;
        }
        const actMs = oracle.earliest(event.atMs, event.cost);
        const reservation = set.reserveAt(event.atMs, { count: event.cost });
        expect({ index, actMs: reservation.timeToActMs }).toEqual({ index, actMs });
        oracle.take(actMs, event.cost);
        pending.push({ reservation, cost: event.cost });
      }
      expect(cancelled).toBeGreaterThan(20);
    }
  });

  it("a set of one bucket agrees exactly with TokenBucket (x/time/rate), drop and queue", () => {
    for (const seed of [4, 5, 6]) {
      for (const maxWaitMs of [0, 700, Infinity]) {
        const spec = { kind: "bucket" as const, unit: "count", rate: 3 + seed, burst: seed };
        const set = new LimitSet([spec], { clock: new FakeClock(0) });
        const bucket = new TokenBucket({ rate: spec.rate, burst: spec.burst, clock: new FakeClock(0) });
        for (const [index, event] of trace(seed, 2000, 90, seed + 1).entries()) {
          const atMs = event.atMs + (seed % 2 === 0 ? 0 : 1 / 3);
          const mine = set.reserveAt(atMs, { count: event.cost }, maxWaitMs);
          const theirs = bucket.reserveAt(atMs, event.cost, maxWaitMs);
          expect({ index, ok: mine.ok, act: mine.timeToActMs, wait: mine.waitMs, level: set.levelAt(atMs, 0) }).toEqual({
            index,
            ok: theirs.ok,
            act: theirs.timeToActMs,
            wait: theirs.waitMs,
            level: bucket.tokensAt(atMs),
          });
        }
      }
    }
  });
});

describe("LimitSet over a simulated hour: each limit keeps its own guarantee", () => {
  it("no bucket admits more than b + r·T in any T, no window more than N in any W (every window start, brute force)", () => {
    const bucket: BucketSpec = { kind: "bucket", unit: "count", rate: 2, burst: 10 };
    const window: WindowSpec = { kind: "window", unit: "count", n: 60, windowMs: 60_000 };
    const set = new LimitSet([bucket, window], { clock: new FakeClock(0) });
    const next = random(99);
    const acts: Take[] = [];
    for (let atMs = 0; atMs < 3_600_000; atMs += Math.floor(next() * 600)) {
      const cost = 1 + Math.floor(next() * 2);
      // Drop most of the time, queue with a bounded wait some of the time: both paths take.
      const reservation = next() < 0.5 ? set.reserveAt(atMs, { count: cost }, 5000) : set.allowAt(atMs, { count: cost }) ? { ok: true, timeToActMs: atMs } : { ok: false, timeToActMs: 0 };
      if (reservation.ok) acts.push({ atMs: reservation.timeToActMs, cost });
    }
    acts.sort((a, b) => a.atMs - b.atMs);
    expect(acts.length).toBeGreaterThan(1000);
    let bucketExcess = -Infinity;
    let windowMost = 0;
    for (let i = 0; i < acts.length; i++) {
      let sum = 0;
      for (let j = i; j < acts.length; j++) {
        sum += acts[j]!.cost;
        const spanMs = acts[j]!.atMs - acts[i]!.atMs;
        // x/time/rate admits a wait under 1 ns as none: the envelope holds over T plus that nanosecond.
        bucketExcess = Math.max(bucketExcess, sum - (bucket.burst + (bucket.rate * (spanMs + 1e-6)) / 1000 + 1e-9));
        // Any interval (t - W, t]: the item at i has left it from its time + W on.
        if (acts[j]!.atMs < acts[i]!.atMs + window.windowMs) windowMost = Math.max(windowMost, sum);
      }
    }
    expect(bucketExcess).toBeLessThanOrEqual(0);
    expect(windowMost).toBeLessThanOrEqual(window.n);
    // Both bounds were reached, so both were tested.
    expect(bucketExcess).toBeGreaterThan(-1);
    expect(windowMost).toBe(window.n);
  });

  it("a window's memory stays within N records as it slides", () => {
    const set = new LimitSet([{ kind: "window", unit: "count", n: 50, windowMs: 1000 }], { clock: new FakeClock(0) });
    let most = 0;
    for (let atMs = 0; atMs < 600_000; atMs += 7) {
      set.allowAt(atMs, { count: 1 });
      most = Math.max(most, set.windowRecords(0));
    }
    expect(most).toBe(50);
  });
});
