/** `--suggest`'s outcome for people (text) and programs (JSON, CSV); the search itself is in ../suggest.ts. */

import { alignColumns, describeRate, describeSize, describeThroughput, exactSeconds, humanWait, percent, round9 } from "../../core/format.js";
import type { CostUnit } from "../simulator.js";
import type { Evaluation, SearchKind, Suggestion } from "../suggest.js";

export interface SuggestionContext {
  unit: CostUnit;
  policy: string;
  /** The fixed setting: the rate when searching the burst, the burst when searching the rate. */
  fixed: number;
  /** How long the arrivals last, and their average rate over it (tokens per second). */
  durationMs: number;
  arrivalRate: number;
}

/**
 * Arrivals faster on average than the rate: the bucket loses ground all along, so the burst that
 * meets the target grows with the length of the trace, and none meets it for ever.
 */
function outpacesRate(suggestion: Suggestion, context: SuggestionContext): boolean {
  return suggestion.kind === "burst" && context.arrivalRate > context.fixed;
}

function describeValue(kind: SearchKind, unit: CostUnit, value: number): string {
  return kind === "burst" ? describeSize(unit, value) : describeRate(unit, value);
}

/** The answer and the trade-off table, for people. */
export function renderSuggestionText(suggestion: Suggestion, context: SuggestionContext): string {
  const { kind, target, answer, below } = suggestion;
  const fixed = kind === "burst" ? `rate ${describeRate(context.unit, context.fixed)}` : `burst ${describeSize(context.unit, context.fixed)}`;
  const lines = [`target      ${target.text}, ${context.policy}, ${fixed}`];
  const outcome = (evaluation: Evaluation) =>
    target.kind === "reject" ? `refused ${percent(evaluation.refusedShare)}` : `${target.text.split(" ")[0]} wait ${humanWait(evaluation.targetWaitMs)}`;
  if (answer) {
    lines.push(`suggestion  ${kind} ${describeValue(kind, context.unit, answer.value)}: ${outcome(answer)}`);
    if (below) lines.push(`            ${kind} ${describeValue(kind, context.unit, below.value)} does not meet it: ${outcome(below)}`);
  } else {
    lines.push(`suggestion  none: no ${kind} meets the target${kind === "rate" ? "; arrivals that cost more than the burst are always refused, so raise the burst" : ""}`);
  }
  if (outpacesRate(suggestion, context)) {
    const average = describeThroughput(context.unit, context.arrivalRate);
    lines.push(
      `note        the arrivals average ${average}, above the rate ${describeRate(context.unit, context.fixed)}:`,
      `            the burst meets the target for these ${exactSeconds(context.durationMs)} only, none for ever;`,
      `            a longer run needs more (--rate auto searches a rate instead)`,
    );
  }
  lines.push(`searched    ${suggestion.runs} simulations`, "");
  const header = [kind, "refused", "share", target.kind === "wait" ? `${target.text.split(" ")[0]} wait` : "p99 wait", "max wait", "meets"];
  const rows = suggestion.table.map((evaluation) => [
    `${evaluation.value === answer?.value ? "→ " : ""}${kind === "burst" ? String(evaluation.value) : describeRate(context.unit, evaluation.value)}`,
    String(evaluation.refused),
    percent(evaluation.refusedShare),
    humanWait(evaluation.targetWaitMs),
    humanWait(evaluation.maxWaitMs),
    evaluation.meets ? "yes" : "no",
  ]);
  lines.push(...alignColumns([header, ...rows], { align: "right" }));
  return lines.join("\n") + "\n";
}

function evaluationJson(evaluation: Evaluation) {
  return {
    value: round9(evaluation.value),
    events: evaluation.events,
    refused: evaluation.refused,
    refusedShare: round9(evaluation.refusedShare),
    p99Wait: round9(evaluation.p99WaitMs / 1000),
    targetWait: round9(evaluation.targetWaitMs / 1000),
    maxWait: round9(evaluation.maxWaitMs / 1000),
    meets: evaluation.meets,
  };
}

export function suggestionToJson(suggestion: Suggestion, context: SuggestionContext): object {
  return {
    search: suggestion.kind,
    target: suggestion.target.text,
    policy: context.policy,
    [suggestion.kind === "burst" ? "rate" : "burst"]: context.fixed,
    duration: round9(context.durationMs / 1000),
    arrivalRate: round9(context.arrivalRate),
    outpacesRate: outpacesRate(suggestion, context),
    answer: suggestion.answer ? round9(suggestion.answer.value) : null,
    below: suggestion.below ? evaluationJson(suggestion.below) : null,
    runs: suggestion.runs,
    table: suggestion.table.map(evaluationJson),
  };
}

export function renderSuggestionCsv(suggestion: Suggestion): string {
  const rows = suggestion.table.map((e) =>
    [round9(e.value), e.events, e.refused, round9(e.refusedShare), round9(e.p99WaitMs / 1000), round9(e.targetWaitMs / 1000), round9(e.maxWaitMs / 1000), e.meets].join(","),
  );
  return [`${suggestion.kind},events,refused,refused_share,p99_wait_s,target_wait_s,max_wait_s,meets`, ...rows].join("\n") + "\n";
}
