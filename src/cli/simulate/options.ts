import { DEFAULT_IPV6_PREFIX, parseIpv6Prefix } from "../../core/address-key.js";
import type { ClassSpec } from "../../core/class-spec.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import { parseCount, parseDuration } from "../../core/units.js";
import { parsePattern, patternDurationMs, type Segment } from "../../simulate/arrival-pattern.js";
import type { CostUnit } from "../../simulate/simulator.js";
import type { Policy } from "../../simulate/simulator.js";
import { parseTarget, type Target } from "../../simulate/target.js";
import { parseOption, UsageError } from "../errors.js";
import { describeUnknownClass, parseClassOptions } from "../class-options.js";
import { isAutoRate, type LimitFlags, parseLimitOptions } from "../limit-options.js";

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
  /** Classes sharing the limits (--class), in definition order; undefined without. */
  classes: ClassSpec[] | undefined;
  /** --class-field: the field naming each event's class. */
  classField: number | undefined;
  /** The class of an event that names none: --default-class, else the first class. */
  defaultClass: string | undefined;
  skipBad: boolean;
  /** undefined: summary and chart on a terminal, else table. */
  format: SimulateFormat | undefined;
  stepMs: number | undefined;
  chart: boolean;
  svgPath: string | undefined;
  suggest: Target | undefined;
}

/** The flags as commander hands them over; the limits' as addLimitOptions declares them. */
export interface SimulateFlags extends LimitFlags {
  arrivals?: string;
  seed?: string;
  trace?: string;
  cost?: string;
  costField?: string;
  keyField?: string;
  class?: string[];
  classField?: string;
  defaultClass?: string;
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
  // simulate's own rules on the limit flags, before the one grammar reads their values.
  const rates = flags.rate ?? [];
  const limitCount = rates.length + (flags.window?.length ?? 0);
  if (rates.length === 0) {
    const example = costUnit === "bytes" ? `"--rate 1mb"` : `"--rate 5/s"`;
    throw new UsageError(`--rate: missing; the bucket under test needs one, e.g. ${example}${suggest ? ` (or "--rate auto")` : ""}`);
  }
  if (suggest && limitCount > 1) {
    throw new UsageError(`--suggest: tunes one bucket, and this run has ${limitCount} limits; keep one --rate and no --window to tune it, then simulate the set with the answer`);
  }
  if (!suggest && rates.some((rate) => isAutoRate(rate.text))) {
    throw new UsageError(`--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`);
  }
  const autoRate = isAutoRate(rates[0]!.text);
  const firstBurstGiven = (flags.burst?.length ?? 0) > 0;
  if (firstBurstGiven && suggest && !autoRate) {
    // It would be ignored: the search tries every burst.
    throw new UsageError(`--burst: not with --suggest at a fixed rate, which searches the burst; leave --burst out, or give --rate auto to search the rate for this burst`);
  }
  if (!firstBurstGiven && (!suggest || autoRate)) {
    const example = costUnit === "bytes" ? `"--burst 4mb"` : `"--burst 10"`;
    const why = autoRate ? "--rate auto searches the rate for a given burst" : "the bucket under test needs one";
    throw new UsageError(`--burst: missing; ${why}, e.g. ${example}${suggest ? "" : " (or --suggest to search it)"}`);
  }
  // Every limit counts the event's cost, in the one unit of --cost.
  const parsed = parseLimitOptions(flags, { units: costUnit, autoRate: suggest });
  // The bucket under test is the first --rate, wherever a --window stands before it.
  const underTest = parsed.limits.find((limit) => limit.spec.kind === "bucket")?.spec;
  const ratePerSecond = underTest?.kind === "bucket" ? underTest.rate : "auto";
  const burst = underTest?.kind === "bucket" ? (firstBurstGiven ? underTest.burst : undefined) : parsed.loneBurst;
  const limits = limitCount > 1 ? parsed.limits.map((limit) => limit.spec) : undefined;

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

  const { classes, classField, defaultClass } = parseClasses(flags, source, costUnit, ratePerSecond, suggest);

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
    classes,
    classField,
    defaultClass,
    skipBad: Boolean(flags.skipBad),
    format,
    stepMs,
    chart,
    svgPath: flags.svg,
    suggest: target,
  };
}

/** --class, --class-field and --default-class: classes share the limits, an event names its class or gets the default. */
function parseClasses(
  flags: SimulateFlags,
  source: SimulateSource,
  costUnit: CostUnit,
  ratePerSecond: number | "auto",
  suggest: boolean,
): Pick<SimulateConfig, "classes" | "classField" | "defaultClass"> {
  const texts = flags.class ?? [];
  if (texts.length === 0) {
    if (flags.classField !== undefined) throw new UsageError(`--class-field: only with --class, which defines the classes it names; e.g. "--class web=60/s --class batch=40/s --class-field 2"`);
    if (flags.defaultClass !== undefined) throw new UsageError(`--default-class: only with --class, which defines the classes; e.g. "--class web=60/s --class batch=40/s --default-class batch"`);
    return { classes: undefined, classField: undefined, defaultClass: undefined };
  }
  if (suggest) throw new UsageError(`--class: not with --suggest, which tunes one bucket; tune the key's rate and burst first, then simulate its classes`);
  if (flags.perKey) throw new UsageError(`--class: not with --per-key yet; simulate the classes of one key, without --per-key`);
  if (flags.classField !== undefined && source.kind !== "trace") throw new UsageError(`--class-field: only with --trace; a pattern's arrivals all go to the --default-class (or the first class)`);
  if (flags.classField !== undefined && flags.keyField !== undefined) throw new UsageError(`--key-field: not with --class-field; simulate the classes of one key`);
  const classes = parseClassOptions(texts, costUnit, ratePerSecond as number);
  const classField = flags.classField === undefined ? undefined : parseOption("--class-field", flags.classField, (t) => parseCount(t));
  const names = classes.map((spec) => spec.name);
  const defaultClass = flags.defaultClass;
  if (defaultClass !== undefined && !names.includes(defaultClass)) throw new UsageError(describeUnknownClass(defaultClass, names, "--default-class"));
  return { classes, classField, defaultClass };
}
