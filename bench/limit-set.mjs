#!/usr/bin/env node
// Decisions a second of a private limit set on one core, beside one TokenBucket alone: Allow
// (drop) at arrivals 50 µs apart (20,000/s), about half of them refused, and Reserve with a wait
// limit. The set is three limits: 10,000/s burst 100, 100,000/s burst 1000, and 100,000 in any
// 10 s (the window keeps up to 100,000 records, so its pruning is part of the cost).
//
//   node bench/limit-set.mjs            # about 10 seconds
//
// Needs `npm run build`.
const { TokenBucket } = await import(new URL("../dist/core/token-bucket.js", import.meta.url).href);
const { LimitSet } = await import(new URL("../dist/core/limit-set.js", import.meta.url).href);
const { FakeClock } = await import(new URL("../dist/core/clock.js", import.meta.url).href);

const DECISIONS = 3_000_000;
const COSTS = { count: 1 };
const THREE = [
  { kind: "bucket", unit: "count", rate: 10_000, burst: 100 },
  { kind: "bucket", unit: "count", rate: 100_000, burst: 1000 },
  { kind: "window", unit: "count", n: 100_000, windowMs: 10_000 },
];

/** Runs `decide(nowMs)` at times 50 µs apart; answers decisions a second and the share admitted. */
function measure(decide) {
  let admitted = 0;
  const startMs = performance.now();
  for (let i = 0; i < DECISIONS; i++) if (decide(i / 20)) admitted++;
  const seconds = (performance.now() - startMs) / 1000;
  return { perSecond: DECISIONS / seconds, admittedShare: admitted / DECISIONS };
}

const cases = [
  ["Allow: one TokenBucket", () => {
    const bucket = new TokenBucket({ rate: 10_000, burst: 100, clock: new FakeClock(0) });
    return (t) => bucket.allowAt(t, 1);
  }],
  ["Allow: a LimitSet of that bucket alone", () => {
    const set = new LimitSet([THREE[0]], { clock: new FakeClock(0) });
    return (t) => set.allowAt(t, COSTS);
  }],
  ["Allow: a LimitSet of three limits", () => {
    const set = new LimitSet(THREE, { clock: new FakeClock(0) });
    return (t) => set.allowAt(t, COSTS);
  }],
  ["Reserve, max wait 1 ms: one TokenBucket", () => {
    const bucket = new TokenBucket({ rate: 10_000, burst: 100, clock: new FakeClock(0) });
    return (t) => bucket.reserveAt(t, 1, 1).ok;
  }],
  ["Reserve, max wait 1 ms: a LimitSet of three (admitAt, no reservation kept)", () => {
    const set = new LimitSet(THREE, { clock: new FakeClock(0) });
    return (t) => set.admitAt(t, COSTS, 1);
  }],
  ["Reserve, max wait 1 ms: a LimitSet of three (reserveAt, a reservation each)", () => {
    const set = new LimitSet(THREE, { clock: new FakeClock(0) });
    return (t) => set.reserveAt(t, COSTS, 1).ok;
  }],
];

console.log(`| case (${(DECISIONS / 1e6).toFixed(0)} M decisions, best of 3) | decisions/s | admitted |`);
console.log("| --- | ---: | ---: |");
for (const [name, make] of cases) {
  const runs = [0, 1, 2].map(() => measure(make()));
  const best = runs.reduce((a, b) => (a.perSecond > b.perSecond ? a : b));
  console.log(`| ${name} | ${Math.round(best.perSecond).toLocaleString("en-US")} | ${(best.admittedShare * 100).toFixed(1)} % |`);
}
