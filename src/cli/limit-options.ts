import type { Command } from "commander";
import { defaultBurst } from "../core/default-burst.js";
import type { LimitSpec } from "../core/limit-spec.js";
import {
  parseAnyRate,
  parseByteRate,
  parseByteSize,
  parseCount,
  parseCountRate,
  parsePeriodMs,
  parseSizeOfKind,
  type RateKind,
  rateKindOf,
} from "../core/units.js";
import { parseOption, UsageError } from "./errors.js";
import { repeatableOption } from "./repeatable-option.js";

// The one grammar of a command's limits: repeatable --rate with --burst (the i-th burst with the
// i-th rate), repeatable --window N/W, and --concurrency N, resolved to LimitSpec[] in
// command-line order (limits are numbered from 1 in that order in --stats and limitedBy).

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
  /** With a key and no --rate: a --burst alone, to set the key's burst. */
  keyBurst: number | undefined;
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
  /** With `count`: what to say after "is a byte rate". */
  byteRateHint?: string;
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
  const rates = flags.rate ?? [];
  const bursts = flags.burst ?? [];
  let keyBurst: number | undefined;
  if (grammar.keyed && rates.length === 0 && bursts.length === 1) {
    keyBurst = parseOption("--burst", bursts[0]!, (text) => parseSizeOfKind(grammar.units === "bytes" ? "bytes" : "count", text));
  } else if (bursts.length > rates.length) {
    throw new UsageError(
      `--burst: ${bursts.length} burst${bursts.length === 1 ? "" : "s"} for ${rates.length === 0 ? "no rate" : rates.length === 1 ? "1 rate" : `${rates.length} rates`}; ` +
        `each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`,
    );
  }
  const concurrency = flags.concurrency ?? [];
  if (concurrency.length > 1) throw new UsageError(`--concurrency: given ${concurrency.length} times; give it once, e.g. "--concurrency 4"`);
  const placed: Array<ParsedLimit & { position: number }> = [];
  rates.forEach((rate, index) => placed.push({ ...parseBucket(rate.text, bursts[index], grammar), position: rate.position }));
  for (const window of flags.window ?? []) placed.push({ ...parseOption("--window", window.text, (text) => parseWindow(text, grammar)), position: window.position });
  for (const slots of concurrency) {
    const n = parseOption("--concurrency", slots.text, (text) => parseCount(text));
    placed.push({ spec: { kind: "concurrency", n }, flag: `--concurrency ${slots.text}`, burstGiven: false, position: slots.position });
  }
  const limits = placed.sort((a, b) => a.position - b.position).map(({ position: _, ...limit }) => limit);
  return { limits, keyBurst };
}

/** True when the limits are more than one bucket: they need a set, not a TokenBucket. */
export function needsLimitSet(limits: readonly ParsedLimit[]): boolean {
  return limits.length > 1 || limits.some((limit) => limit.spec.kind !== "bucket");
}

/**
 * Refuses a set with --key where a command cannot yet keep one on a shared
 * key (the proxy); pipe and run keep sets on keys. One limit with a key
 * works as it always has.
 */
export function checkKeyedLimits(limits: readonly ParsedLimit[], key: string | undefined): void {
  if (key === undefined || !needsLimitSet(limits)) return;
  const given = limits.map((limit) => limit.flag).join(" ");
  throw new UsageError(
    `--key: a shared key holds one rate and burst for now (sets of limits in a store come next), not "${given}"; ` +
      `give --key one --rate (and --burst), or drop --key to apply ${limits.length === 1 ? "this limit" : `these ${limits.length} limits`} in this process alone`,
  );
}

function parseBucket(rateText: string, burstText: string | undefined, grammar: LimitGrammar): ParsedLimit {
  const { kind, perSecond } = parseOption("--rate", rateText, (text) => parseRate(text, grammar));
  const burst = burstText === undefined ? defaultBurst(kind, perSecond) : parseOption("--burst", burstText, (text) => parseSizeOfKind(kind, text));
  const flag = `--rate ${rateText}${burstText === undefined ? "" : ` --burst ${burstText}`}`;
  return { spec: { kind: "bucket", unit: kind, rate: perSecond, burst }, flag, burstGiven: burstText !== undefined };
}

function parseRate(text: string, grammar: LimitGrammar): { kind: RateKind; perSecond: number } {
  const options = { allowZero: grammar.keyed };
  if (grammar.units === "bytes") return { kind: "bytes", perSecond: parseByteRate(text, options) };
  if (grammar.units === "any") return parseAnyRate(text, options);
  if (rateKindOf(text) === "bytes") throw new Error(`"${text}" is a byte rate; ${grammar.byteRateHint ?? `try "5", "300/m" or "1/10s"`}`);
  return { kind: "count", perSecond: parseCountRate(text, options) };
}

const WINDOW_EXAMPLE: Record<LimitGrammar["units"], string> = {
  bytes: `try "2mb/1s" or "50gb/d"`,
  count: `try "10/1s" or "1000/h"`,
  any: `try "1000/h" (lines) or "2mb/1s" (bytes)`,
};

/**
 * `N/W`: at most N in any interval W long. N is a count, or a size for
 * bytes; W a duration, a bare unit meaning one of it (`1000/h`).
 */
export function parseWindow(text: string, grammar: LimitGrammar): ParsedLimit {
  const slash = text.lastIndexOf("/");
  const example = WINDOW_EXAMPLE[grammar.units];
  if (slash <= 0 || slash === text.length - 1) throw new Error(`"${text}" is not a window; write N/W (at most N in any W); ${example}`);
  const amount = text.slice(0, slash).trim();
  const duration = text.slice(slash + 1).trim();
  const kind: RateKind = grammar.units === "any" ? (rateKindOf(amount) === "bytes" ? "bytes" : "count") : grammar.units;
  if (kind === "count" && grammar.units === "count" && rateKindOf(amount) === "bytes") {
    throw new Error(`"${text}" counts bytes; ${grammar.byteRateHint ?? example}`);
  }
  let n: number;
  try {
    n = kind === "bytes" ? parseByteSize(amount) : parseCount(amount);
  } catch (error) {
    throw new Error(`"${text}": its N ${(error as Error).message}`);
  }
  const windowMs = parsePeriodMs(duration);
  if (windowMs === undefined) throw new Error(`"${text}": its W "${duration}" is not a duration longer than zero; ${example}`);
  return { spec: { kind: "window", unit: kind, n, windowMs }, flag: `--window ${text}`, burstGiven: false };
}
