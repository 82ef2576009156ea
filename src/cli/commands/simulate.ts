import type { Command } from "commander";
import { parseByteRate, parseByteSize, parseCount, parseCountRate, parseDuration } from "../../core/units.js";
import { parsePattern, patternDurationMs, type Segment } from "../../simulate/arrival-pattern.js";
import type { CostUnit } from "../../simulate/simulator.js";
import type { Policy } from "../../simulate/simulator.js";
import { parseTarget, type Target } from "../../simulate/target.js";
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
  costUnit: CostUnit;
  policy: Policy;
  maxWaitMs: number;
  perKey: boolean;
  maxKeys: number;
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

interface SimulateFlags {
  rate?: string;
  burst?: string;
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
  format?: string;
  step?: string;
  chart?: boolean;
  svg?: string;
  suggest?: boolean;
  target?: string;
}

const FORMATS: readonly SimulateFormat[] = ["summary", "table", "csv", "jsonl", "json"];

const EXAMPLES = `
Arrivals: --arrivals segments separated by commas: "steady 8/s for 10s", "idle 5s", "burst 30",
"poisson 4/s for 30s", "ramp 1/s..20/s for 20s". A --trace has one event per line, the time first
(seconds from the start, epoch seconds or ISO-8601); Common and Combined Log Format access logs are
recognised as they are. Decisions are those of golang.org/x/time/rate: drop = AllowN, queue = ReserveN.

Examples:
  tbucket simulate --rate 5 --burst 10 --arrivals "steady 8/s for 20s"
  tbucket simulate -r 5 -b 10 --arrivals "burst 60" --format jsonl
  tbucket simulate -r 100/s -b 50 --arrivals "poisson 90/s for 1m, ramp 90/s..200/s for 30s" --seed 7 --svg plot.svg
  tbucket simulate -r 10 -b 20 --policy queue --max-wait 2s --trace events.txt --format csv
  tbucket simulate -r 20 --trace access.log --per-key --max-keys 10000          # one bucket per client address
  tbucket simulate -r 2mb -b 8mb --cost bytes --trace access.log                 # bytes served, not requests
  tbucket simulate -r 20 --trace access.log --suggest --target "reject<=1%"      # smallest burst that refuses <= 1%
  tbucket simulate -r auto -b 40 --policy queue --trace access.log --suggest --target "p99wait<=500ms"`;

export function registerSimulate(program: Command, onExit: (code: number) => void): void {
  program
    .command("simulate")
    .description("run a token bucket over arrivals on a virtual clock, instantly, to choose a rate and burst")
    .option("-r, --rate <rate>", "the bucket's rate: a count rate (5, 300/m), a byte rate with --cost bytes, or auto with --suggest")
    .option("-b, --burst <size>", "the bucket's capacity: a count, or a size with --cost bytes (required unless --suggest searches it)")
    .option("--arrivals <pattern>", 'arrivals from a pattern: "steady 8/s for 10s, idle 5s, burst 30, poisson 4/s for 30s, ramp 1/s..20/s for 20s"')
    .option("--seed <n>", "seed for the random (poisson) segments: the same seed gives the same output (default: a fresh seed, printed)")
    .option("--trace <file>", "arrivals from a file, one event per line (- for standard input); access logs are recognised")
    .option("--cost <unit>", "what a token is: count (one per event, or --cost-field) or bytes (an access log's response size, or --cost-field)", "count")
    .option("--cost-field <n>", "with --trace: the field (from 1) holding each event's cost")
    .option("--key-field <n>", "with --trace: the field (from 1) holding each event's key, for --per-key")
    .option("--skip-bad", "skip trace lines that cannot be read, and report how many (default: stop with exit 2)")
    .option("--policy <policy>", "drop (Allow: refuse what does not fit) or queue (Reserve: wait in order) (default: drop)")
    .option("--max-wait <duration>", "with queue: refuse an arrival that would wait longer (implies --policy queue)")
    .option("--per-key", "one bucket per key: --key-field, or the client address of an access log")
    .option("--max-keys <n>", "with --per-key: at most n buckets, the least recently used evicted (default: no limit)")
    .option("--format <format>", "summary, table, csv, jsonl (one line per event) or json (default: summary and chart on a terminal, else table)")
    .option("--step <duration>", "the width of a row of the table, chart and plot (default: fits 20 to 60 rows)")
    .option("--chart", "add a chart of the bucket level and admitted/refused per step (default: on a terminal)")
    .option("--svg <file>", "write an SVG plot of level, admitted, refused and wait over time to <file>")
    .option("--suggest", "search the smallest burst (or with --rate auto, the smallest rate) that meets --target")
    .option("--target <target>", 'with --suggest: "reject<=1%" or "p99wait<=500ms" (default: reject<=1%)')
    .addHelpText("after", EXAMPLES)
    .action(async (flags: SimulateFlags) => {
      const config = parseSimulateOptions(flags);
      const { runSimulate } = await import("../actions/simulate.js");
      onExit(await runSimulate(config));
    });
}

/** Turns the flags into a checked configuration; every mistake is a UsageError naming the flag. */
export function parseSimulateOptions(flags: SimulateFlags): SimulateConfig {
  if (flags.arrivals !== undefined && flags.trace !== undefined) {
    throw new UsageError(`--arrivals and --trace: choose one; a pattern or a file of events`);
  }
  if (flags.arrivals === undefined && flags.trace === undefined) {
    throw new UsageError(`--arrivals or --trace: missing; try --arrivals "steady 8/s for 10s" or --trace access.log`);
  }
  const cost = flags.cost ?? "count";
  if (cost !== "count" && cost !== "bytes") {
    throw new UsageError(`--cost: "${cost}" is not a cost unit; try "count" or "bytes"`);
  }
  const costUnit: CostUnit = cost;
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

  if (flags.rate === undefined) {
    const example = costUnit === "bytes" ? `"--rate 1mb"` : `"--rate 5/s"`;
    throw new UsageError(`--rate: missing; the bucket under test needs one, e.g. ${example}${suggest ? ` (or "--rate auto")` : ""}`);
  }
  let ratePerSecond: number | "auto";
  if (flags.rate.trim().toLowerCase() === "auto") {
    if (!suggest) throw new UsageError(`--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`);
    ratePerSecond = "auto";
  } else {
    ratePerSecond = parseOption("--rate", flags.rate, costUnit === "bytes" ? parseByteRate : parseCountRate);
  }

  let burst: number | undefined;
  if (flags.burst !== undefined && suggest && ratePerSecond !== "auto") {
    // It would be ignored: the search tries every burst.
    throw new UsageError(`--burst: not with --suggest at a fixed rate, which searches the burst; leave --burst out, or give --rate auto to search the rate for this burst`);
  }
  if (flags.burst !== undefined) {
    burst = parseOption("--burst", flags.burst, costUnit === "bytes" ? parseByteSize : (text) => parseCount(text));
  } else if (!suggest || ratePerSecond === "auto") {
    const example = costUnit === "bytes" ? `"--burst 4mb"` : `"--burst 10"`;
    const why = ratePerSecond === "auto" ? "--rate auto searches the rate for a given burst" : "the bucket under test needs one";
    throw new UsageError(`--burst: missing; ${why}, e.g. ${example}${suggest ? "" : " (or --suggest to search it)"}`);
  }

  let policy: Policy = "drop";
  if (flags.policy !== undefined && flags.policy !== "drop" && flags.policy !== "queue") {
    throw new UsageError(`--policy: "${flags.policy}" is not a policy; try "drop" or "queue"`);
  }
  let maxWaitMs = Infinity;
  if (flags.maxWait !== undefined) {
    if (flags.policy === "drop") throw new UsageError(`--max-wait: only with --policy queue; drop never waits`);
    maxWaitMs = parseOption("--max-wait", flags.maxWait, parseDuration);
    policy = "queue";
  }
  if (flags.policy === "queue") policy = "queue";

  let maxKeys = Infinity;
  if (flags.maxKeys !== undefined) {
    if (!flags.perKey) throw new UsageError(`--max-keys: only with --per-key; try "--per-key --max-keys ${flags.maxKeys}"`);
    maxKeys = parseOption("--max-keys", flags.maxKeys, (text) => parseCount(text));
  }
  const field = (flag: string, text: string | undefined) => (text === undefined ? undefined : parseOption(flag, text, (t) => parseCount(t)));
  const costField = field("--cost-field", flags.costField);
  const keyField = field("--key-field", flags.keyField);

  let format: SimulateFormat | undefined;
  if (flags.format !== undefined) {
    if (!FORMATS.includes(flags.format as SimulateFormat)) {
      throw new UsageError(`--format: "${flags.format}" is not a format; try one of ${FORMATS.join(", ")}`);
    }
    format = flags.format as SimulateFormat;
  }
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
    costUnit,
    policy,
    maxWaitMs,
    perKey: Boolean(flags.perKey),
    maxKeys,
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
