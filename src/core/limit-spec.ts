/**
 * The limits of a set, as data: what `--rate`/`--burst`, `--window` and
 * `--concurrency` resolve to, what a store keeps for a key, what `key show`
 * prints. A limit counts one unit of an item's costs.
 */

/**
 * What a limit counts: bytes (a byte rate or size), count (lines, launches,
 * requests), or a named cost (section 13 of the design: the tokens of an API
 * request). Any other string names a cost too; the two built-in units are
 * spelled out so that editors complete them.
 */
export type CostUnit = "bytes" | "count" | (string & {});

/** A token bucket (x/time/rate): `rate` units a second, at most `burst` at once. */
export interface BucketSpec {
  kind: "bucket";
  unit: CostUnit;
  /** Units per second; Infinity for no limit, 0 for the burst and then nothing. */
  rate: number;
  burst: number;
}

/** At most `n` units in any interval of `windowMs` (sliding, exact). */
export interface WindowSpec {
  kind: "window";
  unit: CostUnit;
  n: number;
  windowMs: number;
}

/** At most `n` items at once: a slot taken with the item and given back when it ends. */
export interface ConcurrencySpec {
  kind: "concurrency";
  n: number;
}

export type LimitSpec = BucketSpec | WindowSpec | ConcurrencySpec;

/**
 * What one item costs in each unit: `{ count: 1 }` for a launch,
 * `{ bytes: 4096 }` for a chunk, `{ count: 3, bytes: 4096 }` for three lines
 * of a pipe with `--lines`. A limit whose unit is absent counts 0 for the
 * item; a concurrency limit always takes one slot.
 */
export type Costs = Readonly<Partial<Record<CostUnit, number>>>;

/** The most limits in one set: `limitedBy` is kept as a bit mask. */
export const MAX_LIMITS = 31;

/** Throws a RangeError naming the limit (from 1) and the field unless every spec is well formed. */
export function checkLimitSpecs(specs: readonly LimitSpec[]): void {
  if (!Array.isArray(specs) || specs.length === 0 || specs.length > MAX_LIMITS) {
    throw new RangeError(`Expected \`limits\` to be an array of 1 to ${MAX_LIMITS} limits, got \`${Array.isArray(specs) ? `${specs.length} limits` : specs}\``);
  }
  specs.forEach((spec, index) => {
    const where = `limits[${index}]`;
    const number = (field: string, value: unknown, ok: (n: number) => boolean, what: string) => {
      if (typeof value !== "number" || Number.isNaN(value) || !ok(value)) {
        throw new RangeError(`Expected \`${where}.${field}\` to be ${what}, got \`${String(value)}\` (${typeof value})`);
      }
    };
    const unit = (value: unknown) => {
      if (typeof value !== "string" || value === "") throw new RangeError(`Expected \`${where}.unit\` to be a unit such as "count" or "bytes", got \`${String(value)}\``);
    };
    switch (spec?.kind) {
      case "bucket":
        unit(spec.unit);
        number("rate", spec.rate, (n) => n >= 0, "a non-negative number or Infinity");
        number("burst", spec.burst, (n) => n >= 0 && Number.isFinite(n), "a non-negative finite number");
        return;
      case "window":
        unit(spec.unit);
        number("n", spec.n, (n) => n >= 0 && Number.isFinite(n), "a non-negative finite number");
        number("windowMs", spec.windowMs, (n) => n > 0 && Number.isFinite(n), "a positive finite number of milliseconds");
        return;
      case "concurrency":
        number("n", spec.n, (n) => Number.isInteger(n) && n >= 0, "a whole number of slots");
        return;
      default:
        throw new RangeError(`Expected \`${where}.kind\` to be "bucket", "window" or "concurrency", got \`${String((spec as { kind?: unknown } | undefined)?.kind)}\``);
    }
  });
}

/** The unit a limit counts; a concurrency limit counts items, one slot each. */
export function unitOf(spec: LimitSpec): CostUnit | undefined {
  return spec.kind === "concurrency" ? undefined : spec.unit;
}

/** The lowest long-run rate of the limits counting `unit`, a window's n / W counting as one; Infinity if none limits it. */
export function lowestRate(specs: readonly LimitSpec[], unit: CostUnit): number {
  let rate = Infinity;
  for (const spec of specs) {
    if (spec.kind === "bucket" && spec.unit === unit) rate = Math.min(rate, spec.rate);
    if (spec.kind === "window" && spec.unit === unit) rate = Math.min(rate, (spec.n * 1000) / spec.windowMs);
  }
  return rate;
}

/** The most of `unit` one item may cost: the least burst (of a bucket with a finite rate) or window n counting it; Infinity if none counts it. */
export function mostAtOnce(specs: readonly LimitSpec[], unit: CostUnit, kinds: { buckets?: boolean; windows?: boolean } = {}): number {
  let most = Infinity;
  for (const spec of specs) {
    if (kinds.buckets !== false && spec.kind === "bucket" && spec.unit === unit && spec.rate !== Infinity) most = Math.min(most, spec.burst);
    if (kinds.windows !== false && spec.kind === "window" && spec.unit === unit) most = Math.min(most, spec.n);
  }
  return most;
}
