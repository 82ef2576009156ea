import type { ClassSpec } from "../core/class-spec.js";
import { describeRate } from "../core/format.js";
import { parseCount, parseRateOfKind, parseSizeOfKind, type RateKind } from "../core/units.js";
import { UsageError } from "./errors.js";

// The one grammar of --class, for every command that defines classes (simulate now; key set, run
// and the proxy next): NAME=RATE[,ceil=RATE][,prio=N][,weight=W][,burst=SIZE], every amount of
// the key's kind (a count rate, or a byte rate and sizes).

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;
const FIELDS = ["ceil", "prio", "weight", "burst"] as const;
const EXAMPLE = {
  count: `e.g. "--class interactive=20/s,prio=0" or "--class batch=5/s,ceil=50/s,prio=1,weight=2"`,
  bytes: `e.g. "--class interactive=5mb,prio=0" or "--class backup=10mb,ceil=20mb,prio=1"`,
} as const;

/** One --class's text as a class, amounts of `kind`; a mistake is a UsageError naming --class and what to write. */
export function parseClassOption(text: string, kind: RateKind): ClassSpec {
  const fail = (why: string) => new UsageError(`--class ${text}: ${why}; ${EXAMPLE[kind]}`);
  const [head = "", ...rest] = text.split(",");
  const equals = head.indexOf("=");
  if (equals < 0) throw fail("missing its guarantee after the name");
  const name = head.slice(0, equals).trim();
  if (!NAME.test(name)) throw fail(`"${name}" is not a class name (letters, digits, "_", "." and "-")`);
  const spec: ClassSpec = { name, rate: amount(head.slice(equals + 1), "the guarantee", (t) => parseRateOfKind(kind, t, { allowZero: true }), fail) };
  const given = new Set<string>();
  for (const part of rest) {
    const at = part.indexOf("=");
    const field = (at < 0 ? part : part.slice(0, at)).trim().toLowerCase();
    if (!(FIELDS as readonly string[]).includes(field)) throw fail(`"${part}" is not a field; the fields are ${FIELDS.join(", ")}`);
    if (at < 0) throw fail(`${field} has no value`);
    if (given.has(field)) throw fail(`${field} is given twice`);
    given.add(field);
    const value = part.slice(at + 1);
    if (field === "ceil") spec.ceil = amount(value, "ceil", (t) => parseRateOfKind(kind, t), fail);
    else if (field === "prio") spec.prio = amount(value, "prio", (t) => parseCount(t, 0), fail);
    else if (field === "weight") spec.weight = amount(value, "weight", (t) => parseRateOfKind(kind, t), fail);
    else spec.burst = amount(value, "burst", (t) => parseSizeOfKind(kind, t), fail);
  }
  return spec;
}

function amount(text: string, what: string, parse: (text: string) => number, fail: (why: string) => UsageError): number {
  try {
    return parse(text.trim());
  } catch (error) {
    throw fail(`${what}: ${(error as Error).message.replace(/; try .*$/, "")}`);
  }
}

/**
 * Every --class, checked against the key's rate: names once each, ceil at
 * least the guarantee, the guarantees no more than the key's rate in all.
 */
export function parseClassOptions(texts: readonly string[], kind: RateKind, keyRate: number): ClassSpec[] {
  const classes = texts.map((text) => parseClassOption(text, kind));
  if (keyRate === Infinity) throw new UsageError(`--class: classes share a limited rate, and the rate is unlimited; give --rate a finite rate`);
  const seen = new Set<string>();
  for (const spec of classes) {
    if (seen.has(spec.name)) throw new UsageError(`--class: "${spec.name}" is defined twice; give each class one --class`);
    seen.add(spec.name);
    if (spec.ceil !== undefined && spec.ceil < spec.rate) {
      throw new UsageError(`--class ${spec.name}: ceil ${describeRate(kind, spec.ceil)} is below its guarantee of ${describeRate(kind, spec.rate)}; a ceil is at least the guarantee`);
    }
  }
  const total = classes.reduce((sum, spec) => sum + spec.rate, 0);
  if (total > keyRate * (1 + 1e-12)) {
    throw new UsageError(
      `--class: the guarantees add up to ${describeRate(kind, total)}, more than the rate of ${describeRate(kind, keyRate)}; lower them, or raise --rate (what is left of the rate is lent)`,
    );
  }
  return classes;
}

/** The line for a class name no --class defines. */
export function describeUnknownClass(name: string, defined: readonly string[], where: string): string {
  return `${where}: no class "${name}"; the classes are ${defined.join(", ")} (define it with --class ${name}=RATE, or name one of them)`;
}
