import type { Costs, LimitSpec } from "../../src/core/limit-spec.js";

/** mulberry32: a small seeded generator, so that a failing trace can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Three kinds at once: 10 a second (burst 4) and 6 in any second counting items, 300 bytes a second, 2 at once. */
export const MIXED_SET: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 10, burst: 4 },
  { kind: "window", unit: "count", n: 6, windowMs: 1000 },
  { kind: "bucket", unit: "bytes", rate: 300, burst: 500 },
  { kind: "window", unit: "bytes", n: 900, windowMs: 2500 },
  { kind: "concurrency", n: 3 },
];

/** One step of a trace: a take (Reserve with a wait limit; 0 is Allow), or a cancel, settle or release of an earlier take, by its index. */
export type TraceStep =
  | { atMs: number; op: "take"; costs: Costs; maxWaitMs: number }
  | { atMs: number; op: "cancel" | "release"; take: number }
  | { atMs: number; op: "settle"; take: number; costs: Costs };

/**
 * A seeded walk of `count` steps at non-decreasing times (some at the same
 * instant, a few stepping back, which the set clamps), against MIXED_SET's units.
 */
export function setTrace(seed: number, count: number): TraceStep[] {
  const next = seeded(seed);
  const steps: TraceStep[] = [];
  let atMs = 0;
  let takes = 0;
  for (let i = 0; i < count; i++) {
    atMs += next() < 0.3 ? 0 : Math.round(next() * 300 * 1000) / 1000;
    const stepAt = next() < 0.03 ? atMs - 50 : atMs;
    const roll = next();
    const take = Math.floor(next() * takes);
    if (takes > 0 && roll < 0.12) steps.push({ atMs: stepAt, op: "cancel", take });
    else if (takes > 0 && roll < 0.3) steps.push({ atMs: stepAt, op: "release", take });
    else if (takes > 0 && roll < 0.4) steps.push({ atMs: stepAt, op: "settle", take, costs: { count: Math.floor(next() * 3), bytes: Math.floor(next() * 400) } });
    else {
      const costs: Costs = next() < 0.1 ? { count: 1 } : { count: next() < 0.2 ? 2 : 1, bytes: Math.floor(next() * 450) + (next() < 0.2 ? 0.5 : 0) };
      const maxWaitMs = next() < 0.25 ? 0 : next() < 0.5 ? Math.round(next() * 2000) : Infinity;
      steps.push({ atMs: stepAt, op: "take", costs, maxWaitMs });
      takes++;
    }
  }
  return steps;
}
