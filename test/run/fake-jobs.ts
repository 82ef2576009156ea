import type { FakeClock } from "../../src/core/clock.js";
import type { JobSpec } from "../../src/run/job-source.js";
import type { JobExit, Launch } from "../../src/run/launch.js";

/** What a fake job does: how long it runs and how it ends (by job number and attempt). */
export type FakeBehaviour = (job: JobSpec, attempt: number) => { runMs: number; code?: number; spawnError?: string };

export interface FakeLaunches {
  launch: Launch;
  /** Start times, in launch order. */
  startsMs: number[];
  /** The most jobs that ran at once. */
  maxRunning(): number;
  /** Signals sent to jobs, in order. */
  signals: NodeJS.Signals[];
}

/** Jobs that live on the fake clock: they run for `runMs` and can be signalled. */
export function fakeLaunches(clock: FakeClock, behaviour: FakeBehaviour): FakeLaunches {
  const startsMs: number[] = [];
  const signals: NodeJS.Signals[] = [];
  let running = 0;
  let maxRunning = 0;
  const launch: Launch = (job, attempt) => {
    const plan = behaviour(job, attempt);
    startsMs.push(clock.now());
    if (plan.spawnError) {
      return { exited: Promise.resolve({ code: null, signal: null, spawnError: { code: plan.spawnError, message: plan.spawnError } }), kill: () => {} };
    }
    running++;
    maxRunning = Math.max(maxRunning, running);
    let end!: (exit: JobExit) => void;
    const exited = new Promise<JobExit>((resolve) => (end = resolve));
    const ended = new AbortController();
    const finish = (exit: JobExit) => {
      if (ended.signal.aborted) return;
      ended.abort();
      running--;
      end(exit);
    };
    clock.sleep(plan.runMs, ended.signal).then(
      () => finish({ code: plan.code ?? 0, signal: null }),
      () => {},
    );
    return {
      exited,
      kill: (signal) => {
        signals.push(signal);
        if (signal === "SIGKILL" || signal === "SIGINT") finish({ code: null, signal });
      },
    };
  };
  return { launch, startsMs, maxRunning: () => maxRunning, signals };
}

/** Lets every pending continuation run, timers of the event loop included. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Moves the fake clock 1 ms at a time until `done` settles (or `limitMs` passes); returns its value. */
export async function drive<T>(clock: FakeClock, done: Promise<T>, limitMs = 60_000): Promise<T> {
  let settled = false;
  done.then(
    () => (settled = true),
    () => (settled = true),
  );
  const untilMs = clock.now() + limitMs;
  await settle();
  while (!settled && clock.now() < untilMs) {
    await clock.advance(1);
    await settle();
  }
  if (!settled) throw new Error(`still running after ${limitMs} ms of fake time`);
  return done;
}
