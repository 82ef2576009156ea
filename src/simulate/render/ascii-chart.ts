import { msToSeconds, significant } from "../../core/format.js";
import type { CostUnit } from "../simulator.js";
import type { LevelStep } from "../recorder.js";

export interface AsciiChartOptions {
  burst: number;
  stepMs: number;
  unit: CostUnit;
  /** With --per-key there is no single level to draw. */
  perKey: boolean;
  /** Rows of each panel. */
  height?: number;
}

/**
 * A terminal chart in plain characters, no dependency: the bucket level at
 * the end of each step as a line (drawn as asciichart draws it), and the
 * arrivals of each step as bars, admitted █ under refused ░.
 */
export function renderAsciiChart(steps: readonly LevelStep[], options: AsciiChartOptions): string {
  const height = options.height ?? 8;
  const repeat = steps.length <= 40 ? 2 : 1;
  const columns = steps.length * repeat;
  const panels: string[] = [];
  if (!options.perKey) {
    const levels = steps.flatMap((step) => Array<number>(repeat).fill(step.level ?? 0));
    const low = levels.reduce((low, level) => Math.min(low, level), 0);
    const high = levels.reduce((high, level) => Math.max(high, level), options.burst);
    const title = `bucket level at the end of each step (${options.unit === "bytes" ? "bytes" : "tokens"}; burst ${options.burst})`;
    panels.push(title, ...withAxis(lineRows(levels, low, high, height), low, high, options.stepMs, steps.length, columns));
  }
  const most = steps.reduce((most, step) => Math.max(most, step.arrived), 1);
  panels.push("arrivals per step: admitted █, refused ░", ...withAxis(barRows(steps, repeat, most, height), 0, most, options.stepMs, steps.length, columns));
  return panels.join("\n") + "\n";
}

/** Rows from top to bottom of a line through the values, in box-drawing characters. */
function lineRows(values: readonly number[], low: number, high: number, height: number): string[][] {
  const grid = Array.from({ length: height }, () => Array<string>(values.length).fill(" "));
  const rowOf = (value: number) => (high === low ? 0 : Math.round(((value - low) / (high - low)) * (height - 1)));
  const put = (row: number, column: number, char: string) => {
    grid[height - 1 - row]![column] = char;
  };
  values.forEach((value, column) => {
    const row = rowOf(value);
    const previous = column === 0 ? row : rowOf(values[column - 1]!);
    if (row === previous) {
      put(row, column, "─");
      return;
    }
    put(previous, column, row > previous ? "╯" : "╮");
    put(row, column, row > previous ? "╭" : "╰");
    for (let between = Math.min(row, previous) + 1; between < Math.max(row, previous); between++) put(between, column, "│");
  });
  return grid;
}

/** Rows from top to bottom of stacked bars; a non-zero count always shows at least one cell. */
function barRows(steps: readonly LevelStep[], repeat: number, most: number, height: number): string[][] {
  const grid = Array.from({ length: height }, () => Array<string>(steps.length * repeat).fill(" "));
  steps.forEach((step, index) => {
    let admittedCells = Math.round((step.admitted / most) * height);
    if (step.admitted > 0 && admittedCells === 0) admittedCells = 1;
    let totalCells = Math.max(admittedCells, Math.round((step.arrived / most) * height));
    if (step.refused > 0 && totalCells === admittedCells) totalCells = Math.min(height, admittedCells + 1);
    if (totalCells === admittedCells && step.refused > 0) admittedCells = totalCells - 1;
    for (let row = 0; row < totalCells; row++) {
      for (let r = 0; r < repeat; r++) grid[height - 1 - row]![index * repeat + r] = row < admittedCells ? "█" : "░";
    }
  });
  return grid;
}

function axisNumber(value: number): string {
  return significant(value, 4);
}

/** Y labels at the top, middle and bottom; a time axis underneath. */
function withAxis(grid: string[][], low: number, high: number, stepMs: number, stepCount: number, columns: number): string[] {
  const labels = new Map<number, string>([
    [0, axisNumber(high)],
    [Math.floor((grid.length - 1) / 2), axisNumber((low + high) / 2)],
    [grid.length - 1, axisNumber(low)],
  ]);
  const width = Math.max(...[...labels.values()].map((label) => label.length));
  const lines = grid.map((cells, row) => `${(labels.get(row) ?? "").padStart(width)} ┤${cells.join("")}`.trimEnd());
  lines.push(`${" ".repeat(width)} └${"─".repeat(columns)}`);
  const start = "0 s";
  const end = `${msToSeconds(stepCount * stepMs)} s`;
  lines.push(`${" ".repeat(width + 2)}${start}${end.padStart(Math.max(1, columns - start.length))}`);
  return lines;
}
