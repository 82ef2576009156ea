import { describe, expect, it } from "vitest";
import { Simulator, type SimulatorOptions } from "../../src/simulate/simulator.js";

function simulator(options: Partial<SimulatorOptions> & Pick<SimulatorOptions, "ratePerSecond" | "burst">): Simulator {
  return new Simulator({ policy: "drop", maxWaitMs: Infinity, perKey: false, maxKeys: Infinity, ...options });
}

interface Row {
  atMs: number;
  cost: number;
  key?: string;
  wantAdmitted: boolean;
  wantWaitMs?: number;
  wantTokens?: number;
}

/** Plays a hand-worked table through one simulator, row by row. */
function play(sim: Simulator, rows: readonly Row[]): void {
  rows.forEach((row, index) => {
    const admitted = sim.offer(row.atMs, row.cost, row.key);
    const where = `row ${index} at ${row.atMs} ms`;
    expect(admitted, where).toBe(row.wantAdmitted);
    if (row.wantWaitMs !== undefined) expect(sim.waitMs, where).toBeCloseTo(row.wantWaitMs, 9);
    if (row.wantTokens !== undefined) expect(sim.tokens, where).toBeCloseTo(row.wantTokens, 9);
  });
}

describe("drop (AllowN)", () => {
  it("rate 5, burst 10, 60 steady arrivals at 8/s: 46 admitted, the first 25 in a row, the first refusal at 3.125 s", () => {
    const sim = simulator({ ratePerSecond: 5, burst: 10 });
    const decisions = Array.from({ length: 60 }, (_, i) => ({ atMs: i * 125, admitted: sim.offer(i * 125, 1, undefined) }));
    expect(decisions.filter((d) => d.admitted)).toHaveLength(46);
    expect(decisions.findIndex((d) => !d.admitted)).toBe(25);
    expect(decisions.find((d) => !d.admitted)!.atMs).toBe(3125);
    // 10 + 5 × 7.375 = 46.875 tokens over the run: 46 taken, 0.875 left.
    expect(sim.tokens).toBeCloseTo(0.875, 9);
  });

  it("60 arrivals at one instant: exactly the first 10", () => {
    const sim = simulator({ ratePerSecond: 5, burst: 10 });
    const admitted = Array.from({ length: 60 }, () => sim.offer(0, 1, undefined));
    expect(admitted.slice(0, 10).every(Boolean)).toBe(true);
    expect(admitted.slice(10).some(Boolean)).toBe(false);
  });

  it("a refused Allow changes nothing (x/time/rate: AllowN = reserveN(t, n, 0).ok)", () => {
    // rate 1/s, burst 2, worked by hand: the level is min(2, level + elapsed × 1) before each decision.
    play(simulator({ ratePerSecond: 1, burst: 2 }), [
      { atMs: 0, cost: 2, wantAdmitted: true, wantTokens: 0 },
      { atMs: 500, cost: 1, wantAdmitted: false, wantTokens: 0.5 }, // 0.5 < 1: refused, level untouched
      { atMs: 1000, cost: 1, wantAdmitted: true, wantTokens: 0 }, // 1.0: had the refusal taken anything this would fail
      { atMs: 1000, cost: 1, wantAdmitted: false, wantTokens: 0 },
      { atMs: 2500, cost: 3, wantAdmitted: false, wantTokens: 1.5 }, // more than the burst: never
      { atMs: 2500, cost: 1.5, wantAdmitted: true, wantTokens: 0 },
      { atMs: 1000, cost: 1, wantAdmitted: false, wantTokens: 0 }, // time running backwards is clamped, never credited
      { atMs: 10_000, cost: 1, wantAdmitted: true, wantTokens: 1 }, // the level never exceeds the burst
    ]);
  });

  it("a wait under 1 ns is no wait: floating-point rounding never refuses an arrival that is on time (x/time/rate)", () => {
    // rate 3/s: one token takes 333,333,333.3 ns. At 333.333333 ms the level is 0.999999999,
    // short by 1e-9 tokens = 0.33 ns, truncated to 0 ns: admitted, as in Go.
    play(simulator({ ratePerSecond: 3, burst: 1 }), [
      { atMs: 0, cost: 1, wantAdmitted: true },
      { atMs: 333.333333, cost: 1, wantAdmitted: true, wantTokens: -1e-9 },
    ]);
    // One nanosecond earlier the shortfall is 4e-9 tokens = 1.33 ns, truncated to 1 ns: refused.
    play(simulator({ ratePerSecond: 3, burst: 1 }), [
      { atMs: 0, cost: 1, wantAdmitted: true },
      { atMs: 333.333332, cost: 1, wantAdmitted: false, wantTokens: 0.999999996 },
    ]);
  });
});

describe("queue (ReserveN)", () => {
  it("reserves in order, letting the level go negative, and waits -level / rate", () => {
    // rate 2/s, burst 2: each token takes 500 ms.
    play(simulator({ ratePerSecond: 2, burst: 2, policy: "queue" }), [
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0, wantTokens: 1 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0, wantTokens: 0 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 500, wantTokens: -1 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 1000, wantTokens: -2 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 1500, wantTokens: -3 },
      { atMs: 1000, cost: 1, wantAdmitted: true, wantWaitMs: 1000, wantTokens: -2 }, // -3 + 2 = -1, then -2
      { atMs: 1000, cost: 3, wantAdmitted: false, wantWaitMs: 0, wantTokens: -2 }, // more than the burst: refused, nothing taken
      { atMs: 5000, cost: 2, wantAdmitted: true, wantWaitMs: 0, wantTokens: 0 }, // -2 + 8 capped at 2
    ]);
  });

  it("with --max-wait refuses what would wait longer, changing nothing, and admits a wait equal to the limit", () => {
    play(simulator({ ratePerSecond: 2, burst: 2, policy: "queue", maxWaitMs: 1000 }), [
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0, wantTokens: 1 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0, wantTokens: 0 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 500, wantTokens: -1 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 1000, wantTokens: -2 }, // exactly the limit: admitted (<=)
      { atMs: 0, cost: 1, wantAdmitted: false, wantTokens: -2 }, // 1500 ms > 1000 ms: refused, level unchanged
      { atMs: 250, cost: 1, wantAdmitted: false, wantTokens: -1.5 }, // would wait 1250 ms
      { atMs: 500, cost: 1, wantAdmitted: true, wantWaitMs: 1000, wantTokens: -2 },
      { atMs: 500, cost: 0.5, wantAdmitted: false, wantTokens: -2 }, // 1250 ms
    ]);
  });

  it("applies the 1 ns boundary to the wait: 0.33 ns is no wait, 1.33 ns is 1 ns", () => {
    play(simulator({ ratePerSecond: 3, burst: 1, policy: "queue" }), [
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0 },
      { atMs: 333.333333, cost: 1, wantAdmitted: true, wantWaitMs: 0 },
    ]);
    play(simulator({ ratePerSecond: 3, burst: 1, policy: "queue", maxWaitMs: 0 }), [
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0 },
      { atMs: 333.333332, cost: 1, wantAdmitted: false }, // 1 ns > a limit of 0
    ]);
    play(simulator({ ratePerSecond: 3, burst: 1, policy: "queue" }), [
      { atMs: 0, cost: 1, wantAdmitted: true, wantWaitMs: 0 },
      { atMs: 333.333332, cost: 1, wantAdmitted: true, wantWaitMs: 0.000001 },
    ]);
  });
});

describe("per key", () => {
  it("gives each key its own full bucket", () => {
    play(simulator({ ratePerSecond: 1, burst: 2, perKey: true }), [
      { atMs: 0, cost: 2, key: "a", wantAdmitted: true },
      { atMs: 0, cost: 1, key: "a", wantAdmitted: false },
      { atMs: 0, cost: 2, key: "b", wantAdmitted: true },
      { atMs: 1000, cost: 1, key: "a", wantAdmitted: true },
    ]);
  });

  it("evicts the least recently used key past --max-keys; an evicted key comes back with a full bucket", () => {
    const sim = simulator({ ratePerSecond: 0.001, burst: 1, perKey: true, maxKeys: 2 });
    play(sim, [
      { atMs: 0, cost: 1, key: "a", wantAdmitted: true },
      { atMs: 1, cost: 1, key: "b", wantAdmitted: true },
      { atMs: 2, cost: 1, key: "a", wantAdmitted: false }, // touches a: b is now the least recently used
      { atMs: 3, cost: 1, key: "c", wantAdmitted: true }, // evicts b, not a
      { atMs: 4, cost: 1, key: "a", wantAdmitted: false }, // a kept its empty bucket
      { atMs: 5, cost: 1, key: "b", wantAdmitted: true }, // b was evicted: a fresh, full bucket (evicts c)
      { atMs: 6, cost: 1, key: "c", wantAdmitted: true }, // c too (evicts a)
    ]);
    expect(sim.evictions).toBe(3);
    expect(sim.keyCount).toBe(2);
  });
});

describe("a set of limits", () => {
  const limits = [
    { kind: "bucket" as const, unit: "count", rate: 10, burst: 2 },
    { kind: "window" as const, unit: "count", n: 3, windowMs: 1000 },
  ];

  it("decides with the core LimitSet: the bucket under test's level in tokens, the limits that bound in limitedByMask", () => {
    const sim = simulator({ ratePerSecond: 10, burst: 2, limits });
    expect(sim.bucketIndex).toBe(0);
    expect(sim.capacity).toBe(2);
    play(sim, [
      { atMs: 0, cost: 1, wantAdmitted: true, wantTokens: 1 },
      { atMs: 0, cost: 1, wantAdmitted: true, wantTokens: 0 },
      { atMs: 100, cost: 1, wantAdmitted: true, wantTokens: 0 },
      { atMs: 500, cost: 1, wantAdmitted: false, wantTokens: 2 },
    ]);
    // The bucket holds 2 at 500 ms: only the window (limit 2) refused.
    expect(sim.limitedByMask).toBe(0b10);
    expect(sim.levelAt(500, 1)).toBe(0);
  });

  it("per key: each key its own set, evicted least recently used first", () => {
    const sim = simulator({ ratePerSecond: 10, burst: 2, limits, perKey: true, maxKeys: 2 });
    play(sim, [
      { atMs: 0, cost: 2, key: "a", wantAdmitted: true },
      { atMs: 0, cost: 2, key: "b", wantAdmitted: true },
      { atMs: 0, cost: 1, key: "a", wantAdmitted: false },
      { atMs: 0, cost: 1, key: "c", wantAdmitted: true }, // evicts b
      { atMs: 0, cost: 2, key: "b", wantAdmitted: true }, // a fresh set (evicts a)
    ]);
    expect(sim.evictions).toBe(2);
    expect(sim.evictedKey).toBe("a");
  });
});
