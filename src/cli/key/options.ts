import { parseRateOfKind, parseSizeOfKind, type RateKind } from "../../core/units.js";
import { parseOption, UsageError } from "../errors.js";
import { checkKeyName } from "../shared-options.js";

/** What `tbucket key <subcommand>` was asked to do, checked. */
export type KeyRequest =
  | { action: "list"; store: string | undefined; json: boolean }
  | { action: "show"; key: string; store: string | undefined; json: boolean }
  | { action: "delete"; key: string; store: string | undefined; json: boolean }
  | { action: "set"; key: string; store: string | undefined; json: boolean; rate: string | undefined; burst: string | undefined; kind: RateKind | undefined };

/** A key subcommand's flags as commander hands them over. */
export interface KeyFlags {
  store?: string;
  json?: boolean;
  rate?: string;
  burst?: string;
  kind?: string;
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
  if (flags.rate === undefined && flags.burst === undefined) {
    throw new UsageError(`key set: nothing to set; try "tbucket key set ${key} --rate 20mb" or "--burst 4mb"`);
  }
  // choiceOption has checked it.
  const kind = flags.kind as RateKind | undefined;
  // Check what can be checked now, so a typo never reaches the store.
  if (kind !== undefined) {
    if (flags.rate !== undefined) parseKeyRate(flags.rate, kind);
    if (flags.burst !== undefined) parseKeyBurst(flags.burst, kind);
  }
  return { action: "set", key, store: flags.store, json: Boolean(flags.json), rate: flags.rate, burst: flags.burst, kind };
}

/** A key's rate; 0 pauses every process on the key until the rate is set again. */
export function parseKeyRate(text: string, kind: RateKind): number {
  return parseOption("--rate", text, (value) => parseRateOfKind(kind, value, { allowZero: true }));
}

export function parseKeyBurst(text: string, kind: RateKind): number {
  return parseOption("--burst", text, (value) => parseSizeOfKind(kind, value));
}
