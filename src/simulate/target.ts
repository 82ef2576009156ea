import { parseDuration, UnitError } from "../core/units.js";

/**
 * What `--suggest` aims for: at most this share refused, or at most this
 * wait at a percentile (nearest rank) of the admitted arrivals.
 */
export type Target = { kind: "reject"; maxShare: number; text: string } | { kind: "wait"; quantile: number; maxWaitMs: number; text: string };

export const TARGET_EXAMPLE = `try "reject<=1%" or "p99wait<=500ms"`;

export function parseTarget(text: string): Target {
  const compact = text.replace(/\s+/g, "").toLowerCase();
  const reject = /^(?:reject|refused|drop)(?:ed)?<=(\d+(?:\.\d+)?)%$/.exec(compact);
  if (reject) {
    const maxShare = Number(reject[1]) / 100;
    if (maxShare >= 1) throw new UnitError(`"${text}" is no target: every share is at most 100%; ${TARGET_EXAMPLE}`);
    return { kind: "reject", maxShare, text: `refused <= ${reject[1]}%` };
  }
  const wait = /^p(\d{1,2}(?:\.\d+)?)wait<=(.+)$/.exec(compact);
  if (wait) {
    const percentile = Number(wait[1]);
    if (!(percentile > 0 && percentile < 100)) throw new UnitError(`"${text}": the percentile must be between 0 and 100; ${TARGET_EXAMPLE}`);
    let maxWaitMs: number;
    try {
      maxWaitMs = parseDuration(wait[2]!);
    } catch (error) {
      throw new UnitError(`"${text}": ${(error as Error).message}`);
    }
    return { kind: "wait", quantile: percentile / 100, maxWaitMs, text: `p${wait[1]} wait <= ${wait[2]}` };
  }
  throw new UnitError(`"${text}" is not a target; ${TARGET_EXAMPLE}`);
}
