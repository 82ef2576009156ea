import type { LimitSpec } from "../../core/limit-spec.js";
import { parseRateOfKind, parseSizeOfKind, type RateKind } from "../../core/units.js";
import { parseOption, UsageError } from "../errors.js";
import { type LimitFlags, needsLimitSet, parseLimitOptions } from "../limit-options.js";
import { checkKeyName } from "../shared-options.js";

/** What `tbucket key <subcommand>` was asked to do, checked. */
export type KeyRequest =
  | { action: "list"; store: string | undefined; json: boolean }
  | { action: "show"; key: string; store: string | undefined; json: boolean }
  | { action: "delete"; key: string; store: string | undefined; json: boolean }
  | { action: "set"; key: string; store: string | undefined; json: boolean; rate: string | undefined; burst: string | undefined; kind: RateKind | undefined; classes?: ClassTexts }
  | { action: "set-limits"; key: string; store: string | undefined; json: boolean; limits: LimitSpec[]; classes?: ClassTexts };

/** `key set`'s --class texts, read once the key's kind and rate are known; null for `--class none` (drop them). */
export type ClassTexts = string[] | null;

/** A key subcommand's flags as commander hands them over. */
export interface KeyFlags extends LimitFlags {
  store?: string;
  json?: boolean;
  kind?: string;
  class?: string[];
}

/** --kind's values. */
export const KINDS: readonly RateKind[] = ["bytes", "count"];

/** The same names --key accepts. */
export function checkKey(name: string): string {
  return checkKeyName("key", name);
}

/** Checks `key set`'s flags as far as can be done without the store (the rate's kind may depend on the stored key). */
export function parseKeySet(name: string, flags: KeyFlags): KeyRequest {
  const key = checkKey(name);
  const classes = classTexts(flags.class);
  if (flags.rate === undefined && flags.burst === undefined && flags.window === undefined && flags.concurrency === undefined && classes === undefined) {
    throw new UsageError(`key set: nothing to set; try "tbucket key set ${key} --rate 20mb" or "--burst 4mb"`);
  }
  // choiceOption has checked it.
  const kind = flags.kind as RateKind | undefined;
  const rates = flags.rate ?? [];
  const bursts = flags.burst ?? [];
  if (flags.window !== undefined || flags.concurrency !== undefined || rates.length > 1 || bursts.length > Math.max(1, rates.length)) {
    // A set of limits: the same grammar as the commands', each rate or window by its own unit.
    const { limits } = parseLimitOptions(flags, { units: kind ?? "any", keyed: true });
    if (needsLimitSet(limits)) return { action: "set-limits", key, store: flags.store, json: Boolean(flags.json), limits: limits.map((limit) => limit.spec), ...(classes !== undefined && { classes }) };
  }
  const rate = rates[0]?.text;
  const burst = bursts[0];
  // Check what can be checked now, so a typo never reaches the store.
  if (kind !== undefined) {
    if (rate !== undefined) parseKeyRate(rate, kind);
    if (burst !== undefined) parseKeyBurst(burst, kind);
  }
  return { action: "set", key, store: flags.store, json: Boolean(flags.json), rate, burst, kind, ...(classes !== undefined && { classes }) };
}

/** --class as given: each definition, or null for a lone `--class none`. */
function classTexts(texts: string[] | undefined): ClassTexts | undefined {
  if (texts === undefined) return undefined;
  const none = texts.filter((text) => text.trim().toLowerCase() === "none");
  if (none.length === 0) return texts;
  if (texts.length > 1) throw new UsageError(`--class none drops the key's classes, and cannot go with other --class; give either`);
  return null;
}

/** A key's rate; 0 pauses every process on the key until the rate is set again. */
export function parseKeyRate(text: string, kind: RateKind): number {
  return parseOption("--rate", text, (value) => parseRateOfKind(kind, value, { allowZero: true }));
}

export function parseKeyBurst(text: string, kind: RateKind): number {
  return parseOption("--burst", text, (value) => parseSizeOfKind(kind, value));
}
