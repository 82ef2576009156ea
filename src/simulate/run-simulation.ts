import type { ArrivalSource, EventBatch } from "./event-batch.js";
import { Recorder } from "./recorder.js";
import { Simulator, type SimulatorOptions } from "./simulator.js";

/** Called after each decision, for per-event output; the simulator holds the decision. */
export type DecisionListener = (timeMs: number, cost: number, key: string | undefined, simulator: Simulator) => void;

export interface RunSimulationOptions {
  simulator: SimulatorOptions;
  /** Width of the steps; chosen from the length of the timeline when absent. */
  stepMs?: number;
  onDecision?: DecisionListener;
  /** Awaited after each batch: where per-event output waits for a slow reader, and where the caller may stop the run by throwing. */
  afterBatch?: (batch: EventBatch, simulator: Simulator) => Promise<void> | undefined;
}

/** Runs every arrival of `source` through one simulator, in order, and records what happened. */
export async function runSimulation(source: ArrivalSource, options: RunSimulationOptions): Promise<Recorder> {
  const simulator = new Simulator(options.simulator);
  const recorder = new Recorder(simulator, options.stepMs);
  for await (const batch of source) {
    simulateBatch(batch, simulator, recorder, options.onDecision);
    if (options.afterBatch) await options.afterBatch(batch, simulator);
  }
  return recorder;
}

/** The inner loop, kept small and monomorphic: one core decision and one record per arrival. */
export function simulateBatch(batch: EventBatch, simulator: Simulator, recorder: Recorder, onDecision?: DecisionListener): void {
  const { timesMs, costs, keys, count } = batch;
  for (let i = 0; i < count; i++) {
    const timeMs = timesMs[i]!;
    const cost = costs[i]!;
    const key = keys === undefined ? undefined : keys[i];
    simulator.offer(timeMs, cost, key);
    recorder.record(timeMs, cost, key);
    if (onDecision) onDecision(timeMs, cost, key, simulator);
  }
}
