import { describe, expect, it } from "vitest";
import { DistinctCounter } from "../../src/simulate/distinct-counter.js";
import { KeyTallies } from "../../src/simulate/key-tallies.js";
import { Recorder } from "../../src/simulate/recorder.js";
import { Simulator } from "../../src/simulate/simulator.js";

const perKey = (maxKeys: number) => new Simulator({ ratePerSecond: 1, burst: 1, policy: "drop", maxWaitMs: Infinity, perKey: true, maxKeys });

describe("per-key tallies (regression: --max-keys 1000 over 3 M distinct keys peaked at 766 MB)", () => {
  it("hold one entry per bucket the simulator keeps, however many distinct keys pass", () => {
    const simulator = perKey(1000);
    const recorder = new Recorder(simulator);
    for (let i = 0; i < 300_000; i++) {
      // Every 7th key comes back at once and is refused: its bucket of 1 token is empty.
      const key = `client-${i % 7 === 1 ? i - 1 : i}`;
      simulator.offer(i, 1, key);
      recorder.record(i, 1, key);
    }
    expect(simulator.keyCount).toBe(1000);
    expect(recorder.keys.liveCount).toBe(1000);
    expect(simulator.evictions).toBeGreaterThan(250_000);
    const seen = recorder.keys.seen;
    expect(seen.exact).toBe(false);
    // 300000 keys, one in seven a repeat: 257143 distinct, estimated within 3 %.
    expect(Math.abs(seen.count - 257_143) / 257_143).toBeLessThan(0.03);
    // The refused keys are each refused once; ties in order of first arrival.
    expect(recorder.keys.mostRefused(3)).toEqual([
      { key: "client-0", arrived: 2, refused: 1 },
      { key: "client-7", arrived: 2, refused: 1 },
      { key: "client-14", arrived: 2, refused: 1 },
    ]);
  });

  it("sum a key's lifetimes when it is among the most refused, and list the most refused first", () => {
    const tallies = new KeyTallies(2);
    const arrive = (key: string, admitted: boolean) => tallies.add(key, admitted);
    arrive("a", false);
    arrive("a", false);
    tallies.retire("a");
    arrive("b", false);
    tallies.retire("b");
    arrive("c", true);
    tallies.retire("c");
    arrive("a", false); // a is back with a new bucket
    expect(tallies.mostRefused()).toEqual([
      { key: "a", arrived: 3, refused: 3 },
      { key: "b", arrived: 1, refused: 1 },
    ]);
    expect(tallies.liveCount).toBe(1);
    expect(tallies.seen).toEqual({ count: 3, exact: true });
  });

  it("count the keys seen exactly however many, while no bucket was evicted", () => {
    const tallies = new KeyTallies();
    for (let i = 0; i < 150_000; i++) tallies.add(`k${i}`, true);
    expect(tallies.seen).toEqual({ count: 150_000, exact: true });
  });
});

describe("distinct keys", () => {
  it("are counted exactly up to the limit, then estimated within a few percent without keeping the keys", () => {
    const counter = new DistinctCounter(1000);
    for (let i = 0; i < 1000; i++) counter.add(`k${i}`);
    for (let i = 0; i < 1000; i++) counter.add(`k${i}`);
    expect([counter.count, counter.exact]).toEqual([1000, true]);
    for (let round = 0; round < 2; round++) for (let i = 0; i < 200_000; i++) counter.add(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    expect(counter.exact).toBe(false);
    expect(Math.abs(counter.count - 201_000) / 201_000).toBeLessThan(0.03);
  });

  it("estimates small counts well too, past the limit", () => {
    const counter = new DistinctCounter(10);
    for (let i = 0; i < 5000; i++) counter.add(`key-${i}`);
    expect(Math.abs(counter.count - 5000) / 5000).toBeLessThan(0.03);
  });
});
