/**
 * `--suggest`: the smallest burst (at a given rate) or the smallest rate (at
 * a given burst) whose simulation meets a target. Each candidate is a full
 * run of the same simulator over the arrivals held in memory. The search
 * doubles until the target is met, then bisects, so that the answer meets
 * the target and the next smaller candidate does not. Bursts are whole
 * tokens (bytes with --cost bytes) up to MAX_BURST, past which whole
 * numbers are no longer exact; rates are searched on a grid of three
 * significant digits (4.99/s, 5.00/s, 5.01/s). The outcome is rendered in
 * render/suggestion.ts.
 */

import type { EventStore } from "./event-store.js";
import { Simulator, type SimulatorOptions } from "./simulator.js";
import type { Target } from "./target.js";
import { WaitStats } from "./wait-stats.js";

/** Which setting is searched; the other one is fixed. */
export type SearchKind = "burst" | "rate";

/** One candidate's outcome. */
export interface Evaluation {
  value: number;
  events: number;
  refused: number;
  refusedShare: number;
  p99WaitMs: number;
  /** The wait at the target's percentile (same as p99 for reject targets). */
  targetWaitMs: number;
  maxWaitMs: number;
  meets: boolean;
}

export interface Suggestion {
  kind: SearchKind;
  target: Target;
  /** The smallest value that meets the target; undefined when none does. */
  answer: Evaluation | undefined;
  /** The candidate just below the answer, which does not meet the target. */
  below: Evaluation | undefined;
  /** Candidates around the answer, in increasing order. */
  table: Evaluation[];
  /** How many simulations the search ran. */
  runs: number;
}

const MAX_RATE = 2 ** 53;
/** The largest burst searched: the largest whole number a double holds exactly. */
export const MAX_BURST = Number.MAX_SAFE_INTEGER;
/** More halvings than any interval of whole numbers up to MAX_BURST needs: a guard, never the answer. */
const MAX_BISECTIONS = 64;
const MIN_RATE_EXPONENT = -6;

/** Runs the arrivals once through a simulator with these options and measures the target. */
export function evaluate(store: EventStore, options: SimulatorOptions, target: Target, value: number): Evaluation {
  const simulator = new Simulator(options);
  const waits = new WaitStats();
  const { timesMs, costs, keys, count } = store.asBatch();
  let refused = 0;
  for (let i = 0; i < count; i++) {
    if (simulator.offer(timesMs[i]!, costs[i]!, keys === undefined ? undefined : keys[i])) waits.add(simulator.waitMs);
    else refused++;
  }
  const refusedShare = count === 0 ? 0 : refused / count;
  const targetWaitMs = target.kind === "wait" ? waits.quantileMs(target.quantile) : waits.quantileMs(0.99);
  const meets = target.kind === "reject" ? refusedShare <= target.maxShare + 1e-12 : targetWaitMs <= target.maxWaitMs;
  return { value, events: count, refused, refusedShare, p99WaitMs: waits.quantileMs(0.99), targetWaitMs, maxWaitMs: waits.maxMs, meets };
}

/** The smallest whole burst that meets the target at `options.ratePerSecond`. */
export function suggestBurst(store: EventStore, options: Omit<SimulatorOptions, "burst">, target: Target): Suggestion {
  const cache = new Map<number, Evaluation>();
  const run = (burst: number) => {
    let evaluation = cache.get(burst);
    if (!evaluation) {
      evaluation = evaluate(store, { ...options, burst }, target, burst);
      cache.set(burst, evaluation);
    }
    return evaluation;
  };
  // A burst of everything there is admits everything at once, so the search ends there, or at
  // MAX_BURST when the arrivals cost more: the doubling takes at most 53 steps, the halving as many.
  const ceiling = Math.min(MAX_BURST, Math.max(1, Math.ceil(store.maxCost), Math.ceil(store.totalCost)));
  let failing = 0;
  let meeting = 1;
  while (!run(meeting).meets) {
    failing = meeting;
    if (meeting >= ceiling) return { kind: "burst", target, answer: undefined, below: run(meeting), table: [run(meeting)], runs: cache.size };
    meeting = Math.min(meeting * 2, ceiling);
  }
  for (let step = 0; meeting - failing > 1 && step < MAX_BISECTIONS; step++) {
    // failing + half the gap: the sum of two bursts near MAX_BURST would not be exact.
    const middle = failing + Math.floor((meeting - failing) / 2);
    if (middle <= failing || middle >= meeting) break;
    if (run(middle).meets) meeting = middle;
    else failing = middle;
  }
  const answer = meeting;
  const candidates = [answer / 4, answer / 2, (answer * 3) / 4, answer - 1, answer, answer * 1.5, answer * 2, answer * 4]
    .map((value) => Math.round(value))
    .filter((value) => value >= 1 && value <= MAX_BURST);
  const table = [...new Set(candidates)].sort((a, b) => a - b).map(run);
  return { kind: "burst", target, answer: run(answer), below: failing >= 1 ? run(failing) : undefined, table, runs: cache.size };
}

/** Rates with three significant digits, indexed in increasing order. */
export function rateAt(index: number): number {
  const exponent = Math.floor(index / 900) + MIN_RATE_EXPONENT;
  const mantissa = 100 + (index % 900);
  return Number((mantissa * 10 ** (exponent - 2)).toPrecision(3));
}

/** The index of the smallest grid rate at or above `rate`. */
export function rateIndexAtOrAbove(rate: number): number {
  const exponent = Math.floor(Math.log10(rate));
  let index = Math.max(0, (exponent - MIN_RATE_EXPONENT) * 900 + Math.floor(rate / 10 ** (exponent - 2)) - 100 - 1);
  while (rateAt(index) < rate) index++;
  while (index > 0 && rateAt(index - 1) >= rate) index--;
  return index;
}

/** The smallest grid rate that meets the target with `options.burst`. */
export function suggestRate(store: EventStore, options: Omit<SimulatorOptions, "ratePerSecond">, target: Target, durationMs: number): Suggestion {
  const cache = new Map<number, Evaluation>();
  const run = (index: number) => {
    let evaluation = cache.get(index);
    if (!evaluation) {
      const rate = rateAt(index);
      evaluation = evaluate(store, { ...options, ratePerSecond: rate }, target, rate);
      cache.set(index, evaluation);
    }
    return evaluation;
  };
  // Start from the average rate of the arrivals, then double or halve to bracket the answer.
  const average = store.totalCost / Math.max(durationMs / 1000, 1e-3);
  let index = rateIndexAtOrAbove(Math.min(Math.max(average, 10 ** MIN_RATE_EXPONENT), MAX_RATE));
  let failing = -1;
  let meeting: number;
  if (run(index).meets) {
    meeting = index;
    while (meeting > 0) {
      const lower = Math.max(0, rateIndexAtOrAbove(rateAt(meeting) / 2));
      if (!run(lower).meets) {
        failing = lower;
        break;
      }
      meeting = lower;
    }
  } else {
    failing = index;
    for (;;) {
      if (rateAt(failing) >= MAX_RATE) {
        return { kind: "rate", target, answer: undefined, below: run(failing), table: [run(failing)], runs: cache.size };
      }
      const higher = rateIndexAtOrAbove(Math.min(rateAt(failing) * 2, MAX_RATE));
      if (run(higher).meets) {
        meeting = higher;
        break;
      }
      failing = higher;
    }
  }
  for (let step = 0; meeting - failing > 1 && step < MAX_BISECTIONS; step++) {
    const middle = failing + Math.floor((meeting - failing) / 2);
    if (run(middle).meets) meeting = middle;
    else failing = middle;
  }
  const answer = rateAt(meeting);
  const neighbours = [0.5, 0.75, 0.9, 1.1, 1.25, 1.5, 2].map((factor) => rateIndexAtOrAbove(answer * factor));
  const indexes = [...new Set([...neighbours, meeting, ...(failing >= 0 ? [failing] : [])])].sort((a, b) => a - b);
  return { kind: "rate", target, answer: run(meeting), below: failing >= 0 ? run(failing) : undefined, table: indexes.map(run), runs: cache.size };
}
