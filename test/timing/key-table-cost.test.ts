import { describe, expect, it } from "vitest";
import { KeyTable } from "../../src/http/key-table.js";

/**
 * Microseconds per new key on a full table that keeps evicting (every new
 * client of a busy proxy at --max-keys), each new key also touching a recent one.
 */
function microsecondsPerNewKey(maxKeys: number, newKeys: number): number {
  const table = new KeyTable<number>({ maxKeys, isSpent: () => false });
  for (let i = 0; i < maxKeys; i++) table.set(`10.${i}`, i);
  let next = maxKeys;
  const startMs = performance.now();
  for (let i = 0; i < newKeys; i++) {
    table.set(`10.${next++}`, i);
    table.get(`10.${next - 5}`);
  }
  return ((performance.now() - startMs) * 1000) / newKeys;
}

describe("KeyTable cost", () => {
  // Regression: a Map kept in order by delete-and-set read its oldest entry past every entry it had deleted,
  // so at --max-keys 100000 each new key cost tens of times what it cost at 1000.
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
    expect(ratio).toBeLessThan(8);
  });
});
