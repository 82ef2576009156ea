import { describe, expect, it } from "vitest";
import type { LevelStep } from "../../src/simulate/recorder.js";
import { renderStepCsv, renderStepTable } from "../../src/simulate/render/step-table.js";
import { describeTooManyRows } from "../../src/cli/simulate/errors.js";
import { checkRowCount, chooseStepMs, MAX_ROWS, rowCount, smallestStepMs, Timeline, TooManyRowsError } from "../../src/simulate/timeline.js";

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

  it("use the step given, up to MAX_ROWS rows", () => {
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

  describe("a step too fine for the timeline (regression: --step 1ms over 1000 h ran out of memory at 4.7 GB)", () => {
    it("counts the rows, and finds the smallest step of one significant digit that fits", () => {
      expect(MAX_ROWS).toBe(100_000);
      expect(rowCount(3_600_000_000, 1)).toBe(3_600_000_000);
      expect(rowCount(2500, 1000)).toBe(3);
      expect(rowCount(0, 1000)).toBe(1);
      expect(smallestStepMs(3_600_000_000)).toBe(40_000); // 36 s would do; 40 s is the next single digit
      expect(smallestStepMs(99_999)).toBe(1);
      expect(smallestStepMs(100_000)).toBe(2); // an event at 100000 ms opens row 100001
      expect(smallestStepMs(9_999)).toBe(0.1);
      expect(smallestStepMs(0)).toBeGreaterThan(0);
      for (const endMs of [1, 999, 123_456_789, 3_600_000_000, 1e15]) {
        const step = smallestStepMs(endMs);
        expect(Math.floor(endMs / step) + 1).toBeLessThanOrEqual(MAX_ROWS);
        expect(Number(step.toPrecision(1))).toBe(step);
      }
    });

    it("says what is too many in fields, the smallest step that fits among them; the CLI words it with --step", () => {
      expect(() => checkRowCount(1000, 1, 1000)).not.toThrow();
      const error = (() => {
        try {
          checkRowCount(3_600_000_000, 1, 3_600_000_001);
        } catch (failure) {
          return failure;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(TooManyRowsError);
      expect(error).toMatchObject({ endMs: 3_600_000_000, stepMs: 1, rows: 3_600_000_001, smallestStepMs: 40_000 });
      expect((error as Error).message).not.toContain("--");
      expect(describeTooManyRows(error as TooManyRowsError)).toBe(
        `--step 1ms: 3600000001 rows over 1000h00m00s is more than the 100000 allowed; use --step 40s or more`,
      );
    });

    it("stops making rows past MAX_ROWS while recording, and refuses to cut more", () => {
      const timeline = new Timeline(1);
      timeline.record(0, 1, true, 0, 1);
      timeline.record(3_600_000_000, 1, true, 0, 1);
      expect(timeline.rows(3_599_999_999, 1)).toBe(3_600_000_001);
      expect(() => timeline.steps(3_600_000_000)).toThrow(RangeError);
      expect(() => timeline.steps(3_600_000_000)).toThrow(TooManyRowsError);
      // The event at the end opens a row of its own: counted even though it was not kept.
      expect(timeline.rows(3_600_000_000, 1)).toBe(3_600_000_001);
      const exact = new Timeline(1000);
      exact.record(100_000_000, 1, true, 0, 1);
      expect(exact.rows(100_000_000, 1000)).toBe(100_001);
      const fits = new Timeline(1);
      fits.record(99_999, 1, true, 0, 1);
      expect(fits.steps(99_999)).toHaveLength(100_000);
    });

    it("renders MAX_ROWS rows as a table and CSV without passing every row as an argument", () => {
      const step: LevelStep = {
        startMs: 0, endMs: 1, arrived: 1, admitted: 1, refused: 0, admittedCost: 1, refusedCost: 0, maxWaitMs: 0, lastDecisionMs: 0, lastTokens: 1, level: 1,
      };
      const steps = Array.from({ length: MAX_ROWS }, () => step);
      expect(renderStepTable(steps, "count", 1).split("\n")).toHaveLength(MAX_ROWS + 2);
      expect(renderStepCsv(steps, "count").split("\n")).toHaveLength(MAX_ROWS + 2);
    });
  });
});
