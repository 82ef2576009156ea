import { parseCount, parseCountRate } from "../../core/units.js";
import { type CostTemplate, parseCostTemplate } from "../../run/cost-template.js";
import { parseOption, UsageError } from "../errors.js";
import { type ParsedLimit, parseLimitOptions } from "../limit-options.js";

/** The unit a run's cost limits count (DESIGN 13): each job's `--cost`, beside its one launch. */
export const COST_UNIT = "cost";

/** The unit of the i-th `--cost` (from 0) when several are given: `cost`, `cost2`, `cost3`... */
export function costUnit(index: number): string {
  return index === 0 ? COST_UNIT : `${COST_UNIT}${index + 1}`;
}

/** One `--cost`: what it reads from each item, and the unit of the limits that count it. */
export interface JobCost {
  unit: string;
  template: CostTemplate;
}

/** --cost and its limits as commander hands them over. */
export interface CostFlags {
  cost?: string[];
  costRate?: string[];
  costBurst?: string[];
  costWindow?: string[];
}

const EXAMPLE = `e.g. "--cost '{.max_tokens}' --cost-rate 90000/m"`;

/**
 * `--cost TEMPLATE` with the limits that count it: `--cost-rate R` (repeatable; the i-th
 * `--cost-burst` with the i-th rate, by default what the rate allows in the period written:
 * 90000/m holds 90,000, as providers size their buckets) and `--cost-window N/W`. They follow
 * the launch limits in the set's numbering. Either without the other is a usage error.
 * One `--cost` is counted by every cost limit; several (input and output tokens) go one to
 * each cost limit, the i-th to the i-th (the rates in order, then the windows).
 */
export function parseCostOptions(flags: CostFlags, keyed: boolean): { costs: JobCost[] | undefined; limits: ParsedLimit[] } {
  const rates = flags.costRate ?? [];
  const bursts = flags.costBurst ?? [];
  const windows = flags.costWindow ?? [];
  if (bursts.length > rates.length) {
    throw new UsageError(`--cost-burst: ${bursts.length} bursts for ${rates.length} cost rate${rates.length === 1 ? "" : "s"}; each goes with a --cost-rate (the i-th with the i-th)`);
  }
  const limited = rates.length > 0 || windows.length > 0;
  const given = flags.cost ?? [];
  if (given.length === 0) {
    if (limited) throw new UsageError(`--cost-${rates.length > 0 ? "rate" : "window"}: counts each job's cost, and no --cost says what it is; ${EXAMPLE}`);
    return { costs: undefined, limits: [] };
  }
  if (!limited) throw new UsageError(`--cost: no limit counts it; add --cost-rate or --cost-window, ${EXAMPLE}`);
  const costLimits = rates.length + windows.length;
  if (given.length > 1 && given.length !== costLimits) {
    throw new UsageError(
      `--cost: ${given.length} costs for ${costLimits} cost limit${costLimits === 1 ? "" : "s"}; give one --cost that every cost limit counts, or one for each (the i-th for the i-th: the --cost-rates in order, then the --cost-windows)`,
    );
  }
  const costs: JobCost[] = given.map((text, i) => ({ unit: given.length === 1 ? COST_UNIT : costUnit(i), template: parseOption("--cost", text, parseCostTemplate) }));
  const unitOfLimit = (i: number) => (costs.length === 1 ? COST_UNIT : costUnit(i));
  const limits: ParsedLimit[] = rates.map((text, i) => {
    const rate = parseOption("--cost-rate", text, (value) => parseCountRate(value, { allowZero: keyed }));
    const burstText = bursts[i];
    const burst = burstText === undefined ? Math.max(1, writtenAmount(text, rate)) : parseOption("--cost-burst", burstText, (value) => parseCount(value));
    const flag = `--cost-rate ${text}${burstText === undefined ? "" : ` --cost-burst ${burstText}`}`;
    return { spec: { kind: "bucket", unit: unitOfLimit(i), rate, burst }, flag, burstGiven: burstText !== undefined };
  });
  let windowLimits: ParsedLimit[];
  try {
    windowLimits = parseLimitOptions({ window: windows.map((text, position) => ({ text, position })) }, { units: "count" }).limits;
  } catch (error) {
    // The window grammar is --window's; its errors name the flag the user wrote.
    if (error instanceof UsageError) throw new UsageError(error.message.replace(/^--window\b/, "--cost-window"));
    throw error;
  }
  for (const limit of windowLimits) {
    if (limit.spec.kind !== "window") continue;
    limits.push({ spec: { ...limit.spec, unit: unitOfLimit(limits.length) }, flag: limit.flag.replace(/^--window/, "--cost-window"), burstGiven: false });
  }
  return { costs, limits };
}

/** What a rate allows in the period it was written with: 90000/m → 90,000; 1500/s, 1500 → 1,500; inf → 1 (no limit needs no burst). */
function writtenAmount(text: string, perSecond: number): number {
  const amount = Number(/^\s*([\d.]+)/.exec(text)?.[1]);
  if (Number.isFinite(amount) && amount > 0) return amount;
  return Number.isFinite(perSecond) ? perSecond : 1;
}
