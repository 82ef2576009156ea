/**
 * LimitSet against an oracle written apart from it, on seeded random traces:
 * buckets that replay every take from the start (x/time/rate's level, taken
 * at the item's instant and capped at the burst there), exact sliding windows
 * that sum their records by brute force, and the earliest instant found by
 * trying every candidate in order (the present, each bucket's own time, each
 * record's time plus W). Both must agree event by event, drop and queue; and
 * over a simulated hour every bucket and window must hold its own guarantee,
 * checked at every window start.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSet } from "../../src/core/limit-set.js";
import type { BucketSpec, LimitSpec, WindowSpec } from "../../src/core/limit-spec.js";
import { TokenBucket } from "../../src/core/token-bucket.js";

/** mulberry32: a small seeded generator, so that a failing trace can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

type Take = { atMs: number; cost: number };

class OracleBucket {
  readonly takes: Take[] = [];
  constructor(readonly spec: BucketSpec) {}

  /** The level at t, replaying every take from a full bucket at 0. */
  levelAt(t: number): number {
    const { rate, burst } = this.spec;
    let level = burst;
    let last = 0;
    for (const take of this.takes) {
      level = Math.min(burst, level + ((take.atMs - last) / 1000) * rate) - take.cost;
      last = take.atMs;
    }
    return Math.min(burst, level + ((Math.max(t, last) - last) / 1000) * rate);
  }

  /** x/time/rate's rule: admitted when the shortfall is under a nanosecond's worth. */
  admits(t: number, cost: number): boolean {
    if (cost > this.spec.burst) return false;
    const short = cost - this.levelAt(t);
    return short <= 0 || Math.trunc((short / this.spec.rate) * 1e9) === 0;
  }

  /** Its own earliest time from t: when the level (rising until the next take) reaches the cost. */
  candidate(t: number, cost: number): number {
    const short = cost - this.levelAt(t);
    return short <= 0 ? t : t + Math.trunc((short / this.spec.rate) * 1e9) / 1e6;
  }
}

class OracleWindow {
  readonly records: Take[] = [];
  constructor(readonly spec: WindowSpec) {}

  admits(t: number, cost: number): boolean {
    let held = 0;
    // (t - W, t], written as "leaves at its time + W", the instant the set answers.
    for (const record of this.records) if (record.atMs + this.spec.windowMs > t && record.atMs <= t) held += record.cost;
    return held + cost <= this.spec.n;
  }
}

/** The composition, the naive way. */
class Oracle {
  readonly buckets: OracleBucket[] = [];
  readonly windows: OracleWindow[] = [];
  /** First come, first served: no item acts before the one before it. */
  lastActMs = 0;

  constructor(specs: LimitSpec[]) {
    for (const spec of specs) {
      if (spec.kind === "bucket") this.buckets.push(new OracleBucket(spec));
      else if (spec.kind === "window") this.windows.push(new OracleWindow(spec));
    }
  }

  admitsAll(t: number, cost: number): boolean {
    return this.buckets.every((b) => b.admits(t, cost)) && this.windows.every((w) => w.admits(t, cost));
  }

  /** The earliest candidate instant at which every limit admits; Infinity if none can. */
  earliest(now: number, cost: number): number {
    if (this.buckets.some((b) => cost > b.spec.burst) || this.windows.some((w) => cost > w.spec.n)) return Infinity;
    const start = Math.max(now, this.lastActMs);
    const candidates = new Set<number>([start]);
    for (const w of this.windows) for (const r of w.records) if (r.atMs + w.spec.windowMs > start) candidates.add(r.atMs + w.spec.windowMs);
    for (const b of this.buckets) candidates.add(b.candidate(start, cost));
    // In time order, the first candidate where all admit; a bucket that refuses a candidate adds its own time from there.
    for (;;) {
      const sorted = [...candidates].sort((x, y) => x - y);
      let added = false;
      for (const c of sorted) {
        if (this.admitsAll(c, cost)) return c;
        for (const b of this.buckets) {
          const later = b.candidate(c, cost);
          if (later > c && !candidates.has(later)) {
            candidates.add(later);
            added = true;
          }
        }
        if (added) break;
      }
      if (!added) return Infinity;
    }
  }

  take(actMs: number, cost: number): void {
    this.lastActMs = actMs;
    for (const b of this.buckets) b.takes.push({ atMs: actMs, cost });
    for (const w of this.windows) w.records.push({ atMs: actMs, cost });
  }
}

interface Event {
  atMs: number;
  cost: number;
}

function trace(seed: number, count: number, meanGapMs: number, maxCost: number): Event[] {
  const next = random(seed);
  const events: Event[] = [];
  let atMs = 0;
  for (let i = 0; i < count; i++) {
    // Whole milliseconds and clusters at one instant, where boundaries are met exactly.
    if (next() > 0.3) atMs += Math.floor(next() * 2 * meanGapMs);
    events.push({ atMs, cost: 1 + Math.floor(next() * maxCost) });
  }
  return events;
}

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
