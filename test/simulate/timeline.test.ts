import { describe, expect, it } from "vitest";
import { chooseStepMs, Timeline } from "../../src/simulate/timeline.js";

describe("per-step totals", () => {
  it("choose a nice step that gives 20 to 60 rows", () => {
    expect(chooseStepMs(7500)).toBe(200); // 38 rows
    expect(chooseStepMs(60_000)).toBe(1000);
    expect(chooseStepMs(61_000)).toBe(2000);
    expect(chooseStepMs(1_000_400)).toBe(20_000); // 51 rows
    expect(chooseStepMs(0)).toBe(1);
    for (const ms of [25, 999, 12_345, 3_600_000, 86_400_000]) {
      const rows = Math.ceil(ms / chooseStepMs(ms));
      expect(rows).toBeGreaterThanOrEqual(20);
      expect(rows).toBeLessThanOrEqual(60);
    }
  });

  it("keep every event when the fine slots widen on a long timeline", () => {
    const timeline = new Timeline();
    let admitted = 0;
    for (let i = 0; i < 5000; i++) {
      const ok = i % 3 !== 0;
      if (ok) admitted++;
      timeline.record(i * 997, 2, ok, ok ? i : 0, 1);
    }
    expect(timeline.slotMs).toBe(10_000);
    const endMs = 4999 * 997;
    const steps = timeline.steps(endMs);
    expect(steps.length).toBeGreaterThanOrEqual(20);
    expect(steps.length).toBeLessThanOrEqual(60);
    expect(steps.reduce((sum, s) => sum + s.arrived, 0)).toBe(5000);
    expect(steps.reduce((sum, s) => sum + s.admitted, 0)).toBe(admitted);
    expect(steps.reduce((sum, s) => sum + s.admittedCost, 0)).toBe(admitted * 2);
    expect(Math.max(...steps.map((s) => s.maxWaitMs))).toBe(4999);
    // Each event lands in the step that contains its time.
    for (const step of steps) expect(step.lastDecisionMs < step.endMs || Number.isNaN(step.lastDecisionMs)).toBe(true);
  });

  it("use the step given, however many rows it makes", () => {
    const timeline = new Timeline(1000);
    timeline.record(0, 1, true, 0, 9);
    timeline.record(999.999, 1, false, 0, 0.5);
    timeline.record(1000, 1, true, 0, 0);
    const steps = timeline.steps(2500);
    expect(steps.map((s) => [s.startMs, s.arrived, s.admitted, s.refused])).toEqual([
      [0, 2, 1, 1],
      [1000, 1, 1, 0],
      [2000, 0, 0, 0],
    ]);
  });
});
