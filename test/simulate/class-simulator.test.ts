import { describe, expect, it } from "vitest";
import type { ClassSpec } from "../../src/core/class-spec.js";
import { ClassSimulator } from "../../src/simulate/class-simulator.js";
import type { Policy } from "../../src/simulate/simulator.js";

/** As in test/core/class-scheduler.test.ts: 100/s, burst 20, shared 40 : 36.25 : 18.75 : 5 by the rules. */
const CLASSES: ClassSpec[] = [
  { name: "a", rate: 20, ceil: 40, prio: 0 },
  { name: "b", rate: 10, prio: 1, weight: 30 },
  { name: "c", rate: 10, prio: 1, weight: 10 },
  { name: "d", rate: 5, prio: 2 },
];
const RULE = [40, 36.25, 18.75, 5];

/** Each class of `asking` sends an event every `gapMs` for `seconds`; what each class was served in each second, by the time it acted. */
function run(policy: Policy, seconds: number, gapMs: number, asking = [0, 1, 2, 3], maxWaitMs = Infinity): number[][] {
  const simulator = new ClassSimulator({ ratePerSecond: 100, burst: 20, policy, maxWaitMs, perKey: false, maxKeys: Infinity, classes: CLASSES });
  const served = CLASSES.map(() => new Array<number>(seconds + 60).fill(0));
  const emit = (timeMs: number, _cost: number, name: string) => {
    if (simulator.admitted) served[CLASSES.findIndex((c) => c.name === name)]![Math.floor((timeMs + simulator.waitMs) / 1000)]!++;
  };
  for (let t = 0; t < seconds * 1000; t += gapMs) {
    asking.forEach((c, k) => simulator.offer(t + k * 0.01, 1, CLASSES[c]!.name, emit));
  }
  simulator.finish(emit);
  return served;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

describe("ClassSimulator", () => {
  it("queue: waiting lines of four classes asking far more than the key's rate are served by the rules, within 1 % over 10 s", () => {
    const served = run("queue", 30, 5);
    served.forEach((perSecond, c) => {
      const got = sum(perSecond.slice(10, 20));
      expect({ c, ok: Math.abs(got - RULE[c]! * 10) <= RULE[c]! * 10 * 0.01, got }).toEqual({ c, ok: true, got });
    });
  });

  it("drop and queue agree on the shares", () => {
    const drop = run("drop", 20, 1);
    drop.forEach((perSecond, c) => expect(Math.abs(sum(perSecond.slice(5, 15)) - RULE[c]! * 10)).toBeLessThanOrEqual(RULE[c]! * 10 * 0.01));
  });

  it("queue with a wait limit refuses what would wait longer, and serves the rest by the rules", () => {
    const simulator = new ClassSimulator({ ratePerSecond: 100, burst: 20, policy: "queue", maxWaitMs: 200, perKey: false, maxKeys: Infinity, classes: CLASSES });
    let longest = 0;
    let refused = 0;
    const emit = () => {
      if (simulator.admitted) longest = Math.max(longest, simulator.waitMs);
      else refused++;
    };
    for (let t = 0; t < 5000; t += 2) for (const spec of CLASSES) simulator.offer(t, 1, spec.name, emit);
    simulator.finish(emit);
    expect(longest).toBeLessThanOrEqual(200);
    expect(refused).toBeGreaterThan(0);
  });

  it("hands decisions on in arrival order, and an event naming no class goes to the default", () => {
    const simulator = new ClassSimulator({ ratePerSecond: 40, burst: 8, policy: "queue", maxWaitMs: Infinity, perKey: false, maxKeys: Infinity, classes: CLASSES.slice(0, 2), defaultClass: "b" });
    const seen: Array<[number, string]> = [];
    const emit = (timeMs: number, _cost: number, name: string) => seen.push([timeMs, name]);
    for (let t = 0; t < 1000; t += 10) simulator.offer(t, 1, t % 20 === 0 ? "a" : undefined, emit);
    simulator.finish(emit);
    expect(seen.map(([t]) => t)).toEqual(Array.from({ length: 100 }, (_, i) => i * 10));
    expect(seen.filter(([, name]) => name === "b")).toHaveLength(50);
  });

  it("queue: an event that can never be admitted (more than the burst) is refused at once, and those after it are still decided", () => {
    const simulator = new ClassSimulator({ ratePerSecond: 40, burst: 8, policy: "queue", maxWaitMs: Infinity, perKey: false, maxKeys: Infinity, classes: CLASSES.slice(0, 2) });
    const seen: Array<[number, boolean]> = [];
    const emit = (timeMs: number) => seen.push([timeMs, simulator.admitted]);
    simulator.offer(0, 1, "a", emit);
    simulator.offer(10, 30, "a", emit);
    simulator.offer(20, 1, "a", emit);
    simulator.offer(30, 1, "b", emit);
    simulator.finish(emit);
    expect(seen).toEqual([[0, true], [10, false], [20, true], [30, true]]);
  });
});
