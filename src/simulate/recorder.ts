import { FakeClock } from "../core/clock.js";
import { durationMsFromTokens, TokenBucket } from "../core/token-bucket.js";
import { KeyTallies } from "./key-tallies.js";
import type { DecisionView } from "./simulator.js";
import { type Step, Timeline } from "./timeline.js";
import { WaitStats } from "./wait-stats.js";

/** A step with the bucket's level at its end (absent with --per-key, where there are many buckets). */
export interface LevelStep extends Step {
  level: number | undefined;
  /** With classes: what each class was admitted in the step (events, and their cost), in definition order. */
  classAdmitted?: Array<{ admitted: number; admittedCost: number }>;
}

/**
 * Gathers what the summary, table, chart and plot show, one decision at a
 * time, in memory that does not grow with the number of events (except the
 * waiting queue): the per-key tallies hold one small entry per bucket the
 * simulator keeps, so --max-keys bounds them too.
 */
export class Recorder {
  events = 0;
  admitted = 0;
  refused = 0;
  admittedCost = 0;
  refusedCost = 0;
  /** Arrivals that cost more than the burst (or a window's n): no set of these limits can ever admit them. */
  overBurst = 0;
  firstRefusedMs: number | undefined;
  lastMs = 0;
  /** When the last admitted arrival acts: its arrival plus its wait (queue), its arrival (drop). */
  lastServedMs = 0;
  readonly waits = new WaitStats();
  longestQueue = 0;
  /** Time during which the bucket held less than the next arrival's cost (single bucket). */
  emptyMs = 0;
  readonly timeline: Timeline;
  readonly keys = new KeyTallies();
  /** Per limit (by index): the arrivals it refused, and the admitted ones whose wait it set. */
  readonly refusedBy: Float64Array;
  readonly delayedBy: Float64Array;
  /** With classes: what each class asked for and got, by class name in definition order. */
  readonly classes = new Map<string, ClassTally>();
  /** With classes: each class's own timeline, for its series in the table, CSV, JSON and SVG. */
  readonly #classTimelines = new Map<string, Timeline>();

  /** When admitted, still-waiting arrivals may act: a FIFO with one bucket, a binary min-heap per key. */
  #queue = new Float64Array(1024);
  #queueLength = 0;
  /** With one bucket the queue is a FIFO from here to #queueLength. */
  #queueHead = 0;
  #previousMs = 0;
  #previousTokens: number;
  #previousCost = 1;
  readonly #queueMode: boolean;
  /** Times to act do not follow arrival order (one set per key, or classes served by their rules): the queue is a heap. */
  readonly #outOfOrder: boolean;

  constructor(
    readonly simulator: DecisionView,
    stepMs?: number,
  ) {
    this.timeline = new Timeline(stepMs);
    this.refusedBy = new Float64Array(simulator.limits.length);
    this.delayedBy = new Float64Array(simulator.limits.length);
    this.#previousTokens = simulator.options.burst;
    this.#queueMode = simulator.options.policy === "queue";
    this.#outOfOrder = simulator.options.perKey || simulator.options.classes !== undefined;
    for (const spec of simulator.options.classes ?? []) {
      this.classes.set(spec.name, new ClassTally());
      this.#classTimelines.set(spec.name, new Timeline(stepMs));
    }
  }

  /** Records the decision the simulator just made about this arrival. */
  record(timeMs: number, cost: number, key: string | undefined): void {
    const { simulator } = this;
    const admitted = simulator.admitted;
    this.events++;
    if (!simulator.options.perKey) {
      // Between two arrivals the level rises from what the earlier one left; it was "empty"
      // while below what the later one asks for.
      const deficit = cost - this.#previousTokens;
      if (deficit > 0) this.emptyMs += Math.min(timeMs - this.#previousMs, durationMsFromTokens(deficit, simulator.options.ratePerSecond));
      this.#previousMs = timeMs;
      this.#previousTokens = simulator.tokens;
      this.#previousCost = cost;
    }
    if (cost > simulator.capacity) this.overBurst++;
    if (simulator.limitedByMask !== 0) this.#tallyLimits(simulator.limitedByMask, admitted ? this.delayedBy : this.refusedBy);
    if (admitted) {
      this.admitted++;
      this.admittedCost += cost;
      this.waits.add(simulator.waitMs);
      if (timeMs + simulator.waitMs > this.lastServedMs) this.lastServedMs = timeMs + simulator.waitMs;
    } else {
      this.refused++;
      this.refusedCost += cost;
      this.firstRefusedMs ??= timeMs;
    }
    if (this.#queueMode) this.#trackQueue(timeMs, admitted ? timeMs + simulator.waitMs : timeMs);
    this.lastMs = timeMs;
    this.timeline.record(timeMs, cost, admitted, simulator.waitMs, simulator.tokens);
    if (simulator.className !== undefined) {
      this.classes.get(simulator.className)?.add(cost, admitted, simulator.waitMs);
      this.#classTimelines.get(simulator.className)?.record(timeMs, cost, admitted, simulator.waitMs, simulator.tokens);
    }
    if (key !== undefined) {
      if (simulator.evictedKey !== undefined) this.keys.retire(simulator.evictedKey);
      this.keys.add(key, admitted);
    }
  }

  /** The share of [0, endMs] the bucket spent empty, carrying the last level to the end. */
  emptyShare(endMs: number): number | undefined {
    if (this.simulator.options.perKey || endMs <= 0) return undefined;
    let emptyMs = this.emptyMs;
    if (this.events > 0 && endMs > this.lastMs) {
      const deficit = this.#previousCost - this.#previousTokens;
      if (deficit > 0) emptyMs += Math.min(endMs - this.lastMs, durationMsFromTokens(deficit, this.simulator.options.ratePerSecond));
    }
    return Math.min(1, emptyMs / endMs);
  }

  /** Steps with the level at each step's end, worked out by the core bucket from the step's last decision. */
  levelSteps(endMs: number, stepMs?: number): LevelStep[] {
    const { ratePerSecond, burst, perKey } = this.simulator.options;
    let lastMs = 0;
    let lastTokens = burst;
    const steps = this.timeline.steps(endMs, stepMs);
    // Each class's steps on the same rows: a class whose last event came earlier has fewer.
    const rowMs = steps[0] ? steps[0].endMs - steps[0].startMs : stepMs;
    const byClass = [...this.#classTimelines.values()].map((timeline) => timeline.steps(endMs, rowMs));
    return steps.map((step, row) => {
      if (!Number.isNaN(step.lastDecisionMs)) {
        lastMs = step.lastDecisionMs;
        lastTokens = step.lastTokens;
      }
      const classAdmitted = byClass.length === 0 ? undefined : byClass.map((classSteps) => ({ admitted: classSteps[row]?.admitted ?? 0, admittedCost: classSteps[row]?.admittedCost ?? 0 }));
      const withClasses = classAdmitted ? { ...step, classAdmitted } : step;
      if (perKey) return { ...withClasses, level: undefined };
      const bucket = new TokenBucket({ rate: ratePerSecond, burst, tokens: lastTokens, clock: new FakeClock(lastMs) });
      return { ...withClasses, level: bucket.tokensAt(step.endMs) };
    });
  }

  #tallyLimits(mask: number, tallies: Float64Array): void {
    for (let i = 0; mask !== 0; i++, mask >>>= 1) if (mask & 1) tallies[i] = tallies[i]! + 1;
  }

  #trackQueue(nowMs: number, actMs: number): void {
    if (this.#outOfOrder) {
      const heap = this.#queue;
      // Arrivals whose time to act has come have left the queue.
      while (this.#queueLength > 0 && heap[0]! <= nowMs) this.#popQueue();
      if (actMs > nowMs) this.#pushQueue(actMs);
      if (this.#queueLength > this.longestQueue) this.longestQueue = this.#queueLength;
      return;
    }
    // One bucket serves in order, so times to act only grow: a FIFO suffices.
    const fifo = this.#queue;
    while (this.#queueHead < this.#queueLength && fifo[this.#queueHead]! <= nowMs) this.#queueHead++;
    if (actMs > nowMs) {
      if (this.#queueLength === fifo.length) this.#compactFifo();
      this.#queue[this.#queueLength++] = actMs;
    }
    const waiting = this.#queueLength - this.#queueHead;
    if (waiting > this.longestQueue) this.longestQueue = waiting;
  }

  /** Drops the served front of the FIFO, growing it only when more than half is still waiting. */
  #compactFifo(): void {
    const waiting = this.#queueLength - this.#queueHead;
    const target = waiting * 2 > this.#queue.length ? new Float64Array(this.#queue.length * 2) : this.#queue;
    target.set(this.#queue.subarray(this.#queueHead, this.#queueLength), 0);
    this.#queue = target;
    this.#queueHead = 0;
    this.#queueLength = waiting;
  }

  #pushQueue(value: number): void {
    if (this.#queueLength === this.#queue.length) {
      const grown = new Float64Array(this.#queue.length * 2);
      grown.set(this.#queue);
      this.#queue = grown;
    }
    const heap = this.#queue;
    let i = this.#queueLength++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= value) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = value;
  }

  #popQueue(): void {
    const heap = this.#queue;
    const last = heap[--this.#queueLength]!;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= this.#queueLength) break;
      if (child + 1 < this.#queueLength && heap[child + 1]! < heap[child]!) child++;
      if (heap[child]! >= last) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

/** What one class asked for and got. */
export class ClassTally {
  arrived = 0;
  admitted = 0;
  refused = 0;
  admittedCost = 0;
  refusedCost = 0;
  readonly waits = new WaitStats();

  add(cost: number, admitted: boolean, waitMs: number): void {
    this.arrived++;
    if (admitted) {
      this.admitted++;
      this.admittedCost += cost;
      this.waits.add(waitMs);
    } else {
      this.refused++;
      this.refusedCost += cost;
    }
  }
}
