import { describe, expect, it } from "vitest";
import { parsePattern, patternArrivals } from "../../src/simulate/arrival-pattern.js";
import { renderAsciiChart } from "../../src/simulate/render/ascii-chart.js";
import { runSimulation } from "../../src/simulate/run-simulation.js";
import { buildSummary } from "../../src/simulate/summary.js";
import { renderSvgPlot } from "../../src/simulate/render/svg-plot.js";

async function simulated(policy: "drop" | "queue") {
  const recorder = await runSimulation(patternArrivals(parsePattern("steady 8/s for 7.5s"), 1), {
    simulator: { ratePerSecond: 5, burst: 10, policy, maxWaitMs: Infinity, perKey: false, maxKeys: Infinity },
  });
  const summary = buildSummary(recorder, { costUnit: "count", endMs: 7500, seed: undefined, trace: undefined });
  return { recorder, summary, steps: recorder.levelSteps(7500, 200) };
}

/** A small well-formedness check: every tag closes in order, attributes are quoted, entities are known. */
function parseXml(text: string): Array<{ name: string; attributes: Record<string, string> }> {
  const elements: Array<{ name: string; attributes: Record<string, string> }> = [];
  const open: string[] = [];
  const body = text.replace(/^<\?xml[^?]*\?>\s*/, "");
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>|([^<]+)/gy;
  let match: RegExpExecArray | null;
  let consumed = 0;
  while ((match = tag.exec(body))) {
    consumed = tag.lastIndex;
    const [, closing, name, attributeText, selfClosing, textNode] = match;
    if (textNode !== undefined) {
      expect(textNode.replace(/&(amp|lt|gt|quot|#\d+);/g, "")).not.toMatch(/[&<>]/);
      continue;
    }
    if (closing) {
      expect(open.pop(), `closing </${name}>`).toBe(name);
      continue;
    }
    const attributes: Record<string, string> = {};
    for (const [, key, value] of attributeText!.matchAll(/([\w:-]+)="([^"]*)"/g)) attributes[key!] = value!;
    elements.push({ name: name!, attributes });
    if (!selfClosing) open.push(name!);
  }
  expect(consumed, "the whole document parsed").toBe(body.length);
  expect(open).toEqual([]);
  return elements;
}

describe("the SVG plot", () => {
  it("is well-formed XML, self-contained, with labelled axes, a legend and the four series", async () => {
    const { summary, steps } = await simulated("queue");
    const svg = renderSvgPlot(steps, { summary, stepMs: 200 });
    const elements = parseXml(svg);
    expect(elements[0]).toMatchObject({ name: "svg", attributes: { xmlns: "http://www.w3.org/2000/svg", viewBox: "0 0 960 680" } });
    const series = elements.filter((e) => e.attributes["data-series"]).map((e) => e.attributes["data-series"]);
    expect(series).toEqual(["burst", "level", "admitted", "refused", "refill", "wait"]);
    for (const label of ["level (tokens)", "arrivals per step", "max wait (s)", "time (s), steps of 0.2 s", ">admitted<", ">refused<", ">max wait<", ">rate × step<"]) {
      expect(svg).toContain(label);
    }
    expect(svg).not.toMatch(/<script|href=|@import|url\(/);
    // The level line has a point for the start and one per step.
    const points = /data-series="level"><polyline points="([^"]+)"/.exec(svg)![1]!.split(" ");
    expect(points).toHaveLength(steps.length + 1);
  });

  it("draws refused bars only where there were refusals", async () => {
    const { summary, steps } = await simulated("drop");
    const svg = renderSvgPlot(steps, { summary, stepMs: 200 });
    const refusedBars = /data-series="refused"[^>]*>(.*?)<\/g>/.exec(svg)![1]!.match(/<rect/g) ?? [];
    expect(refusedBars).toHaveLength(steps.filter((s) => s.refused > 0).length);
  });

  // Regression (issue 15, point 9): drop had an empty "drop never waits" panel, and nothing to hold the bars against.
  it("drop: two panels, no wait; the arrivals panel draws rate × step, the refill the bars compare with", async () => {
    const { summary, steps } = await simulated("drop");
    const svg = renderSvgPlot(steps, { summary, stepMs: 200 });
    const elements = parseXml(svg);
    expect(elements.filter((e) => e.attributes["data-series"]).map((e) => e.attributes["data-series"])).toEqual(["burst", "level", "admitted", "refused", "refill"]);
    expect(elements.filter((e) => e.name === "g" && e.attributes["data-panel"] !== undefined)).toHaveLength(2);
    expect(svg).not.toContain("drop never waits");
    expect(svg).not.toContain("max wait");
    // 5/s × 0.2 s = 1 arrival a step: the line sits on the y tick labelled 1.
    expect(svg).toContain(">rate × step = 1<");
    const line = /data-series="refill"><line [^>]*y1="([\d.]+)"/.exec(svg)![1];
    const tick = new RegExp(`<line x1="84" x2="936" y1="([\\d.]+)" y2="[\\d.]+" stroke="#e3e5e8"/>\\s*<text x="76" y="[\\d.]+" text-anchor="end">1</text>`).exec(svg);
    expect(tick, "a y tick labelled 1").not.toBeNull();
    expect(line).toBe(tick![1]);
  });
});

describe("the terminal chart", () => {
  it("draws the level and the admitted/refused bars over a time axis, in plain characters", async () => {
    const { steps } = await simulated("drop");
    const chart = renderAsciiChart(steps, { burst: 10, stepMs: 200, unit: "count", perKey: false });
    const lines = chart.trimEnd().split("\n");
    expect(lines[0]).toBe("bucket level at the end of each 0.2 s (tokens; burst 10)");
    expect(lines[1]).toMatch(/^10 ┤/);
    expect(chart).toContain("arrivals per 0.2 s: admitted █, refused ░");
    expect(chart).toContain("░");
    expect(lines.at(-1)).toMatch(/^\s+0 s\s+7\.6 s$/);
    // Before the first refusal no refused cell; after it, some in every other column pair.
    const barLines = lines.slice(lines.indexOf("arrivals per 0.2 s: admitted █, refused ░") + 1, -2);
    const firstRefusedColumn = Math.min(...barLines.map((line) => line.indexOf("░")).filter((i) => i >= 0));
    const firstRefusedStep = steps.findIndex((s) => s.refused > 0);
    expect(firstRefusedColumn - barLines[0]!.indexOf("┤") - 1).toBe(firstRefusedStep * 2);
  });

  // Regression (issue 15, point 10): at 40 columns the rows wrapped ("2\n0 s").
  it.each([40, 80, 200])("fits %i columns: no line wider, the plot as wide as the steps allow", (width) => {
    const cases = [
      { end: 7500, step: 200 },
      { end: 60_000, step: 100 },
      { end: 2000, step: 1000 },
    ];
    for (const { end, step } of cases) {
      const steps = Array.from({ length: Math.ceil(end / step) }, (_, i) => ({
        startMs: i * step, endMs: (i + 1) * step, arrived: 1000 + i, admitted: 900, refused: 100 + i, admittedCost: 900, refusedCost: 100 + i,
        maxWaitMs: 0, lastDecisionMs: NaN, lastTokens: NaN, level: (i * 37) % 10_000,
      }));
      const chart = renderAsciiChart(steps, { burst: 10_000, stepMs: step, unit: "count", perKey: false, width });
      const lines = chart.trimEnd().split("\n");
      const widest = Math.max(...lines.map((line) => [...line].length));
      expect(widest, chart).toBeLessThanOrEqual(width);
      // The plot takes most of the width when there are more steps than columns.
      if (steps.length > width) expect(widest).toBeGreaterThan(width / 2);
      expect(lines.at(-1)).toMatch(new RegExp(`^\\s+0 s\\s+${(steps.length * step) / 1000} s$`));
    }
  });

  it("says how long a column is: several steps share one when they outnumber the columns", () => {
    const steps = Array.from({ length: 100 }, (_, i) => ({
      startMs: i * 100, endMs: (i + 1) * 100, arrived: 2, admitted: 1, refused: 1, admittedCost: 1, refusedCost: 1,
      maxWaitMs: 0, lastDecisionMs: NaN, lastTokens: NaN, level: 5,
    }));
    const chart = renderAsciiChart(steps, { burst: 10, stepMs: 100, unit: "count", perKey: false, width: 40 });
    const lines = chart.split("\n");
    expect(lines.slice(0, 2)).toEqual(["bucket level at the end of each 0.3 s", "(tokens; burst 10)"]);
    expect(chart).toContain("\narrivals per 0.3 s: admitted █,\nrefused ░\n");
    // 3 steps of 2 arrivals a column: the top label is 6.
    expect(chart).toMatch(/\n6 ┤/);
    const wide = renderAsciiChart(steps.slice(0, 10), { burst: 10, stepMs: 100, unit: "count", perKey: false, width: 200 });
    expect(wide.split("\n")[0]).toBe("bucket level at the end of each 0.1 s (tokens; burst 10)");
    // 10 steps on 200 columns: each step 4 columns wide, no wider.
    expect(wide.split("\n").at(-3)).toBe(`  └${"─".repeat(40)}`);
  });

  it("leaves the level out with --per-key", async () => {
    const { steps } = await simulated("drop");
    expect(renderAsciiChart(steps, { burst: 10, stepMs: 200, unit: "count", perKey: true })).not.toContain("bucket level");
  });
});
