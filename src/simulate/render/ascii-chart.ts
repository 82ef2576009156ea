import { msToSeconds, significant } from "../../core/format.js";
import type { CostUnit } from "../simulator.js";
import type { LevelStep } from "../recorder.js";
import type { Step } from "../timeline.js";

export interface AsciiChartOptions {
  burst: number;
  stepMs: number;
  unit: CostUnit;
  /** With --per-key there is no single level to draw. */
  perKey: boolean;
  /** Rows of each panel. */
  height?: number;
  /** No line is wider than this many columns (the terminal's width); 80 by default. */
  width?: number;
}

/** Fewer columns than this for the plot itself and the chart is drawn this wide anyway: narrower says nothing. */
const MIN_PLOT_COLUMNS = 10;
/** A step drawn wider than this many columns adds nothing but width. */
const MAX_REPEAT = 4;

/**
 * A terminal chart in plain characters, no dependency: the bucket level at
 * the end of each column's time as a line (drawn as asciichart draws it),
 * and the arrivals in that time as bars, admitted █ under refused ░. The
 * chart fits `width`: a step takes up to MAX_REPEAT columns when there is
 * room, and when there are more steps than columns, neighbouring steps share
 * a column (the titles say how long a column is).
 */
export function renderAsciiChart(steps: readonly LevelStep[], options: AsciiChartOptions): string {
  const height = options.height ?? 8;
  const width = options.width ?? 80;
  const levelValues = options.perKey ? [] : steps.map((step) => step.level ?? 0);
  const low = levelValues.reduce((low, level) => Math.min(low, level), 0);
  const high = levelValues.reduce((high, level) => Math.max(high, level), options.burst);
  const labelWidthFor = (most: number) =>
    Math.max(...[most, most / 2, 0, ...(options.perKey ? [] : [high, (low + high) / 2, low])].map((v) => axisNumber(v).length));
  // Merged steps add up to taller bars, whose labels may be wider: lay out again until the labels fit.
  let labelWidth = labelWidthFor(steps.reduce((most, step) => Math.max(most, step.arrived), 1));
  let perColumn = 1;
  let columns: readonly LevelStep[] = steps;
  let plotColumns = 0;
  for (let attempt = 0; attempt < 3; attempt++) {
    plotColumns = Math.max(MIN_PLOT_COLUMNS, width - labelWidth - 2);
    perColumn = Math.max(1, Math.ceil(steps.length / plotColumns));
    columns = perColumn > 1 ? mergeSteps(steps, perColumn) : steps;
    const needed = labelWidthFor(columns.reduce((most, column) => Math.max(most, column.arrived), 1));
    if (needed <= labelWidth) break;
    labelWidth = needed;
  }
  const repeat = perColumn > 1 ? 1 : Math.max(1, Math.min(MAX_REPEAT, Math.floor(plotColumns / Math.max(1, columns.length))));
  const plotWidth = columns.length * repeat;
  const columnMs = options.stepMs * perColumn;
  const endMs = steps.length * options.stepMs;
  const every = `${msToSeconds(columnMs)} s`;
  const panels: string[] = [];
  if (!options.perKey) {
    const levels = columns.flatMap((column) => Array<number>(repeat).fill(column.level ?? 0));
    const title = `bucket level at the end of each ${every} (${options.unit === "bytes" ? "bytes" : "tokens"}; burst ${options.burst})`;
    panels.push(...wrapWords(title, width), ...withAxis(lineRows(levels, low, high, height), low, high, endMs, plotWidth));
  }
  const most = columns.reduce((most, column) => Math.max(most, column.arrived), 1);
  const title = `arrivals per ${every}: admitted █, refused ░`;
  panels.push(...wrapWords(title, width), ...withAxis(barRows(columns, repeat, most, height), 0, most, endMs, plotWidth));
  return panels.join("\n") + "\n";
}

/** Every `perColumn` steps summed into one; the level is the one at the end of the last of them. */
function mergeSteps(steps: readonly LevelStep[], perColumn: number): LevelStep[] {
  const merged: LevelStep[] = [];
  for (let first = 0; first < steps.length; first += perColumn) {
    const group = steps.slice(first, first + perColumn);
    const last = group.at(-1)!;
    merged.push({
      ...last,
      startMs: group[0]!.startMs,
      arrived: group.reduce((sum, step) => sum + step.arrived, 0),
      admitted: group.reduce((sum, step) => sum + step.admitted, 0),
      refused: group.reduce((sum, step) => sum + step.refused, 0),
      admittedCost: group.reduce((sum, step) => sum + step.admittedCost, 0),
      refusedCost: group.reduce((sum, step) => sum + step.refusedCost, 0),
      maxWaitMs: group.reduce((most, step) => Math.max(most, step.maxWaitMs), 0),
    });
  }
  return merged;
}

/** Words in lines of at most `width` characters (a longer word stands alone); a legend's glyph stays with its word. */
function wrapWords(text: string, width: number): string[] {
  const words = text.split(/ (?![█░])/);
  const lines: string[] = [];
  let line = "";
  for (const word of words) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === "" ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  return lines;
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
function barRows(steps: readonly Step[], repeat: number, most: number, height: number): string[][] {
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
function withAxis(grid: string[][], low: number, high: number, endMs: number, columns: number): string[] {
  const labels = new Map<number, string>([
    [0, axisNumber(high)],
    [Math.floor((grid.length - 1) / 2), axisNumber((low + high) / 2)],
    [grid.length - 1, axisNumber(low)],
  ]);
  const width = Math.max(...[...labels.values()].map((label) => label.length));
  const lines = grid.map((cells, row) => `${(labels.get(row) ?? "").padStart(width)} ┤${cells.join("")}`.trimEnd());
  lines.push(`${" ".repeat(width)} └${"─".repeat(columns)}`);
  const start = "0 s";
  const end = `${msToSeconds(endMs)} s`;
  lines.push(`${" ".repeat(width + 2)}${start}${end.padStart(Math.max(1, columns - start.length))}`);
  return lines;
}
