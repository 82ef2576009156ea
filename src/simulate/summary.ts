import { alignColumns, describeRate, describeSize, describeThroughput, exactSeconds, humanWait, msToSeconds, percent, round9 } from "../core/format.js";
import type { KeyTally } from "./key-tallies.js";
import type { Recorder } from "./recorder.js";
import type { CostUnit } from "./simulator.js";
import type { SkippedLine, TraceReport } from "./trace-reader.js";

export interface SummaryContext {
  costUnit: CostUnit;
  /** Where the timeline ends: the pattern's length, or the last event of a trace. */
  endMs: number;
  /** The seed used by random pattern segments. */
  seed: number | undefined;
  trace: TraceReport | undefined;
  /** How a skipped line reads in the summary; by default `line N: ` and what was wrong. */
  describeSkipped?: (line: SkippedLine) => string;
}

/** The summary as data: seconds for times, shares from 0 to 1. JSON prints it as is. */
export interface Summary {
  rate: number;
  burst: number;
  cost: CostUnit;
  policy: "drop" | "queue";
  maxWait: number | null;
  perKey: boolean;
  maxKeys: number | null;
  seed: number | null;
  duration: number;
  events: number;
  admitted: number;
  refused: number;
  refusedShare: number;
  firstRefusedAt: number | null;
  admittedCost: number;
  refusedCost: number;
  overBurst: number;
  throughput: number;
  wait: { p50: number; p90: number; p99: number; max: number; mean: number; exact: boolean } | null;
  longestQueue: number | null;
  emptyShare: number | null;
  /** `seen` is an estimate within about 1 % when `seenExact` is false (past 100,000 keys, once buckets were evicted). */
  keys: { seen: number; seenExact: boolean; evicted: number; mostRefused: KeyTally[] } | null;
  trace: { lines: number; skipped: number; skippedExamples: string[]; outOfOrder: number } | null;
}

export function buildSummary(recorder: Recorder, context: SummaryContext): Summary {
  const { options } = recorder.simulator;
  const { waits } = recorder;
  const durationSeconds = context.endMs / 1000;
  const queue = options.policy === "queue";
  const emptyShare = recorder.emptyShare(context.endMs);
  return {
    rate: options.ratePerSecond,
    burst: options.burst,
    cost: context.costUnit,
    policy: options.policy,
    maxWait: queue && Number.isFinite(options.maxWaitMs) ? msToSeconds(options.maxWaitMs) : null,
    perKey: options.perKey,
    maxKeys: options.perKey && Number.isFinite(options.maxKeys) ? options.maxKeys : null,
    seed: context.seed ?? null,
    duration: msToSeconds(context.endMs),
    events: recorder.events,
    admitted: recorder.admitted,
    refused: recorder.refused,
    refusedShare: recorder.events === 0 ? 0 : round9(recorder.refused / recorder.events),
    firstRefusedAt: recorder.firstRefusedMs === undefined ? null : msToSeconds(recorder.firstRefusedMs),
    admittedCost: round9(recorder.admittedCost),
    refusedCost: round9(recorder.refusedCost),
    overBurst: recorder.overBurst,
    throughput: durationSeconds > 0 ? round9(recorder.admittedCost / durationSeconds) : 0,
    wait: queue
      ? {
          p50: msToSeconds(waits.quantileMs(0.5)),
          p90: msToSeconds(waits.quantileMs(0.9)),
          p99: msToSeconds(waits.quantileMs(0.99)),
          max: msToSeconds(waits.maxMs),
          mean: msToSeconds(waits.meanMs),
          exact: waits.exact,
        }
      : null,
    longestQueue: queue ? recorder.longestQueue : null,
    emptyShare: emptyShare === undefined ? null : round9(emptyShare),
    keys: options.perKey ? keysSummary(recorder) : null,
    trace: context.trace
      ? {
          lines: context.trace.lines,
          skipped: context.trace.skipped,
          skippedExamples: context.trace.skippedExamples.map(context.describeSkipped ?? describeSkippedLine),
          outOfOrder: context.trace.outOfOrder,
        }
      : null,
  };
}

function keysSummary(recorder: Recorder): NonNullable<Summary["keys"]> {
  const seen = recorder.keys.seen;
  return {
    // An estimate is given to two significant digits, the precision it has.
    seen: seen.exact ? seen.count : Number(seen.count.toPrecision(2)),
    seenExact: seen.exact,
    evicted: recorder.simulator.evictions,
    mostRefused: recorder.keys.mostRefused(10),
  };
}

function describeSkippedLine(line: SkippedLine): string {
  return `line ${line.lineNumber}: ${line.bad.message}`;
}

/** The policy in words, with the x/time/rate call it mirrors. */
export function describePolicy(summary: Pick<Summary, "policy" | "maxWait">): string {
  if (summary.policy === "drop") return "drop (Allow)";
  return summary.maxWait === null ? "queue (Reserve)" : `queue (Reserve), max wait ${humanWait(summary.maxWait * 1000)}`;
}

export interface SummaryTextOptions {
  /** Why bad lines were skipped, shown after their count: the caller's name for `skipBad`. */
  skippedBecause?: string;
}

/** The summary for people: one aligned line per figure. */
export function renderSummaryText(summary: Summary, options: SummaryTextOptions = {}): string {
  const unit = summary.cost;
  const lines: Array<[string, string]> = [];
  const share = (n: number) => (summary.events === 0 ? "" : `  (${percent(n / summary.events)})`);
  const bucket = summary.perKey
    ? `one bucket per key${summary.maxKeys === null ? "" : `, at most ${summary.maxKeys}`}`
    : "one bucket";
  lines.push(["bucket", `rate ${describeRate(unit, summary.rate)}, burst ${describeSize(unit, summary.burst)}, ${describePolicy(summary)}, ${bucket}`]);
  const pace = summary.duration > 0 ? ` (${describeThroughput("count", summary.events / summary.duration)})` : "";
  lines.push(["arrivals", `${summary.events} over ${exactSeconds(summary.duration * 1000)}${pace}${summary.seed === null ? "" : `, seed ${summary.seed}`}`]);
  lines.push(["admitted", `${summary.admitted}${share(summary.admitted)}${unit === "bytes" ? `, ${describeSize("bytes", summary.admittedCost)}` : ""}`]);
  const first = summary.firstRefusedAt === null ? "" : `, the first at ${exactSeconds(summary.firstRefusedAt * 1000)}`;
  lines.push(["refused", `${summary.refused}${share(summary.refused)}${first}`]);
  if (summary.overBurst > 0) {
    lines.push(["over burst", `${summary.overBurst} arrivals cost more than the burst and can never be admitted`]);
  }
  if (summary.duration > 0) lines.push(["throughput", `${describeThroughput(unit, summary.throughput)} admitted`]);
  if (summary.wait) {
    const w = summary.wait;
    const ms = (s: number) => humanWait(s * 1000);
    lines.push(["wait", `p50 ${ms(w.p50)}, p90 ${ms(w.p90)}, p99 ${ms(w.p99)}, max ${ms(w.max)}${w.exact ? "" : " (percentiles within 0.1%)"}`]);
    lines.push(["longest queue", `${summary.longestQueue} waiting at once`]);
  }
  if (summary.emptyShare !== null) lines.push(["bucket empty", `${percent(summary.emptyShare)} of the time`]);
  if (summary.keys) {
    const k = summary.keys;
    lines.push(["keys", `${k.seenExact ? "" : "about "}${k.seen} seen${summary.maxKeys === null ? "" : `, ${k.evicted} evictions`}`]);
    k.mostRefused.forEach((tally, index) => {
      lines.push([index === 0 ? "most refused" : "", `${tally.key}: ${tally.refused} of ${tally.arrived} refused`]);
    });
  }
  if (summary.trace) {
    const t = summary.trace;
    if (t.skipped > 0) {
      const because = options.skippedBecause === undefined ? "" : ` (${options.skippedBecause})`;
      lines.push(["skipped", `${t.skipped} bad line${t.skipped === 1 ? "" : "s"}${because}`]);
      for (const example of t.skippedExamples) lines.push(["", example]);
    }
    if (t.outOfOrder > 0) lines.push(["out of order", `${t.outOfOrder} events earlier than the one before, taken at its time`]);
  }
  // A continuation line has no label, and a figure may be empty: no line ends in spaces.
  return alignColumns(lines).map((line) => line.trimEnd()).join("\n") + "\n";
}
