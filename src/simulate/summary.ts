import { resolveClasses } from "../core/class-spec.js";
import { msToSeconds, round9 } from "../core/format.js";
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

/** One limit of the set and how often it bound: refused an arrival, or set an admitted arrival's wait. */
export type LimitSummary =
  | { limit: number; kind: "bucket"; rate: number; burst: number; refused: number; delayed: number }
  | { limit: number; kind: "window"; n: number; window: number; refused: number; delayed: number }
  | { limit: number; kind: "concurrency"; n: number; refused: number; delayed: number };

/** A class and what it got: `share` of all admitted cost, `throughput` its admitted cost per second over the summary's `throughputOver`. */
export interface ClassSummary {
  name: string;
  rate: number;
  ceil: number;
  prio: number;
  weight: number;
  burst: number;
  events: number;
  admitted: number;
  refused: number;
  admittedCost: number;
  share: number;
  throughput: number;
  wait: { p50: number; p99: number; max: number } | null;
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
  /** Every limit, numbered from 1 in command-line order (the bucket under test, `rate` and `burst`, among them). */
  limits: LimitSummary[];
  duration: number;
  events: number;
  admitted: number;
  refused: number;
  refusedShare: number;
  firstRefusedAt: number | null;
  admittedCost: number;
  refusedCost: number;
  overBurst: number;
  /** Admitted tokens per second over `throughputOver` seconds. */
  throughput: number;
  /** From 0 to the end of the arrivals, or to when the last admitted one was served if later (a queue's waits). */
  throughputOver: number;
  wait: { p50: number; p90: number; p99: number; max: number; mean: number; exact: boolean } | null;
  longestQueue: number | null;
  emptyShare: number | null;
  /** `seen` is an estimate within about 1 % when `seenExact` is false (past 100,000 keys, once buckets were evicted). */
  keys: { seen: number; seenExact: boolean; evicted: number; mostRefused: KeyTally[] } | null;
  /** With classes, each in definition order. */
  classes: ClassSummary[] | null;
  trace: { lines: number; skipped: number; skippedExamples: string[]; outOfOrder: number } | null;
}

export function buildSummary(recorder: Recorder, context: SummaryContext): Summary {
  const { options } = recorder.simulator;
  const { waits } = recorder;
  // A queue serves its last arrivals after they arrive: what it admitted took until then.
  const servedMs = Math.max(context.endMs, recorder.lastServedMs);
  const servedSeconds = servedMs / 1000;
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
    limits: limitsSummary(recorder),
    duration: msToSeconds(context.endMs),
    events: recorder.events,
    admitted: recorder.admitted,
    refused: recorder.refused,
    refusedShare: recorder.events === 0 ? 0 : round9(recorder.refused / recorder.events),
    firstRefusedAt: recorder.firstRefusedMs === undefined ? null : msToSeconds(recorder.firstRefusedMs),
    admittedCost: round9(recorder.admittedCost),
    refusedCost: round9(recorder.refusedCost),
    overBurst: recorder.overBurst,
    throughput: servedSeconds > 0 ? round9(recorder.admittedCost / servedSeconds) : 0,
    throughputOver: msToSeconds(servedMs),
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
    classes: options.classes === undefined ? null : classesSummary(recorder, servedSeconds, queue),
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

function limitsSummary(recorder: Recorder): LimitSummary[] {
  return recorder.simulator.limits.map((spec, index) => {
    const bound = { refused: recorder.refusedBy[index]!, delayed: recorder.delayedBy[index]! };
    const limit = index + 1;
    if (spec.kind === "bucket") return { limit, kind: "bucket", rate: spec.rate, burst: spec.burst, ...bound };
    if (spec.kind === "window") return { limit, kind: "window", n: spec.n, window: msToSeconds(spec.windowMs), ...bound };
    return { limit, kind: "concurrency", n: spec.n, ...bound };
  });
}

function classesSummary(recorder: Recorder, servedSeconds: number, queue: boolean): ClassSummary[] {
  const { ratePerSecond, burst, classes = [] } = recorder.simulator.options;
  return resolveClasses(classes, ratePerSecond, burst).map((spec) => {
    const tally = recorder.classes.get(spec.name)!;
    return {
      name: spec.name,
      rate: spec.rate,
      ceil: spec.ceil,
      prio: spec.prio,
      weight: round9(spec.weight),
      burst: round9(spec.burst),
      events: tally.arrived,
      admitted: tally.admitted,
      refused: tally.refused,
      admittedCost: round9(tally.admittedCost),
      share: recorder.admittedCost > 0 ? round9(tally.admittedCost / recorder.admittedCost) : 0,
      throughput: servedSeconds > 0 ? round9(tally.admittedCost / servedSeconds) : 0,
      wait: queue ? { p50: msToSeconds(tally.waits.quantileMs(0.5)), p99: msToSeconds(tally.waits.quantileMs(0.99)), max: msToSeconds(tally.waits.maxMs) } : null,
    };
  });
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
