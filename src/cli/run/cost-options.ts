import { parseCount, parseCountRate } from "../../core/units.js";
import { type CostTemplate, parseCostTemplate } from "../../run/cost-template.js";
import { parseOption, UsageError } from "../errors.js";
import { type ParsedLimit, parseLimitOptions } from "../limit-options.js";

/** The unit a run's cost limits count (DESIGN 13): each job's `--cost`, beside its one launch. */
export const COST_UNIT = "cost";

/** --cost and its limits as commander hands them over. */
export interface CostFlags {
  cost?: string;
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
 */
export function parseCostOptions(flags: CostFlags, keyed: boolean): { template: CostTemplate | undefined; limits: ParsedLimit[] } {
  const rates = flags.costRate ?? [];
  const bursts = flags.costBurst ?? [];
  const windows = flags.costWindow ?? [];
  if (bursts.length > rates.length) {
    throw new UsageError(`--cost-burst: ${bursts.length} bursts for ${rates.length} cost rate${rates.length === 1 ? "" : "s"}; each goes with a --cost-rate (the i-th with the i-th)`);
  }
  const limited = rates.length > 0 || windows.length > 0;
  if (flags.cost === undefined) {
    if (limited) throw new UsageError(`--cost-${rates.length > 0 ? "rate" : "window"}: counts each job's cost, and no --cost says what it is; ${EXAMPLE}`);
    return { template: undefined, limits: [] };
  }
  if (!limited) throw new UsageError(`--cost: no limit counts it; add --cost-rate or --cost-window, ${EXAMPLE}`);
  const template = parseOption("--cost", flags.cost, parseCostTemplate);
  const limits: ParsedLimit[] = rates.map((text, i) => {
    const rate = parseOption("--cost-rate", text, (value) => parseCountRate(value, { allowZero: keyed }));
    const burstText = bursts[i];
    const burst = burstText === undefined ? Math.max(1, writtenAmount(text, rate)) : parseOption("--cost-burst", burstText, (value) => parseCount(value));
    const flag = `--cost-rate ${text}${burstText === undefined ? "" : ` --cost-burst ${burstText}`}`;
    return { spec: { kind: "bucket", unit: COST_UNIT, rate, burst }, flag, burstGiven: burstText !== undefined };
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
    limits.push({ spec: { ...limit.spec, unit: COST_UNIT }, flag: limit.flag.replace(/^--window/, "--cost-window"), burstGiven: false });
  }
  return { template, limits };
}

/** What a rate allows in the period it was written with: 90000/m → 90,000; 1500/s, 1500 → 1,500; inf → 1 (no limit needs no burst). */
function writtenAmount(text: string, perSecond: number): number {
  const amount = Number(/^\s*([\d.]+)/.exec(text)?.[1]);
  if (Number.isFinite(amount) && amount > 0) return amount;
  return Number.isFinite(perSecond) ? perSecond : 1;
}
