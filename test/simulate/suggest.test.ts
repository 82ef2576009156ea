import { describe, expect, it } from "vitest";
import { parsePattern, patternArrivals, patternDurationMs } from "../../src/simulate/arrival-pattern.js";
import { EventStore } from "../../src/simulate/event-store.js";
import { evaluate, MAX_BURST, rateAt, rateIndexAtOrAbove, suggestBurst, suggestRate } from "../../src/simulate/suggest.js";
import { parseTarget } from "../../src/simulate/target.js";

const store = (pattern: string) => EventStore.collect(patternArrivals(parsePattern(pattern), 1));
const base = { policy: "drop" as const, maxWaitMs: Infinity, perKey: false, maxKeys: Infinity };

describe("--target", () => {
  it("reads a refused share or a wait at a percentile", () => {
    expect(parseTarget("reject<=1%")).toEqual({ kind: "reject", maxShare: 0.01, text: "refused <= 1%" });
    expect(parseTarget(" reject <= 0.5 % ")).toMatchObject({ kind: "reject", maxShare: 0.005 });
    expect(parseTarget("p99wait<=500ms")).toEqual({ kind: "wait", quantile: 0.99, maxWaitMs: 500, text: "p99 wait <= 500ms" });
    expect(parseTarget("p90wait<=2s")).toMatchObject({ quantile: 0.9, maxWaitMs: 2000 });
  });

  it.each([
    ["fast", `"fast" is not a target; try "reject<=1%" or "p99wait<=500ms"`],
    ["reject<=100%", `"reject<=100%" is no target: every share is at most 100%; try "reject<=1%" or "p99wait<=500ms"`],
    ["p99wait<=soon", `"p99wait<=soon": "soon" is not a duration; try "250ms", "2s" or "1.5m"`],
  ])("refuses %j", (text, message) => {
    expect(() => parseTarget(text)).toThrow(message);
  });
});

describe("--suggest", () => {
  it("finds the smallest burst by hand: rate 5, 60 arrivals at 8/s, none refused needs 1 + 0.375 × 59 = 23.125, so 24", async () => {
    const events = await store("steady 8/s for 7.5s");
    const target = parseTarget("reject<=0%");
    const suggestion = suggestBurst(events, { ...base, ratePerSecond: 5 }, target);
    expect(suggestion.answer).toMatchObject({ value: 24, refused: 0, meets: true });
    expect(suggestion.below).toMatchObject({ value: 23, meets: false });
    expect(evaluate(events, { ...base, ratePerSecond: 5, burst: 23 }, target, 23).refused).toBe(1);
    // The trade-off table brackets the answer, in increasing order.
    expect(suggestion.table.map((e) => e.value)).toEqual([6, 12, 18, 23, 24, 36, 48, 96]);
    expect(suggestion.table.map((e) => e.meets)).toEqual([false, false, false, false, true, true, true, true]);
  });

  it("60 arrivals at one instant: refusing at most half needs a burst of 30", async () => {
    const events = await store("burst 60");
    const suggestion = suggestBurst(events, { ...base, ratePerSecond: 5 }, parseTarget("reject<=50%"));
    expect(suggestion.answer?.value).toBe(30);
    expect(suggestion.below?.value).toBe(29);
  });

  it("finds the smallest rate on a grid of three digits: burst 10, 60 arrivals at 8/s, none refused needs 6.78/s", async () => {
    // For all i ≤ 59: 10 + r × 0.125 i − i ≥ 1, i.e. r ≥ 8 (1 − 9/59) = 6.7797.
    const events = await store("steady 8/s for 7.5s");
    const target = parseTarget("reject<=0%");
    const suggestion = suggestRate(events, { ...base, burst: 10 }, target, patternDurationMs(parsePattern("steady 8/s for 7.5s")));
    expect(suggestion.answer).toMatchObject({ value: 6.78, meets: true });
    expect(suggestion.below).toMatchObject({ value: 6.77, meets: false });
  });

  it("meets a wait target in queue mode, and one step smaller does not", async () => {
    const events = await store("burst 20, steady 2/s for 10s");
    const target = parseTarget("p99wait<=1s");
    const options = { ...base, policy: "queue" as const, ratePerSecond: 2 };
    const suggestion = suggestBurst(events, options, target);
    const answer = suggestion.answer!;
    expect(answer.meets).toBe(true);
    expect(answer.targetWaitMs).toBeLessThanOrEqual(1000);
    const smaller = evaluate(events, { ...options, burst: answer.value - 1 }, target, answer.value - 1);
    expect(smaller.targetWaitMs).toBeGreaterThan(1000);
  });

  it("says when no rate can meet the target: arrivals larger than the burst are always refused", async () => {
    const events = new EventStore();
    events.append({ timesMs: Float64Array.of(0, 1000), costs: Float64Array.of(5, 1), keys: undefined, count: 2 });
    const suggestion = suggestRate(events, { ...base, burst: 2 }, parseTarget("reject<=10%"), 1000);
    expect(suggestion.answer).toBeUndefined();
  });

  it("indexes the rate grid both ways", () => {
    for (const rate of [0.001, 1, 4.99, 5, 5.01, 6.78, 999, 1000, 123_000]) expect(rateAt(rateIndexAtOrAbove(rate))).toBe(rate);
    expect(rateAt(rateIndexAtOrAbove(6.7797))).toBe(6.78);
    expect(rateAt(rateIndexAtOrAbove(6.78) - 1)).toBe(6.77);
    expect(rateAt(rateIndexAtOrAbove(1) - 1)).toBe(0.999);
  });
});

describe("--suggest with costs past 2^53 (regression: the bisection on doubles never ended)", () => {
  const costly = (costs: number[]) => {
    const events = new EventStore();
    events.append({ timesMs: Float64Array.from(costs.map((_, i) => i * 1000)), costs: Float64Array.from(costs), keys: undefined, count: costs.length });
    return events;
  };

  it("answers none, in a bounded number of runs, when an arrival costs more than the largest whole burst", () => {
    const suggestion = suggestBurst(costly([1e16, 1e16, 3e16]), { ...base, ratePerSecond: 1 }, parseTarget("reject<=1%"));
    expect(suggestion.answer).toBeUndefined();
    expect(suggestion.runs).toBeLessThanOrEqual(60);
    expect(MAX_BURST).toBe(2 ** 53 - 1);
  });

  it("finds an exact answer just under 2^53, and the table holds only bursts that can be given", () => {
    const cost = 2 ** 53 - 3;
    const suggestion = suggestBurst(costly([cost, cost]), { ...base, ratePerSecond: 1 }, parseTarget("reject<=50%"));
    expect(suggestion.answer).toMatchObject({ value: cost, meets: true });
    expect(suggestion.below).toMatchObject({ value: cost - 1, meets: false });
    expect(suggestion.runs).toBeLessThanOrEqual(120);
    expect(Math.max(...suggestion.table.map((e) => e.value))).toBeLessThanOrEqual(MAX_BURST);
  });
});
