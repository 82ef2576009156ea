import { msToSeconds, round9 } from "../../core/format.js";
import type { Simulator } from "../simulator.js";

/** One decision as a JSON line (`--format jsonl`): times in seconds, the key only when there is one. */
export function decisionJsonLine(timeMs: number, cost: number, key: string | undefined, simulator: Simulator): string {
  const keyPart = key === undefined ? "" : `,"key":${JSON.stringify(key)}`;
  return `{"t":${msToSeconds(timeMs)}${keyPart},"cost":${cost},"admitted":${simulator.admitted},"wait":${msToSeconds(simulator.waitMs)},"tokens":${round9(simulator.tokens)}}\n`;
}
