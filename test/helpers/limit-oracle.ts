/**
 * A naive composition of limits, written apart from LimitSet to check it:
 * buckets that replay every take from the start (x/time/rate's level, taken
 * at the item's instant and capped at the burst there), exact sliding windows
 * that sum their records by brute force, and the earliest instant found by
 * trying every candidate in order (the present, each bucket's own time, each
 * record's time plus W). Shared by the core's oracle test and simulate's.
 */
import type { BucketSpec, LimitSpec, WindowSpec } from "../../src/core/limit-spec.js";

/** mulberry32: a small seeded generator, so that a failing trace can be replayed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

export type Take = { atMs: number; cost: number };

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
export class Oracle {
  readonly buckets: OracleBucket[] = [];
  readonly windows: OracleWindow[] = [];
  /** First come, first served: no item acts before the one before it. */
  lastActMs = 0;

  constructor(readonly specs: LimitSpec[]) {
    for (const spec of specs) {
      if (spec.kind === "bucket") this.buckets.push(new OracleBucket(spec));
      else if (spec.kind === "window") this.windows.push(new OracleWindow(spec));
    }
  }

  /** The limits (from 1, in the specs' order) that would not admit the item at t. */
  refusing(t: number, cost: number): number[] {
    const refusing: number[] = [];
    this.specs.forEach((spec, index) => {
      const limit = spec.kind === "bucket" ? this.buckets[this.buckets.findIndex((b) => b.spec === spec)] : this.windows[this.windows.findIndex((w) => w.spec === spec)];
      if (limit !== undefined && !limit.admits(t, cost)) refusing.push(index + 1);
    });
    return refusing;
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

export interface Event {
  atMs: number;
  cost: number;
}

/** A seeded trace in whole milliseconds, with clusters at one instant where boundaries are met exactly. */
export function trace(seed: number, count: number, meanGapMs: number, maxCost: number): Event[] {
  const next = random(seed);
  const events: Event[] = [];
  let atMs = 0;
  for (let i = 0; i < count; i++) {
    if (next() > 0.3) atMs += Math.floor(next() * 2 * meanGapMs);
    events.push({ atMs, cost: 1 + Math.floor(next() * maxCost) });
  }
  return events;
}

