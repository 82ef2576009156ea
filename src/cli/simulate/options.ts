import { DEFAULT_IPV6_PREFIX, parseIpv6Prefix } from "../../core/address-key.js";
import { defaultBurst } from "../../core/default-burst.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import { parseCount, parseDuration, parseRateOfKind, parseSizeOfKind, parseWindowOfKind } from "../../core/units.js";
import { parsePattern, patternDurationMs, type Segment } from "../../simulate/arrival-pattern.js";
import type { CostUnit } from "../../simulate/simulator.js";
import type { Policy } from "../../simulate/simulator.js";
import { parseTarget, type Target } from "../../simulate/target.js";
import { plural } from "../../core/format.js";
import { parseOption, UsageError } from "../errors.js";

export type SimulateFormat = "summary" | "table" | "csv" | "jsonl" | "json";

export type SimulateSource =
  | { kind: "pattern"; text: string; segments: Segment[]; durationMs: number; random: boolean }
  | { kind: "trace"; path: string };

export interface SimulateConfig {
  source: SimulateSource;
  /** The seed given with --seed; random segments without one get a fresh seed. */
  seed: number | undefined;
  /** Tokens per second; "auto" with --suggest searches it. */
  ratePerSecond: number | "auto";
  burst: number | undefined;
  /**
   * With more than one limit: the whole set in command-line order, the
   * bucket under test (the first --rate, `ratePerSecond` and `burst`) among
   * them; undefined when that bucket is the only limit.
   */
  limits: LimitSpec[] | undefined;
  costUnit: CostUnit;
  policy: Policy;
  maxWaitMs: number;
  perKey: boolean;
  /** --max-keys; undefined: the proxy's and the middleware's default (run.ts). */
  maxKeys: number | undefined;
  /** With --per-key, a key that is an IPv6 address is keyed by its network of this many bits, as the proxy keys it. */
  ipv6Prefix: number;
  costField: number | undefined;
  keyField: number | undefined;
  skipBad: boolean;
  /** undefined: summary and chart on a terminal, else table. */
  format: SimulateFormat | undefined;
  stepMs: number | undefined;
  chart: boolean;
  svgPath: string | undefined;
  suggest: Target | undefined;
}

/** The flags as commander hands them over. */
export interface SimulateFlags {
  /** Repeatable: one string per --rate (and --burst, --window), in order. */
  rate?: string | readonly string[];
  burst?: string | readonly string[];
  window?: string | readonly string[];
  /** Which of --rate and --window came first on the command line, one entry per flag: limits are numbered in this order. */
  limitOrder?: ReadonlyArray<"rate" | "window">;
  concurrency?: string;
  arrivals?: string;
  seed?: string;
  trace?: string;
  cost?: string;
  costField?: string;
  keyField?: string;
  skipBad?: boolean;
  policy?: string;
  maxWait?: string;
  perKey?: boolean;
  maxKeys?: string;
  ipv6Prefix?: string;
  format?: string;
  step?: string;
  chart?: boolean;
  svg?: string;
  suggest?: boolean;
  target?: string;
}

/** The values of --format, --cost and --policy, for their options' choices. */
export const FORMATS: readonly SimulateFormat[] = ["summary", "table", "csv", "jsonl", "json"];
export const COST_UNITS: readonly CostUnit[] = ["count", "bytes"];
export const POLICIES: readonly Policy[] = ["drop", "queue"];

/** Turns the flags into a checked configuration; every mistake is a UsageError naming the flag. */
export function parseSimulateOptions(flags: SimulateFlags): SimulateConfig {
  if (flags.arrivals !== undefined && flags.trace !== undefined) {
    throw new UsageError(`--arrivals and --trace: choose one; a pattern or a file of events`);
  }
  if (flags.arrivals === undefined && flags.trace === undefined) {
    throw new UsageError(`--arrivals or --trace: missing; try --arrivals "steady 8/s for 10s" or --trace access.log`);
  }
  // --cost, --policy and --format are checked by their choiceOption.
  const costUnit = (flags.cost ?? "count") as CostUnit;
  const suggest = Boolean(flags.suggest);

  let source: SimulateSource;
  if (flags.arrivals !== undefined) {
    const segments = parseOption("--arrivals", flags.arrivals, parsePattern);
    source = {
      kind: "pattern",
      text: flags.arrivals,
      segments,
      durationMs: patternDurationMs(segments),
      random: segments.some((segment) => segment.kind === "poisson"),
    };
    for (const [flag, value] of [["--cost-field", flags.costField], ["--key-field", flags.keyField], ["--skip-bad", flags.skipBad]] as const) {
      if (value !== undefined) throw new UsageError(`${flag}: only with --trace; a pattern's arrivals cost 1 and have no key`);
    }
    if (costUnit === "bytes") throw new UsageError(`--cost bytes: needs sizes; use --trace with an access log or --cost-field N`);
    if (flags.perKey) throw new UsageError(`--per-key: a pattern has no keys; use --trace with --key-field N or an access log`);
  } else {
    source = { kind: "trace", path: flags.trace! };
    if (flags.seed !== undefined) throw new UsageError(`--seed: only with --arrivals; a trace is not random`);
  }
  const seed = flags.seed === undefined ? undefined : parseOption("--seed", flags.seed, (text) => parseCount(text, 0));

  if (flags.concurrency !== undefined) {
    throw new UsageError(`--concurrency: not in simulate, whose events have no duration to hold a slot for; simulate the --rate and --window limits, and use --concurrency with run or the proxy`);
  }
  const rates = listOf(flags.rate);
  const bursts = listOf(flags.burst);
  const windows = listOf(flags.window);
  if (rates.length === 0) {
    const example = costUnit === "bytes" ? `"--rate 1mb"` : `"--rate 5/s"`;
    throw new UsageError(`--rate: missing; the bucket under test needs one, e.g. ${example}${suggest ? ` (or "--rate auto")` : ""}`);
  }
  if (bursts.length > rates.length) {
    throw new UsageError(`--burst: ${bursts.length} bursts for ${plural(rates.length, "rate")}; the i-th --burst goes with the i-th --rate, so give at most one per --rate`);
  }
  const limitCount = rates.length + windows.length;
  if (suggest && limitCount > 1) {
    throw new UsageError(`--suggest: tunes one bucket, and this run has ${limitCount} limits; keep one --rate and no --window to tune it, then simulate the set with the answer`);
  }
  const firstRate = rates[0]!;
  let ratePerSecond: number | "auto";
  if (firstRate.trim().toLowerCase() === "auto") {
    if (!suggest) throw new UsageError(`--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`);
    ratePerSecond = "auto";
  } else {
    ratePerSecond = parseOption("--rate", firstRate, (text) => parseRateOfKind(costUnit, text));
  }

  let burst: number | undefined;
  const firstBurst = bursts[0];
  if (firstBurst !== undefined && suggest && ratePerSecond !== "auto") {
    // It would be ignored: the search tries every burst.
    throw new UsageError(`--burst: not with --suggest at a fixed rate, which searches the burst; leave --burst out, or give --rate auto to search the rate for this burst`);
  }
  if (firstBurst !== undefined) {
    burst = parseOption("--burst", firstBurst, (text) => parseSizeOfKind(costUnit, text));
  } else if (!suggest || ratePerSecond === "auto") {
    const example = costUnit === "bytes" ? `"--burst 4mb"` : `"--burst 10"`;
    const why = ratePerSecond === "auto" ? "--rate auto searches the rate for a given burst" : "the bucket under test needs one";
    throw new UsageError(`--burst: missing; ${why}, e.g. ${example}${suggest ? "" : " (or --suggest to search it)"}`);
  }

  const limits = limitCount > 1 ? limitSet(rates, bursts, windows, flags.limitOrder, costUnit, ratePerSecond as number, burst!) : undefined;

  let policy: Policy = "drop";
  let maxWaitMs = Infinity;
  if (flags.maxWait !== undefined) {
    if (flags.policy === "drop") throw new UsageError(`--max-wait: only with --policy queue; drop never waits`);
    maxWaitMs = parseOption("--max-wait", flags.maxWait, parseDuration);
    policy = "queue";
  }
  if (flags.policy === "queue") policy = "queue";

  let maxKeys: number | undefined;
  if (flags.maxKeys !== undefined) {
    if (!flags.perKey) throw new UsageError(`--max-keys: only with --per-key; try "--per-key --max-keys ${flags.maxKeys}"`);
    maxKeys = parseOption("--max-keys", flags.maxKeys, (text) => parseCount(text));
  }
  if (flags.ipv6Prefix !== undefined && !flags.perKey) throw new UsageError(`--ipv6-prefix: only with --per-key; try "--per-key --ipv6-prefix ${flags.ipv6Prefix}"`);
  const ipv6Prefix = flags.ipv6Prefix === undefined ? DEFAULT_IPV6_PREFIX : parseOption("--ipv6-prefix", flags.ipv6Prefix, parseIpv6Prefix);
  const field = (flag: string, text: string | undefined) => (text === undefined ? undefined : parseOption(flag, text, (t) => parseCount(t)));
  const costField = field("--cost-field", flags.costField);
  const keyField = field("--key-field", flags.keyField);

  const format = flags.format as SimulateFormat | undefined;
  const chart = Boolean(flags.chart);
  if (chart && (format === "csv" || format === "json" || format === "jsonl")) {
    throw new UsageError(`--chart: not with --format ${format}, which is for programs; use --format summary or table, or --svg FILE`);
  }
  const stepMs = flags.step === undefined ? undefined : parseOption("--step", flags.step, parseDuration);
  if (stepMs === 0) throw new UsageError(`--step: "${flags.step}" is no width; try "1s" or "100ms"`);

  let target: Target | undefined;
  if (suggest) {
    target = parseOption("--target", flags.target ?? "reject<=1%", parseTarget);
    if (target.kind === "wait" && policy === "drop") {
      throw new UsageError(`--target: "${flags.target}" needs --policy queue; drop never waits (try "reject<=1%")`);
    }
    if (format === "jsonl" || format === "table") {
      throw new UsageError(`--format: ${format} is not a --suggest format; try summary, csv or json`);
    }
    if (flags.svg !== undefined) throw new UsageError(`--svg: not with --suggest; run again with the suggested setting to plot it`);
    if (chart) throw new UsageError(`--chart: not with --suggest; run again with the suggested setting to chart it`);
  } else if (flags.target !== undefined) {
    throw new UsageError(`--target: only with --suggest; try "--suggest --target ${flags.target}"`);
  }

  return {
    source,
    seed,
    ratePerSecond,
    burst,
    limits,
    costUnit,
    policy,
    maxWaitMs,
    perKey: Boolean(flags.perKey),
    maxKeys,
    ipv6Prefix,
    costField,
    keyField,
    skipBad: Boolean(flags.skipBad),
    format,
    stepMs,
    chart,
    svgPath: flags.svg,
    suggest: target,
  };
}

/** A repeatable flag's values, in order: commander gives one string, or an array once repeated. */
function listOf(value: string | readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

/**
 * The set: every --rate (the i-th --burst with the i-th, else the default
 * burst of its kind) and every --window, numbered in command-line order
 * (rates first when the order is not known). Every limit counts the event's
 * cost, in the one unit of --cost.
 */
function limitSet(
  rates: readonly string[],
  bursts: readonly string[],
  windows: readonly string[],
  order: ReadonlyArray<"rate" | "window"> | undefined,
  unit: CostUnit,
  firstRate: number,
  firstBurst: number,
): LimitSpec[] {
  const buckets: LimitSpec[] = rates.map((text, index) => {
    if (index === 0) return { kind: "bucket", unit, rate: firstRate, burst: firstBurst };
    if (text.trim().toLowerCase() === "auto") throw new UsageError(`--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`);
    const rate = parseOption("--rate", text, (value) => parseRateOfKind(unit, value));
    const burstText = bursts[index];
    const burst = burstText === undefined ? defaultBurst(unit, rate) : parseOption("--burst", burstText, (value) => parseSizeOfKind(unit, value));
    return { kind: "bucket", unit, rate, burst };
  });
  const windowLimits: LimitSpec[] = windows.map((text) => {
    const { n, windowMs } = parseOption("--window", text, (value) => parseWindowOfKind(unit, value));
    return { kind: "window", unit, n, windowMs };
  });
  const inOrder = order !== undefined && order.length === buckets.length + windowLimits.length ? order : [...buckets.map(() => "rate" as const), ...windowLimits.map(() => "window" as const)];
  let nextBucket = 0;
  let nextWindow = 0;
  return inOrder.map((flag) => (flag === "rate" ? buckets[nextBucket++]! : windowLimits[nextWindow++]!));
}
