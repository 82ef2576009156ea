import type { ArrivalSource, EventBatch } from "./event-batch.js";
import { ClassSimulator } from "./class-simulator.js";
import { Recorder } from "./recorder.js";
import { type DecisionView, Simulator, type SimulatorOptions } from "./simulator.js";

/** Called after each decision, for per-event output; the simulator holds the decision. */
export type DecisionListener = (timeMs: number, cost: number, key: string | undefined, simulator: DecisionView) => void;

export interface RunSimulationOptions {
  simulator: SimulatorOptions;
  /** Width of the steps; chosen from the length of the timeline when absent. */
  stepMs?: number;
  onDecision?: DecisionListener;
  /** Awaited after each batch: where per-event output waits for a slow reader, and where the caller may stop the run by throwing. */
  afterBatch?: (batch: EventBatch, simulator: DecisionView) => Promise<void> | undefined;
}

/** Runs every arrival of `source` through one simulator, in order, and records what happened. */
export async function runSimulation(source: ArrivalSource, options: RunSimulationOptions): Promise<Recorder> {
  if (options.simulator.classes !== undefined) return runClassSimulation(source, options);
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

/** Classes sharing one set: an event's key names its class; decisions reach the recorder in arrival order. */
async function runClassSimulation(source: ArrivalSource, options: RunSimulationOptions): Promise<Recorder> {
  const simulator = new ClassSimulator(options.simulator);
  const recorder = new Recorder(simulator, options.stepMs);
  const onDecision = options.onDecision;
  const emit = (timeMs: number, cost: number) => {
    recorder.record(timeMs, cost, undefined);
    if (onDecision) onDecision(timeMs, cost, undefined, simulator);
  };
  for await (const batch of source) {
    const { timesMs, costs, keys, count } = batch;
    for (let i = 0; i < count; i++) simulator.offer(timesMs[i]!, costs[i]!, keys === undefined ? undefined : keys[i], emit);
    if (options.afterBatch) await options.afterBatch(batch, simulator);
  }
  simulator.finish(emit);
  return recorder;
}
