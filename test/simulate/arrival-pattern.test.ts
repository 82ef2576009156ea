import { describe, expect, it } from "vitest";
import { parsePattern, patternArrivals, patternDurationMs, patternTimesMs } from "../../src/simulate/arrival-pattern.js";

const times = (pattern: string, seed = 1) => [...patternTimesMs(parsePattern(pattern), seed)];

describe("the --arrivals pattern language", () => {
  it("steady R for D: evenly spaced from the segment's start, every i with i/R < D", () => {
    const steady = times("steady 8/s for 7.5s");
    expect(steady).toHaveLength(60);
    expect(steady.slice(0, 3)).toEqual([0, 125, 250]);
    expect(steady.at(-1)).toBe(7375);
    // Times are whole nanoseconds, so thirds round the way Go's time.Duration would hold them.
    expect(times("steady 3/s for 1s")).toEqual([0, 333.333333, 666.666667]);
    expect(times("steady 300/m for 1s")).toHaveLength(5);
    expect(times("steady 1/10s for 25s")).toEqual([0, 10_000, 20_000]);
  });

  it("plays segments one after the other; idle moves time on, burst takes no time", () => {
    expect(times("steady 2/s for 1s, idle 5s, burst 3, steady 1/s for 2s")).toEqual([0, 500, 6000, 6000, 6000, 6000, 7000]);
    expect(times("burst 30")).toEqual(Array(30).fill(0));
    expect(patternDurationMs(parsePattern("steady 2/s for 1s, idle 5s, burst 3, steady 1/s for 2s"))).toBe(8000);
    expect(patternDurationMs(parsePattern("burst 30"))).toBe(0);
  });

  it("ramp R1..R2 for D: the expected count R1·t + (R2−R1)·t²/(2D) reaches each whole number", () => {
    const ramp = times("ramp 0/s..10/s for 10s");
    // 0 + 10 × 10 / 2 = 50 arrivals expected; arrival k at sqrt(2k) seconds.
    expect(ramp).toHaveLength(50);
    expect(ramp.slice(0, 3)).toEqual([0, Math.round(Math.sqrt(2) * 1e9) / 1e6, 2000]);
    expect(times("ramp 4/s..4/s for 2s")).toEqual(times("steady 4/s for 2s"));
    const down = times("ramp 20/s..0 for 2s");
    expect(down).toHaveLength(20);
    for (let i = 1; i < down.length; i++) expect(down[i]! - down[i - 1]!).toBeGreaterThan(0);
    // Falling rate: the gaps widen.
    expect(down.at(-1)! - down.at(-2)!).toBeGreaterThan(down[1]! - down[0]!);
  });

  it("poisson R for D: random gaps from a seeded generator; same seed, same times", () => {
    const a = times("poisson 4/s for 1000s", 42);
    expect(a).toEqual(times("poisson 4/s for 1000s", 42));
    expect(a).not.toEqual(times("poisson 4/s for 1000s", 43));
    // 4000 expected, standard deviation 63: five deviations either side.
    expect(a.length).toBeGreaterThan(4000 - 316);
    expect(a.length).toBeLessThan(4000 + 316);
    for (let i = 1; i < a.length; i++) expect(a[i]!).toBeGreaterThanOrEqual(a[i - 1]!);
    expect(a.at(-1)!).toBeLessThan(1_000_000);
    // Mean gap 250 ms within 5 %.
    expect(a.at(-1)! / a.length).toBeGreaterThan(237);
    expect(a.at(-1)! / a.length).toBeLessThan(263);
  });

  it("hands arrivals out in batches of cost 1 without keys", async () => {
    let count = 0;
    let batches = 0;
    for await (const batch of patternArrivals(parsePattern("steady 100/s for 25s"), 1, 1000)) {
      batches++;
      for (let i = 0; i < batch.count; i++) expect(batch.costs[i]).toBe(1);
      expect(batch.keys).toBeUndefined();
      count += batch.count;
    }
    expect(count).toBe(2500);
    expect(batches).toBe(3);
  });

  it.each([
    ["", `"" has no segments; try "steady 8/s for 10s", "idle 5s", "burst 30", "poisson 4/s for 30s" or "ramp 1/s..20/s for 20s"`],
    ["stedy 8/s for 10s", `segment 1 "stedy 8/s for 10s": "stedy" is not a kind of segment; try "steady 8/s for 10s", "idle 5s", "burst 30", "poisson 4/s for 30s" or "ramp 1/s..20/s for 20s"`],
    ["steady 8/s", `segment 1 "steady 8/s": expected "steady <rate> for <duration>"; try "steady 8/s for 10s", "idle 5s", "burst 30", "poisson 4/s for 30s" or "ramp 1/s..20/s for 20s"`],
    ["burst 3, steady 8/s for tenS", `segment 2 "steady 8/s for tenS": "tenS" is not a duration; try "250ms", "2s" or "1.5m"`],
    ["steady 1mb for 1s", `segment 1 "steady 1mb for 1s": "1mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"`],
    ["burst 2.5", `segment 1 "burst 2.5": "2.5" is not a whole number 1 or more; try "1" or "10"`],
    ["ramp 0..0 for 5s", `segment 1 "ramp 0..0 for 5s": both rates are zero; use "idle" instead`],
    ["steady 1000000/s for 1d", `"steady 1000000/s for 1d" makes about 86,400,000,000 arrivals, more than 1,000,000,000; use a lower rate or a shorter time`],
  ])("refuses %j with a message naming the segment and what was expected", (pattern, message) => {
    expect(() => parsePattern(pattern)).toThrow(message);
  });
});
