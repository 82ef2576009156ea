import { alignColumns, msToSeconds, round9, secondsDecimals } from "../../core/format.js";
import type { LevelStep } from "../recorder.js";
import type { CostUnit } from "../simulator.js";

/** A step as JSON: times in seconds, level null with --per-key. */
export function stepToJson(step: LevelStep, unit: CostUnit): Record<string, number | null> {
  return {
    t: msToSeconds(step.startMs),
    arrived: step.arrived,
    admitted: step.admitted,
    refused: step.refused,
    ...(unit === "bytes" ? { admittedBytes: round9(step.admittedCost), refusedBytes: round9(step.refusedCost) } : {}),
    level: step.level === undefined ? null : round9(step.level),
    maxWait: msToSeconds(step.maxWaitMs),
  };
}

/** A step as JSON with what each class was admitted (`classes: {name: admitted}`, bytes for a byte cost). */
export function stepWithClassesToJson(step: LevelStep, unit: CostUnit, classNames: readonly string[]): Record<string, unknown> {
  const json: Record<string, unknown> = stepToJson(step, unit);
  if (step.classAdmitted) json.classes = Object.fromEntries(classNames.map((name, i) => [name, classAmount(step, i, unit)]));
  return json;
}

/** What class i was admitted in the step: events, or bytes for a byte cost. */
function classAmount(step: LevelStep, i: number, unit: CostUnit): number {
  const tally = step.classAdmitted?.[i];
  return tally === undefined ? 0 : unit === "bytes" ? round9(tally.admittedCost) : tally.admitted;
}

function levelText(step: LevelStep, unit: CostUnit): string {
  if (step.level === undefined) return "-";
  return unit === "bytes" ? String(Math.round(step.level)) : step.level.toFixed(2);
}

/** The per-step table for people: right-aligned columns under a header. */
export function renderStepTable(steps: readonly LevelStep[], unit: CostUnit, stepMs: number, classNames: readonly string[] = []): string {
  const decimals = secondsDecimals(stepMs);
  const header = ["time (s)", "arrived", "admitted", "refused"];
  if (unit === "bytes") header.push("admitted B", "refused B");
  header.push(unit === "bytes" ? "level (B)" : "level", "max wait (s)");
  // With classes, what each was admitted: a column a class, after the key's own.
  header.push(...classNames.map((name) => (unit === "bytes" ? `${name} B` : name)));
  const rows = steps.map((step) => {
    const row = [(step.startMs / 1000).toFixed(decimals), String(step.arrived), String(step.admitted), String(step.refused)];
    if (unit === "bytes") row.push(String(round9(step.admittedCost)), String(round9(step.refusedCost)));
    row.push(levelText(step, unit), String(msToSeconds(step.maxWaitMs)));
    row.push(...classNames.map((_, i) => String(classAmount(step, i, unit))));
    return row;
  });
  return alignColumns([header, ...rows], { align: "right" }).join("\n") + "\n";
}

/** The per-step table as CSV with a header row; level is empty with --per-key. */
export function renderStepCsv(steps: readonly LevelStep[], unit: CostUnit, classNames: readonly string[] = []): string {
  const header = ["start_s", "end_s", "arrived", "admitted", "refused"];
  if (unit === "bytes") header.push("admitted_bytes", "refused_bytes");
  header.push("level", "max_wait_s");
  header.push(...classNames.map((name) => `admitted_${unit === "bytes" ? "bytes_" : ""}${name}`));
  const rows = steps.map((step) => {
    const row: Array<string | number> = [msToSeconds(step.startMs), msToSeconds(step.endMs), step.arrived, step.admitted, step.refused];
    if (unit === "bytes") row.push(round9(step.admittedCost), round9(step.refusedCost));
    row.push(step.level === undefined ? "" : round9(step.level), msToSeconds(step.maxWaitMs));
    row.push(...classNames.map((_, i) => classAmount(step, i, unit)));
    return row.join(",");
  });
  return [header.join(","), ...rows].join("\n") + "\n";
}
