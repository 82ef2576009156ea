import type { ClassSpec } from "../../core/class-spec.js";
import { parseCount, parseDuration } from "../../core/units.js";
import { type ClassOf, parseClassOf } from "../../run/class-of.js";
import { takesItems } from "../../run/command-template.js";
import { parseShellTemplate, ShellTemplateError } from "../../run/shell-quote.js";
import type { OutputMode } from "../../run/job-output.js";
import { describeUnknownClass, parseClassOptions } from "../class-options.js";
import { parseOption, UsageError } from "../errors.js";
import { type LimitFlags, needsLimitSet, type ParsedLimit, parseLimitOptions } from "../limit-options.js";
import { parseReportOptions, type ReportFlags, type ReportOptions } from "../report-options.js";
import { parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";
import { type CostFlags, type JobCost, parseCostOptions } from "./cost-options.js";

export interface RunConfig extends ReportOptions {
  /** The command and its arguments, `{}` and `{#}` still in them. */
  command: string[];
  /** Every limit, in command-line order (the cost limits after the launch limits): one bucket, or a set (see needsLimitSet); none: from --key. */
  limits: ParsedLimit[];
  /** --cost: each job's costs from its item (one, or one per cost limit), counted by the --cost-rate and --cost-window limits. */
  cost: JobCost[] | undefined;
  /** With one bucket: launches per second; undefined: from --key, or a set. */
  rate: number | undefined;
  /** With one bucket, as given (undefined: its default), or with --key alone the key's new burst. */
  burst: number | undefined;
  /** Most jobs at once, the lower of --jobs and --concurrency; Infinity for no limit. */
  jobs: number;
  /** Where items come from: a file, standard input ("-"), or none (no `{}` in the command). */
  input: string | undefined;
  /** At most this many jobs; Infinity: until the items end or forever. */
  count: number;
  durationMs: number;
  maxWaitMs: number;
  /** --skip-bad: an item whose cost or class cannot be read is skipped and counted, not failed. */
  skipBad: boolean;
  /** After a signal is passed on to jobs, kill those still running this much later. */
  killAfterMs: number;
  retries: number;
  /** --adaptive: the launch rate follows the server's pushback, `rate` its ceiling. */
  adaptive: boolean;
  output: OutputMode;
  tag: boolean;
  joblog: string | undefined;
  shell: boolean;
  /** --force: job output that looks binary goes to a terminal too. */
  force: boolean;
  shared: SharedBucketOptions;
  /** Classes sharing the launch limits (--class), in definition order; undefined without. */
  classes: ClassSpec[] | undefined;
  /** Each job's class (--class-of; default the first class); undefined without classes. */
  classOf: ClassOf | undefined;
}

/** The run's flags as commander hands them over. */
export interface RunFlags extends ReportFlags, SharedBucketFlags, LimitFlags, CostFlags {
  jobs: string;
  input?: string;
  count?: string;
  duration?: string;
  maxWait?: string;
  skipBad?: boolean;
  killAfter: string;
  retries: string;
  adaptive?: boolean;
  output: string;
  tag?: boolean;
  joblog?: string;
  shell?: boolean;
  force?: boolean;
  class?: string[];
  classOf?: string;
}

/** --output's values. */
export const OUTPUT_MODES: readonly OutputMode[] = ["line", "group", "raw"];

const BYTE_RATE_HINT =
  `run launches commands, so it takes a count rate such as "5" or "300/m"; ` +
  `to limit a command's bandwidth, pipe it: curl -s URL | tbucket --rate 1mb > file`;

/** Turns the run's flags into a checked configuration; every mistake is a UsageError. */
export function parseRunOptions(words: string[], flags: RunFlags): RunConfig {
  const shared = parseSharedBucketOptions(flags);
  if (words.length === 0) {
    throw new UsageError(`run: no command given; try "tbucket run --rate 5 -- curl -s https://example.com"`);
  }
  if (words[0] === "") {
    throw new UsageError(`run: the command name is empty; name the program to run, e.g. "tbucket run --rate 5 -- curl -s https://example.com"`);
  }
  // 0 pauses a shared key; a private bucket at 0 would never launch.
  const launchLimits = parseLimitOptions(flags, { units: "count", keyed: shared.key !== undefined, byteRateHint: BYTE_RATE_HINT });
  const { loneBurst } = launchLimits;
  if (!launchLimits.limits.some((limit) => limit.spec.kind !== "concurrency") && shared.key === undefined) {
    throw new UsageError(`--rate: missing; try "tbucket run --rate 5 -- <command>", or --key to use a shared bucket`);
  }
  const costs = parseCostOptions(flags, shared.key !== undefined);
  const limits = [...launchLimits.limits, ...costs.limits];
  const single = needsLimitSet(limits) ? undefined : limits[0];
  const rate = single?.spec.kind === "bucket" ? single.spec.rate : undefined;
  const burst = single?.spec.kind === "bucket" ? (single.burstGiven ? single.spec.burst : undefined) : loneBurst;
  const jobs = parseOption("--jobs", flags.jobs, (text) => parseCount(text, 0));
  const concurrency = limits.find((limit) => limit.spec.kind === "concurrency")?.spec as { n: number } | undefined;
  const count = flags.count === undefined ? Infinity : parseOption("--count", flags.count, (text) => parseCount(text));
  const durationMs = flags.duration === undefined ? Infinity : parseOption("--duration", flags.duration, positiveDuration);
  const maxWaitMs = flags.maxWait === undefined ? Infinity : parseOption("--max-wait", flags.maxWait, parseDuration);
  const killAfterMs = parseOption("--kill-after", flags.killAfter, parseDuration);
  const retries = parseOption("--retries", flags.retries, (text) => parseCount(text, 0));
  // choiceOption has checked it.
  const output = flags.output as OutputMode;
  if (flags.tag && output === "raw") {
    throw new UsageError(`--tag: raw output is not split into lines, so it cannot be tagged; use "--output line" or "--output group"`);
  }
  const items = takesItems(words);
  if (flags.input !== undefined && !items) {
    throw new UsageError(`--input: no argument of the command holds {}; write {} where the item goes, e.g. "curl -s {}"`);
  }
  if (flags.shell) checkShellScript(words.join(" "));
  const { classes, classOf } = parseRunClasses(flags, limits, shared, items);
  if (costs.costs !== undefined) {
    if (classes !== undefined) throw new UsageError(`--cost: classes do not count costs yet; drop --class, or --cost and its limits`);
    const fromItem = costs.costs.find((cost) => cost.template.kind !== "number");
    if (fromItem && !items) {
      throw new UsageError(`--cost ${fromItem.template.source}: the jobs have no items (no {} in the command) to read a cost from; give a number for all, e.g. "--cost 100"`);
    }
  }
  if (flags.adaptive) checkAdaptive(limits, shared, classes);
  const { progress, stats, name } = parseReportOptions(flags);
  return {
    command: words,
    limits,
    rate,
    burst,
    jobs: Math.min(jobs === 0 ? Infinity : jobs, concurrency?.n ?? Infinity),
    input: items ? (flags.input ?? "-") : undefined,
    count,
    durationMs,
    maxWaitMs,
    skipBad: Boolean(flags.skipBad),
    killAfterMs,
    retries,
    adaptive: Boolean(flags.adaptive),
    output,
    tag: Boolean(flags.tag),
    joblog: flags.joblog,
    shell: Boolean(flags.shell),
    force: Boolean(flags.force),
    progress,
    stats,
    name,
    shared,
    classes,
    classOf,
    cost: costs.costs,
  };
}

/** The least a class's guarantee bucket holds by default, in launches. */
const CLASS_BURST = 2;

/**
 * --class and --class-of: classes share the launch limits (the first bucket's rate), private to
 * this run; each job's class is read from its item or named once for all.
 */
function parseRunClasses(flags: RunFlags, limits: readonly ParsedLimit[], shared: SharedBucketOptions, items: boolean): Pick<RunConfig, "classes" | "classOf"> {
  const texts = flags.class ?? [];
  if (shared.key !== undefined) {
    // A shared key's classes are the key's, set by `tbucket key set`; the run only says which each job takes as.
    if (texts.length > 0) {
      throw new UsageError(`--class: a shared key's classes are set with "tbucket key set ${shared.key} --class NAME=RATE ..."; with --key, choose each job's with --class-of`);
    }
    if (flags.classOf === undefined) return { classes: undefined, classOf: undefined };
    const classOf = parseOption("--class-of", flags.classOf, parseClassOf);
    if (classOf.kind === "field" && !items) {
      throw new UsageError(`--class-of ${flags.classOf}: the jobs have no items (no {} in the command) to read a class from; name one class for all`);
    }
    return { classes: undefined, classOf };
  }
  if (texts.length === 0) {
    if (flags.classOf !== undefined) throw new UsageError(`--class-of: only with --class, which defines the classes (or --key, whose classes are the key's); e.g. "--class web=15/s,prio=0 --class batch=5/s,prio=1 --class-of {2}"`);
    return { classes: undefined, classOf: undefined };
  }
  const key = limits.find((limit) => limit.spec.kind === "bucket")?.spec;
  const keyRate = key?.kind === "bucket" ? key.rate : Infinity;
  const classes = parseClassOptions(texts, "count", keyRate);
  if (key?.kind === "bucket") {
    // A launch costs one: a guarantee bucket holding less (1 × 15/20 by default) could never admit one, and one
    // holding just one loses what accrues while its launch waits for the shared bucket. It holds two at least.
    for (const spec of classes) if (spec.burst === undefined && spec.rate > 0) spec.burst = Math.max(CLASS_BURST, (key.burst * spec.rate) / key.rate);
  }
  const names = classes.map((spec) => spec.name);
  if (flags.classOf === undefined) return { classes, classOf: { kind: "name", name: names[0]! } };
  const classOf = parseOption("--class-of", flags.classOf, parseClassOf);
  if (classOf.kind === "name" && !names.includes(classOf.name)) throw new UsageError(describeUnknownClass(classOf.name, names, "--class-of"));
  if (classOf.kind === "field" && !items) {
    throw new UsageError(`--class-of ${flags.classOf}: the jobs have no items (no {} in the command) to read a class from; name one class for all, e.g. "--class-of ${names[0]}"`);
  }
  return { classes, classOf };
}

function positiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms === 0) throw new Error(`"${text}" is not a duration here: it must be more than zero; try "30s" or "10m"`);
  return ms;
}

/** A --shell script with a {} that no quoting can keep from being read as code is refused before anything runs. */
function checkShellScript(script: string): void {
  try {
    parseShellTemplate(script);
  } catch (error) {
    if (error instanceof ShellTemplateError) throw new UsageError(`--shell: ${error.message}`);
    throw error;
  }
}

/** --adaptive follows the server with one private launch rate for now: what else it would have to scale is refused, naming it. */
function checkAdaptive(limits: readonly ParsedLimit[], shared: SharedBucketOptions, classes: unknown): void {
  const refuse = (why: string) => new UsageError(`--adaptive: ${why}; e.g. "--adaptive --rate 50/s", a ceiling the rate follows the server under`);
  const launchRates = limits.filter((limit) => limit.spec.kind === "bucket" && limit.spec.unit === "count");
  if (shared.key === undefined && !launchRates.some((limit) => Number.isFinite((limit.spec as { rate: number }).rate))) throw refuse("needs a finite --rate, its ceiling");
  if (classes !== undefined) throw refuse("classes are not followed yet");
}
