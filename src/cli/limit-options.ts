import type { Command } from "commander";
import { defaultBurst } from "../core/default-burst.js";
import { type LimitSpec, MAX_LIMITS } from "../core/limit-spec.js";
import {
  parseAnyRate,
  parseAnyWindow,
  parseByteRate,
  parseCount,
  parseCountRate,
  parseSizeOfKind,
  parseWindowOfKind,
  type RateKind,
  rateKindOf,
} from "../core/units.js";
import { plural } from "../core/format.js";
import { parseOption, UsageError } from "./errors.js";
import { repeatableOption } from "./repeatable-option.js";

// The one grammar of a command's limits: repeatable --rate with --burst (the i-th burst with the
// i-th rate), repeatable --window N/W, and --concurrency N, resolved to LimitSpec[] in
// command-line order (limits are numbered from 1 in that order in --stats and limitedBy). pipe,
// run and simulate all read their limits here; what differs between them is a LimitGrammar.

/** A limit flag's text, with its place among every limit flag of the command line. */
export interface PlacedText {
  text: string;
  position: number;
}

/** --rate, --burst, --window and --concurrency as commander hands them over (see addLimitOptions). */
export interface LimitFlags {
  rate?: PlacedText[];
  burst?: string[];
  window?: PlacedText[];
  concurrency?: PlacedText[];
}

/** One limit as resolved, and how the command line spelled it (`--rate 4mb`, `--window 2mb/1s`). */
export interface ParsedLimit {
  spec: LimitSpec;
  flag: string;
  /** A bucket's --burst was given (else its burst is the default of its kind). */
  burstGiven: boolean;
}

export interface ParsedLimits {
  /** In command-line order. */
  limits: ParsedLimit[];
  /**
   * A --burst with no rate to go with: with a key and no --rate, the key's
   * burst; with `--rate auto` (see LimitGrammar.autoRate), the burst it is
   * searched for.
   */
  loneBurst: number | undefined;
}

/**
 * What the command's limits count:
 * - `bytes`: a byte rate, a size for bursts and windows (the pipe without --lines);
 * - `count`: launches, events (run): a byte rate is refused with `byteRateHint`;
 * - `any`: each rate or window by its own unit, a bare number a count (the pipe with --lines).
 */
export interface LimitGrammar {
  units: "bytes" | "count" | "any";
  /** With --key: a rate of 0 (the key paused), and a --burst without a --rate (the key's burst). */
  keyed?: boolean;
  /** With `count`: what to say after "is a byte rate" (and "is a window of bytes") instead of an example. */
  byteRateHint?: string;
  /**
   * A lone `--rate auto` stands for a rate the caller searches (simulate
   * --suggest): it makes no limit, and its --burst is `loneBurst`.
   */
  autoRate?: boolean;
}

export interface LimitHelp {
  rate: string;
  burst: string;
  /** The burst's placeholder: "size" by default, "n" where it is a count. */
  burstValue?: string;
  window: string;
  /** --concurrency's help; undefined: the command has none. */
  concurrency?: string;
}

/**
 * Declares -r/--rate and -b/--burst (repeatable), --window (repeatable) and,
 * when `help.concurrency` is given, --concurrency; their values keep their
 * order across the flags.
 */
export function addLimitOptions(command: Command, help: LimitHelp): Command {
  let next = 0;
  const placed = (text: string, previous: PlacedText[] = []) => [...previous, { text, position: next++ }];
  const listed = (text: string, previous: string[] = []) => [...previous, text];
  command
    .addOption(repeatableOption("-r, --rate <rate>", help.rate, placed))
    .addOption(repeatableOption(`-b, --burst <${help.burstValue ?? "size"}>`, help.burst, listed))
    .addOption(repeatableOption("--window <n/w>", help.window, placed));
  if (help.concurrency !== undefined) command.option("--concurrency <n>", help.concurrency, placed);
  return command;
}

/** The limits of the flags in command-line order; every mistake is a UsageError naming the flag. */
export function parseLimitOptions(flags: LimitFlags, grammar: LimitGrammar): ParsedLimits {
  const bursts = flags.burst ?? [];
  const autoRate = grammar.autoRate === true && flags.rate?.length === 1 && isAutoRate(flags.rate[0]!.text);
  const rates = autoRate ? [] : (flags.rate ?? []);
  const ratesGiven = flags.rate?.length ?? 0;
  const lone = rates.length === 0 && bursts.length === 1 && (grammar.keyed === true || autoRate);
  if (!lone && bursts.length > rates.length) {
    throw new UsageError(
      `--burst: ${plural(bursts.length, "burst")} for ${ratesGiven === 0 ? "no rate" : plural(ratesGiven, "rate")}; ` +
        `each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`,
    );
  }
  const loneBurst = lone ? parseBurst(bursts[0]!, grammar.units === "bytes" ? "bytes" : "count") : undefined;
  const concurrency = flags.concurrency ?? [];
  if (concurrency.length > 1) throw new UsageError(`--concurrency: given ${concurrency.length} times; give it once, e.g. "--concurrency 4"`);
  const placed: Array<ParsedLimit & { position: number }> = [];
  rates.forEach((rate, index) => placed.push({ ...parseBucket(rate.text, bursts[index], grammar), position: rate.position }));
  for (const window of flags.window ?? []) placed.push({ ...parseOption("--window", window.text, (text) => parseWindow(text, grammar)), position: window.position });
  for (const slots of concurrency) {
    const n = parseOption("--concurrency", slots.text, (text) => parseCount(text));
    placed.push({ spec: { kind: "concurrency", n }, flag: `--concurrency ${slots.text}`, burstGiven: false, position: slots.position });
  }
  if (placed.length > MAX_LIMITS) {
    throw new UsageError(`--rate, --window, --concurrency: ${placed.length} limits given, at most ${MAX_LIMITS} make a set; drop the ones that never bind (a wider window of the same rate, a duplicate)`);
  }
  const limits = placed.sort((a, b) => a.position - b.position).map(({ position: _, ...limit }) => limit);
  return { limits, loneBurst };
}

/** Whether a --rate's text is `auto`, the rate simulate --suggest searches. */
export function isAutoRate(text: string): boolean {
  return text.trim().toLowerCase() === "auto";
}

/** True when the limits are more than one bucket: they need a set, not a TokenBucket. */
export function needsLimitSet(limits: readonly ParsedLimit[]): boolean {
  return limits.length > 1 || limits.some((limit) => limit.spec.kind !== "bucket");
}

function parseBucket(rateText: string, burstText: string | undefined, grammar: LimitGrammar): ParsedLimit {
  const { kind, perSecond } = parseOption("--rate", rateText, (text) => parseRate(text, grammar));
  const burst = burstText === undefined ? defaultBurst(kind, perSecond) : parseBurst(burstText, kind);
  const flag = `--rate ${rateText}${burstText === undefined ? "" : ` --burst ${burstText}`}`;
  return { spec: { kind: "bucket", unit: kind, rate: perSecond, burst }, flag, burstGiven: burstText !== undefined };
}

function parseRate(text: string, grammar: LimitGrammar): { kind: RateKind; perSecond: number } {
  const options = { allowZero: grammar.keyed };
  if (grammar.units === "bytes") return { kind: "bytes", perSecond: parseByteRate(text, options) };
  if (grammar.units === "any") return parseAnyRate(text, options);
  if (rateKindOf(text) === "bytes" && grammar.byteRateHint !== undefined) throw new Error(`"${text}" is a byte rate; ${grammar.byteRateHint}`);
  return { kind: "count", perSecond: parseCountRate(text, options) };
}

function parseBurst(text: string, kind: RateKind): number {
  return parseOption("--burst", text, (value) => parseSizeOfKind(kind, value));
}

/** `N/W` by the grammar's units: with `any`, N's own unit says what the window counts. */
function parseWindow(text: string, grammar: LimitGrammar): ParsedLimit {
  const flag = `--window ${text}`;
  if (grammar.units === "any") {
    const { kind, n, windowMs } = parseAnyWindow(text);
    return { spec: { kind: "window", unit: kind, n, windowMs }, flag, burstGiven: false };
  }
  if (grammar.units === "count" && grammar.byteRateHint !== undefined && rateKindOf(text) === "bytes") {
    throw new Error(`"${text}" is a window of bytes, not of counts; ${grammar.byteRateHint}`);
  }
  const { n, windowMs } = parseWindowOfKind(grammar.units, text);
  return { spec: { kind: "window", unit: grammar.units, n, windowMs }, flag, burstGiven: false };
}
