import { msToSeconds, round9 } from "../../core/format.js";
import { limitNumbers } from "../../core/limit-set.js";
import type { DecisionView } from "../simulator.js";

/**
 * One decision as a JSON line (`--format jsonl`): times in seconds, the key
 * only when there is one. With more than one limit, `limitedBy` (the limits,
 * from 1, that refused the event or set its wait) and `levels` (each limit's
 * level after the decision) follow; `tokens` stays the bucket under test's.
 * With classes the event's `class` follows the time.
 */
export function decisionJsonLine(timeMs: number, cost: number, key: string | undefined, simulator: DecisionView): string {
  const keyPart =
    simulator.className !== undefined ? `,"class":${JSON.stringify(simulator.className)}` : key === undefined ? "" : `,"key":${JSON.stringify(key)}`;
  const line = `{"t":${msToSeconds(timeMs)}${keyPart},"cost":${cost},"admitted":${simulator.admitted},"wait":${msToSeconds(simulator.waitMs)},"tokens":${round9(simulator.tokens)}`;
  if (simulator.limits.length === 1) return `${line}}\n`;
  const levels = simulator.limits.map((_, index) => round9(simulator.levelAt(timeMs, index))).join(",");
  return `${line},"limitedBy":[${limitNumbers(simulator.limitedByMask).join(",")}],"levels":[${levels}]}\n`;
}
