import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { histogramIndex, histogramUpperNs, selectNth, WaitStats } from "../../src/simulate/wait-stats.js";

describe("wait percentiles", () => {
  it("are exact nearest-rank percentiles, zero waits included", () => {
    const stats = new WaitStats();
    for (let i = 1; i <= 100; i++) stats.add(i);
    for (let i = 0; i < 100; i++) stats.add(0);
    // 200 waits: 100 zeros, then 1..100 ms.
    expect(stats.quantileMs(0.5)).toBe(0);
    expect(stats.quantileMs(0.505)).toBe(1);
    expect(stats.quantileMs(0.9)).toBe(80);
    expect(stats.quantileMs(0.99)).toBe(98);
    expect(stats.quantileMs(1)).toBe(100);
    expect(stats.maxMs).toBe(100);
    expect(stats.meanMs).toBe(25.25);
    expect(stats.exact).toBe(true);
  });

  it("keep nanoseconds: a 1 ns wait is not rounded away", () => {
    const stats = new WaitStats();
    stats.add(0.000001);
    expect(stats.quantileMs(0.99)).toBe(0.000001);
  });

  it("past the exact limit move to a histogram, within 0.1 % above the true value", () => {
    const exact = new WaitStats();
    const bounded = new WaitStats(1000);
    let state = 7;
    for (let i = 0; i < 20_000; i++) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      const waitMs = (state / 2 ** 32) * 5000;
      exact.add(waitMs);
      bounded.add(waitMs);
    }
    expect(bounded.exact).toBe(false);
    for (const q of [0.5, 0.9, 0.99, 0.999]) {
      const truth = exact.quantileMs(q);
      expect(bounded.quantileMs(q)).toBeGreaterThanOrEqual(truth - 1e-6);
      expect(bounded.quantileMs(q)).toBeLessThanOrEqual(truth * 1.001);
    }
    expect(bounded.maxMs).toBe(exact.maxMs);
  });

  it("the histogram buckets cover every value once, each at most 0.1 % wide", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 52 }), (ns) => {
        const index = histogramIndex(ns);
        expect(histogramUpperNs(index)).toBeGreaterThanOrEqual(ns);
        expect(histogramUpperNs(index)).toBeLessThanOrEqual(ns * 1.001);
        if (index > 0) expect(histogramUpperNs(index - 1)).toBeLessThan(ns);
      }),
    );
  });

  it("selection agrees with sorting", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 200 }), fc.nat(), (values, pick) => {
        const n = pick % values.length;
        const sorted = [...values].sort((a, b) => a - b);
        expect(selectNth(Float64Array.from(values), values.length, n)).toBe(sorted[n]);
      }),
    );
  });
});
