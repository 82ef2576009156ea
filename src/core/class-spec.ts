/**
 * Classes of one key (design section 12), as data: what `--class
 * NAME=RATE[,ceil=..][,prio=..][,weight=..][,burst=..]` resolves to, what a
 * store will keep beside the key's set. Every field is in the unit of the
 * key's rate (its first bucket).
 */

/** A class as given: only the name and the guarantee are required. */
export interface ClassSpec {
  name: string;
  /** The guarantee: units a second the class gets while it asks for them. */
  rate: number;
  /** How far it may borrow, in all: default the key's rate. */
  ceil?: number;
  /** Who borrows first: 0 before 1. Default 0. */
  prio?: number;
  /** Its share of what is lent within its prio, in the guarantee's units. Default the guarantee. */
  weight?: number;
  /** Its guarantee bucket's capacity. Default the key's burst × rate / the key's rate, at least 1 (one unit). */
  burst?: number;
}

/** A class with every default filled in. */
export interface ResolvedClass {
  name: string;
  rate: number;
  burst: number;
  ceil: number;
  /** The ceiling bucket's capacity: the key's burst × ceil / the key's rate. */
  ceilBurst: number;
  prio: number;
  weight: number;
}

/** Thrown for classes that cannot be defined on a key (the CLI makes it a usage error). */
export class ClassDefinitionError extends RangeError {
  readonly code = "CLASS_DEFINITION";
  constructor(message: string) {
    super(message);
    this.name = "ClassDefinitionError";
  }
}

/** Thrown when a taker names a class the key does not define. */
export class UnknownClassError extends RangeError {
  readonly code = "UNKNOWN_CLASS";
  constructor(
    readonly className: string,
    readonly defined: readonly string[],
  ) {
    super(`No class "${className}"; the classes are ${defined.join(", ")}`);
    this.name = "UnknownClassError";
  }
}

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * The classes with their defaults, checked against the key's rate and burst:
 * names unique, Σ guarantees ≤ the key's rate, ceil ≥ the guarantee. A class
 * with no guarantee only borrows; its default weight is a thousandth of the
 * key's rate, so that it shares what is lent when alone in its prio.
 */
export function resolveClasses(classes: readonly ClassSpec[], keyRate: number, keyBurst: number): ResolvedClass[] {
  if (!Array.isArray(classes) || classes.length === 0) throw new ClassDefinitionError("Expected at least one class");
  if (!(keyRate > 0) || !Number.isFinite(keyRate)) {
    throw new ClassDefinitionError(`Classes share a finite rate; the key's rate is ${keyRate}`);
  }
  const seen = new Set<string>();
  const resolved = classes.map((spec) => {
    const name = spec?.name;
    if (typeof name !== "string" || !NAME.test(name)) {
      throw new ClassDefinitionError(`Expected a class name of letters, digits, "_", "." or "-", got \`${String(name)}\``);
    }
    if (seen.has(name)) throw new ClassDefinitionError(`Class "${name}" is defined twice`);
    seen.add(name);
    const number = (field: string, value: unknown, ok: (n: number) => boolean, what: string): number => {
      if (typeof value !== "number" || Number.isNaN(value) || !ok(value)) {
        throw new ClassDefinitionError(`Expected class "${name}"'s ${field} to be ${what}, got \`${String(value)}\``);
      }
      return value;
    };
    const rate = number("rate", spec.rate, (n) => n >= 0 && Number.isFinite(n), "a non-negative finite rate");
    const ceil = number("ceil", spec.ceil ?? keyRate, (n) => n >= 0 && Number.isFinite(n), "a non-negative finite rate");
    if (ceil < rate) throw new ClassDefinitionError(`Class "${name}"'s ceil (${ceil}) is below its guarantee (${rate}); a ceil is at least the guarantee`);
    const prio = number("prio", spec.prio ?? 0, (n) => Number.isInteger(n) && n >= 0, "a whole number from 0");
    const weight = number("weight", spec.weight ?? (rate > 0 ? rate : keyRate / 1000), (n) => n > 0 && Number.isFinite(n), "a positive number");
    // Scaled from the key's, but never below one unit: a guarantee bucket that can never hold a whole item serves nothing.
    const scaledBurst = rate > 0 ? Math.max(1, (keyBurst * rate) / keyRate) : 0;
    const burst = number("burst", spec.burst ?? scaledBurst, (n) => n >= 0 && Number.isFinite(n), "a non-negative size");
    return { name, rate, burst, ceil, ceilBurst: Math.max(burst, (keyBurst * Math.min(ceil, keyRate)) / keyRate), prio, weight };
  });
  const total = resolved.reduce((sum, c) => sum + c.rate, 0);
  // A relative tolerance: 5mb+5mb+10mb is 20mb even after float sums.
  if (total > keyRate * (1 + 1e-12)) {
    throw new ClassDefinitionError(`The guarantees add up to ${total}, more than the key's rate of ${keyRate}`);
  }
  return resolved;
}
