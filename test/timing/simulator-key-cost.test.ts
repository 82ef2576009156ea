import { describe, expect, it } from "vitest";
import { Simulator } from "../../src/simulate/simulator.js";

/** Microseconds per arrival of a new key on a full --per-key table, which evicts at each (a trace of many clients). */
function microsecondsPerNewKey(maxKeys: number, newKeys: number): number {
  const simulator = new Simulator({ ratePerSecond: 5, burst: 10, policy: "drop", maxWaitMs: Infinity, perKey: true, maxKeys });
  for (let i = 0; i < maxKeys; i++) simulator.offer(i, 1, `10.${i}`);
  let next = maxKeys;
  const startMs = performance.now();
  for (let i = 0; i < newKeys; i++) {
    simulator.offer(next, 1, `10.${next++}`);
    simulator.offer(next, 1, `10.${next - 5}`);
  }
  return ((performance.now() - startMs) * 1000) / newKeys;
}

describe("simulate --per-key cost", () => {
  // Regression (issue 19): the table read its oldest key past every key it had evicted, so at --max-keys 100000
  // (now the default) 400,000 keys took 34 s, against 1.9 s at --max-keys 1000.
  it("costs about the same per new key at 100,000 keys as at 1,000, however many keys it evicted", () => {
    const small: number[] = [];
    const large: number[] = [];
    // Interleaved, the best of three: a busy machine slows a run, never speeds one up.
    for (let round = 0; round < 3; round++) {
      small.push(microsecondsPerNewKey(1000, 100_000));
      large.push(microsecondsPerNewKey(100_000, 100_000));
    }
    const ratio = Math.min(...large) / Math.min(...small);
    // Memory the small table keeps in cache costs the large one a few times over; growth with churn costs tens.
    expect(ratio, `${Math.min(...large).toFixed(2)} µs against ${Math.min(...small).toFixed(2)} µs`).toBeLessThan(8);
  });
});
