import { describeRate, describeSize, msToSeconds, significant } from "../../core/format.js";
import type { LevelStep } from "../recorder.js";
import type { Summary } from "../summary.js";
import { describePolicy } from "./summary-text.js";

export interface SvgPlotOptions {
  summary: Summary;
  stepMs: number;
}

const WIDTH = 960;
const HEIGHT = 680;
const LEFT = 84;
const RIGHT = 24;
const TOP = 78;
const BOTTOM = 52;
const GAP = 46;
const COLORS = { level: "#1f6fd1", burst: "#8a8f98", admitted: "#2e9e55", refused: "#d64541", refill: "#6b3fa0", wait: "#e08a00" };
/** One colour a class, in definition order, none of them a bucket-level series' colour; more classes reuse them. */
const CLASS_COLORS = ["#00838f", "#c2185b", "#827717", "#5d4037", "#3949ab", "#f4511e"];

/**
 * A self-contained SVG plot (no scripts, fonts or links) in panels that
 * share the time axis: the bucket level with the burst as a dashed line,
 * admitted and refused arrivals per step as stacked bars under the rate ×
 * step (what the bucket refills in a step, the line to compare them with),
 * and with the queue policy the longest wait per step (drop never waits: no
 * panel). With classes, each class's admitted arrivals per step are a step
 * line over the bars, named with its guarantee in a second legend row. Each
 * series is a group with a `data-series` attribute.
 */
export function renderSvgPlot(steps: readonly LevelStep[], options: SvgPlotOptions): string {
  const { summary, stepMs } = options;
  const endMs = Math.max(stepMs, steps.length * stepMs);
  const showsWait = summary.policy === "queue";
  const panelCount = showsWait ? 3 : 2;
  const panelHeight = (HEIGHT - TOP - BOTTOM - (panelCount - 1) * GAP) / panelCount;
  // Bars count arrivals: the refill of a step compares with them only when an arrival is one token.
  const refillPerStep = summary.cost === "count" && Number.isFinite(summary.rate) ? (summary.rate * stepMs) / 1000 : undefined;
  const plotWidth = WIDTH - LEFT - RIGHT;
  const x = (ms: number) => LEFT + (ms / endMs) * plotWidth;
  const xTicks = niceTicks(0, endMs / 1000, 8);
  const unitName = summary.cost === "bytes" ? "bytes" : "tokens";
  const parts: string[] = [];

  const panel = (index: number, lowest: number, highest: number, label: string, roundTop = true) => {
    const top = TOP + index * (panelHeight + GAP);
    // The axis starts at a tick, and ends at one unless that would squash the data; no label falls outside.
    let ticks = niceTicks(lowest, highest, 4);
    const low = ticks[0]!;
    const high = roundTop ? ticks.at(-1)! : highest * 1.05 - lowest * 0.05;
    ticks = ticks.filter((tick) => tick <= high);
    const y = (value: number) => top + panelHeight - ((value - low) / (high - low || 1)) * panelHeight;
    parts.push(`<g class="axes" data-panel="${index}">`);
    for (const tick of ticks) {
      parts.push(`<line x1="${LEFT}" x2="${LEFT + plotWidth}" y1="${f(y(tick))}" y2="${f(y(tick))}" stroke="#e3e5e8"/>`);
      parts.push(`<text x="${LEFT - 8}" y="${f(y(tick) + 4)}" text-anchor="end">${escape(tickLabel(tick))}</text>`);
    }
    for (const tick of xTicks) {
      parts.push(`<line x1="${f(x(tick * 1000))}" x2="${f(x(tick * 1000))}" y1="${f(top)}" y2="${f(top + panelHeight)}" stroke="#f0f1f3"/>`);
    }
    parts.push(`<rect x="${LEFT}" y="${f(top)}" width="${f(plotWidth)}" height="${f(panelHeight)}" fill="none" stroke="#9aa0a6"/>`);
    parts.push(
      `<text x="${18}" y="${f(top + panelHeight / 2)}" text-anchor="middle" transform="rotate(-90 18 ${f(top + panelHeight / 2)})">${escape(label)}</text>`,
    );
    parts.push(`</g>`);
    return y;
  };

  // Panel 1: level.
  const levels = steps.map((step) => step.level ?? 0);
  const levelLow = levels.reduce((low, level) => Math.min(low, level), 0);
  const levelHigh = levels.reduce((high, level) => Math.max(high, level), summary.burst);
  const yLevel = panel(0, levelLow, levelHigh, `level (${unitName})`, false);
  if (summary.perKey) {
    parts.push(`<text x="${f(LEFT + plotWidth / 2)}" y="${f(TOP + panelHeight / 2)}" text-anchor="middle" fill="#5f6368">one bucket per key: no single level to plot</text>`);
  } else {
    parts.push(`<g data-series="burst"><line x1="${LEFT}" x2="${f(LEFT + plotWidth)}" y1="${f(yLevel(summary.burst))}" y2="${f(yLevel(summary.burst))}" stroke="${COLORS.burst}" stroke-dasharray="6 4"/></g>`);
    const points = [[0, summary.burst], ...steps.map((step) => [step.endMs, step.level ?? 0] as const)]
      .map(([ms, level]) => `${f(x(ms!))},${f(yLevel(level!))}`)
      .join(" ");
    parts.push(`<g data-series="level"><polyline points="${points}" fill="none" stroke="${COLORS.level}" stroke-width="2" stroke-linejoin="round"/></g>`);
  }

  // Panel 2: admitted and refused, stacked.
  const most = steps.reduce((most, step) => Math.max(most, step.arrived), Math.max(1, refillPerStep ?? 0));
  const yCount = panel(1, 0, most, "arrivals per step");
  const barWidth = Math.max(0.5, (plotWidth / Math.max(1, steps.length)) * 0.8);
  const admittedBars: string[] = [];
  const refusedBars: string[] = [];
  for (const step of steps) {
    const left = x(step.startMs) + (plotWidth / Math.max(1, steps.length)) * 0.1;
    if (step.admitted > 0) {
      admittedBars.push(`<rect x="${f(left)}" y="${f(yCount(step.admitted))}" width="${f(barWidth)}" height="${f(yCount(0) - yCount(step.admitted))}"/>`);
    }
    if (step.refused > 0) {
      refusedBars.push(`<rect x="${f(left)}" y="${f(yCount(step.arrived))}" width="${f(barWidth)}" height="${f(yCount(step.admitted) - yCount(step.arrived))}"/>`);
    }
  }
  parts.push(`<g data-series="admitted" fill="${COLORS.admitted}">${admittedBars.join("")}</g>`);
  parts.push(`<g data-series="refused" fill="${COLORS.refused}">${refusedBars.join("")}</g>`);
  if (refillPerStep !== undefined) {
    const y = f(yCount(refillPerStep));
    const label = `<text x="${f(LEFT + plotWidth - 6)}" y="${f(yCount(refillPerStep) - 6)}" text-anchor="end" fill="${COLORS.refill}">rate × step = ${escape(significant(refillPerStep, 4))}</text>`;
    parts.push(`<g data-series="refill"><line x1="${LEFT}" x2="${f(LEFT + plotWidth)}" y1="${y}" y2="${y}" stroke="${COLORS.refill}" stroke-width="2" stroke-dasharray="6 4"/>${label}</g>`);
  }
  // Each class's admitted arrivals per step (the recorder's classAdmitted, as the table's columns), as steps over the bars.
  const classes = summary.classes ?? [];
  classes.forEach((c, i) => {
    const path = steps
      .map((step, index) => {
        const y = f(yCount(step.classAdmitted?.[i]?.admitted ?? 0));
        return `${index === 0 ? "M" : "L"}${f(x(step.startMs))},${y} L${f(x(step.endMs))},${y}`;
      })
      .join(" ");
    parts.push(
      `<g data-series="class" data-class="${escape(c.name)}"><path d="${path || `M${LEFT},${f(yCount(0))}`}" fill="none" stroke="${classColor(i)}" stroke-width="2"/></g>`,
    );
  });

  // Panel 3: the longest wait in each step, as steps.
  if (showsWait) {
    const longestSeconds = steps.reduce((longest, step) => Math.max(longest, step.maxWaitMs / 1000), 0);
    const yWait = panel(2, 0, longestSeconds > 0 ? longestSeconds : 1, "max wait (s)");
    const waitPath = steps
      .map((step, index) => `${index === 0 ? "M" : "L"}${f(x(step.startMs))},${f(yWait(step.maxWaitMs / 1000))} L${f(x(step.endMs))},${f(yWait(step.maxWaitMs / 1000))}`)
      .join(" ");
    parts.push(`<g data-series="wait"><path d="${waitPath || `M${LEFT},${f(yWait(0))}`}" fill="none" stroke="${COLORS.wait}" stroke-width="2"/></g>`);
  }

  // The time axis under the last panel.
  const axisY = TOP + panelCount * panelHeight + (panelCount - 1) * GAP;
  for (const tick of xTicks) {
    parts.push(`<text x="${f(x(tick * 1000))}" y="${f(axisY + 18)}" text-anchor="middle">${escape(tickLabel(tick))}</text>`);
  }
  parts.push(`<text x="${f(LEFT + plotWidth / 2)}" y="${f(HEIGHT - 10)}" text-anchor="middle">time (s), steps of ${escape(String(msToSeconds(stepMs)))} s</text>`);

  const title = `rate ${describeRate(summary.cost, summary.rate)}, burst ${describeSize(summary.cost, summary.burst)}, ${describePolicy(summary)}: ${summary.admitted} of ${summary.events} admitted, ${summary.refused} refused`;
  const legend = [
    ["level", COLORS.level, "line"],
    ["burst", COLORS.burst, "dash"],
    ["admitted", COLORS.admitted, "box"],
    ["refused", COLORS.refused, "box"],
    ...(refillPerStep === undefined ? [] : [["rate × step", COLORS.refill, "dash"] as const]),
    ...(showsWait ? [["max wait", COLORS.wait, "line"] as const] : []),
  ] as const;
  const legendParts = legend.map(([name, color, shape], index) => {
    const left = LEFT + index * 130;
    const mark =
      shape === "box"
        ? `<rect x="${left}" y="46" width="18" height="12" fill="${color}"/>`
        : `<line x1="${left}" x2="${left + 18}" y1="52" y2="52" stroke="${color}" stroke-width="3"${shape === "dash" ? ` stroke-dasharray="5 3"` : ""}/>`;
    return `${mark}<text x="${left + 24}" y="56">${name}</text>`;
  });
  // A second row: each class by the rate it is guaranteed, spaced by the length of its label.
  let classLeft = LEFT;
  for (const [i, c] of classes.entries()) {
    const label = `${c.name} admitted (${describeRate(summary.cost, c.rate)} guaranteed)`;
    legendParts.push(`<line x1="${classLeft}" x2="${classLeft + 18}" y1="66" y2="66" stroke="${classColor(i)}" stroke-width="3"/><text x="${classLeft + 24}" y="70">${escape(label)}</text>`);
    classLeft += 24 + label.length * 7 + 18;
  }

  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12" fill="#202124">`,
    `<title>${escape(`tbucket simulate: ${title}`)}</title>`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="28" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<g class="legend">${legendParts.join("")}</g>`,
    ...parts,
    `</svg>`,
    "",
  ].join("\n");
}

/** Round tick values from low to at least high, about `count` of them. */
export function niceTicks(low: number, high: number, count: number): number[] {
  const span = high - low || 1;
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].map((m) => m * power).find((candidate) => candidate >= raw) ?? 10 * power);
  const ticks: number[] = [];
  for (let tick = Math.floor(low / step) * step; tick < high + step - step * 1e-9; tick += step) {
    ticks.push(Number(tick.toPrecision(12)));
    if (tick >= high) break;
  }
  return ticks;
}

function tickLabel(value: number): string {
  if (Math.abs(value) >= 1e6) return `${significant(value / 1e6, 4)}M`;
  if (Math.abs(value) >= 1e4) return `${significant(value / 1e3, 4)}k`;
  return significant(value, 6);
}

function classColor(index: number): string {
  return CLASS_COLORS[index % CLASS_COLORS.length]!;
}

function f(value: number): string {
  return String(Math.round(value * 100) / 100);
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
