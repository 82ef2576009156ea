import { ClassScheduler } from "../core/class-scheduler.js";
import { FakeClock } from "../core/clock.js";
import type { LimitSpec } from "../core/limit-spec.js";
import type { DecisionView, SimulatorOptions } from "./simulator.js";

/** Called for each decided event, in arrival order, with the view holding its decision. */
export type ClassDecisionListener = (timeMs: number, cost: number, className: string) => void;

interface Waiting {
  timeMs: number;
  cost: number;
  /** Its place in arrival order. */
  seq: number;
}

interface Decided {
  timeMs: number;
  cost: number;
  className: string;
  admitted: boolean;
  waitMs: number;
  tokens: number;
  done: boolean;
}

/**
 * The simulator of classes sharing one set: the core ClassScheduler driven
 * by explicit times, no second algorithm.
 *
 * drop: each arrival asks once (`allowAt`), decided at once.
 * queue: each class is a line of waiting takers, first come first served
 * within the class. The first in each line asks when it arrives and, when
 * refused, again at the instant `earliestAt` names, as a waiting pipe or
 * run would; its refusals are the marks that hold its class's turn. With
 * `maxWaitMs` it is refused once that instant is further than its limit.
 * Between arrivals the lines are served in order of those instants, so
 * decisions come out of arrival order; they are handed on in arrival order.
 */
export class ClassSimulator implements DecisionView {
  readonly options: SimulatorOptions;
  readonly limits: readonly LimitSpec[];
  readonly capacity: number;
  readonly scheduler: ClassScheduler;
  admitted = false;
  waitMs = 0;
  tokens = 0;
  limitedByMask = 0;
  className: string | undefined;
  readonly evictedKey = undefined;
  readonly evictions = 0;
  readonly keyCount = 1;

  readonly #clock = new FakeClock(0);
  readonly #defaultClass: number;
  readonly #costs: Record<string, number> = {};
  readonly #units: string[];
  /** Per class, its line (queue), from `#heads[c]`; and when its first asks next. */
  readonly #lines: Waiting[][];
  readonly #heads: number[];
  readonly #retryMs: Float64Array;
  /** Decisions by arrival number less `#decidedBase`; those before `#decidedHead` were handed on. */
  #decided: Decided[] = [];
  #decidedBase = 0;
  #decidedHead = 0;
  #seq = 0;
  #emit: ClassDecisionListener = () => {};

  constructor(options: SimulatorOptions) {
    this.options = options;
    this.limits = options.limits ?? [{ kind: "bucket", unit: "count", rate: options.ratePerSecond, burst: options.burst }];
    this.capacity = Math.min(...this.limits.map((limit) => (limit.kind === "bucket" ? limit.burst : limit.kind === "window" ? limit.n : Infinity)));
    this.scheduler = new ClassScheduler(this.limits, options.classes ?? [], { clock: this.#clock });
    this.#defaultClass = this.scheduler.classIndex(options.defaultClass ?? this.scheduler.classes[0]!.name);
    this.#units = [...new Set(this.limits.flatMap((limit) => (limit.kind === "concurrency" ? [] : [limit.unit])))];
    const count = this.scheduler.classes.length;
    this.#lines = Array.from({ length: count }, () => []);
    this.#heads = new Array<number>(count).fill(0);
    this.#retryMs = new Float64Array(count).fill(Infinity);
  }

  levelAt(timeMs: number, index: number): number {
    return this.scheduler.parent.levelAt(timeMs, index);
  }

  /** The index of the class an event names (its key), or the default; an UnknownClassError if none is defined by that name. */
  classOf(name: string | undefined): number {
    return name === undefined ? this.#defaultClass : this.scheduler.classIndex(name);
  }

  /** One arrival, in time order; every event decided meanwhile goes to `emit`, in arrival order. */
  offer(timeMs: number, cost: number, name: string | undefined, emit: ClassDecisionListener): void {
    this.#emit = emit;
    const c = this.classOf(name);
    const className = this.scheduler.classes[c]!.name;
    const seq = this.#seq++;
    this.#decided.push({ timeMs, cost, className, admitted: false, waitMs: 0, tokens: 0, done: false });
    if (this.options.policy === "drop") {
      this.#setCosts(cost);
      const admitted = this.scheduler.allowAt(timeMs, c, this.#costs);
      this.#decide(seq, admitted, timeMs);
      this.#flush();
      return;
    }
    this.#serveUntil(timeMs);
    const line = this.#lines[c]!;
    line.push({ timeMs, cost, seq });
    if (line.length - this.#heads[c]! === 1) this.#serveClass(c, timeMs);
    this.#flush();
  }

  /** Serves every line to its end (the arrivals are over) and hands on the rest. */
  finish(emit: ClassDecisionListener): void {
    this.#emit = emit;
    this.#serveUntil(Infinity);
    // Whoever still waits would wait for ever (a class whose ceil is 0): refused.
    this.#lines.forEach((line, c) => {
      for (; this.#heads[c]! < line.length; this.#heads[c]!++) this.#decide(line[this.#heads[c]!]!.seq, false, line[this.#heads[c]!]!.timeMs);
    });
    this.#flush();
  }

  /** Lets every line whose first asks by `untilMs` ask, in order of those instants. */
  #serveUntil(untilMs: number): void {
    for (;;) {
      let next = -1;
      for (let c = 0; c < this.#retryMs.length; c++) if (this.#retryMs[c]! <= untilMs && this.#retryMs[c]! < Infinity && (next < 0 || this.#retryMs[c]! < this.#retryMs[next]!)) next = c;
      if (next < 0) return;
      this.#serveClass(next, this.#retryMs[next]!);
    }
  }

  /** Class c's line asks at `atMs`: its first ones are admitted or refused while they can be, the next asks again later. */
  #serveClass(c: number, atMs: number): void {
    const line = this.#lines[c]!;
    this.#retryMs[c] = Infinity;
    while (this.#heads[c]! < line.length) {
      const head = line[this.#heads[c]!]!;
      this.#setCosts(head.cost);
      const deadlineMs = head.timeMs + this.options.maxWaitMs;
      if (atMs > deadlineMs) {
        this.#decide(head.seq, false, atMs);
      } else if (this.scheduler.allowAt(atMs, c, this.#costs)) {
        this.#decide(head.seq, true, atMs);
      } else {
        const earliestMs = this.scheduler.earliestAt(atMs, c, this.#costs);
        // Never (a cost past a burst) is refused at once, wait limit or not.
        if (earliestMs !== Infinity && earliestMs <= deadlineMs) {
          // A step that does not move (rounding) moves a nanosecond: the line never asks twice at one instant.
          this.#retryMs[c] = earliestMs > atMs ? earliestMs : Math.min(atMs + 1e-6, deadlineMs);
          if (this.#retryMs[c]! > atMs) break;
        }
        this.#decide(head.seq, false, atMs);
      }
      this.#heads[c]!++;
      if (this.#heads[c]! > 1024 && this.#heads[c]! * 2 > line.length) {
        line.splice(0, this.#heads[c]!);
        this.#heads[c] = 0;
      }
    }
  }

  #decide(seq: number, admitted: boolean, atMs: number): void {
    const decided = this.#decided[seq - this.#decidedBase]!;
    decided.admitted = admitted;
    decided.waitMs = admitted ? atMs - decided.timeMs : 0;
    decided.tokens = this.scheduler.keyLevelAt(atMs);
    decided.done = true;
  }

  /** Hands on the decided events at the front of arrival order. */
  #flush(): void {
    const list = this.#decided;
    let i = this.#decidedHead;
    for (; i < list.length && list[i]!.done; i++) {
      const d = list[i]!;
      this.admitted = d.admitted;
      this.waitMs = d.waitMs;
      this.tokens = d.tokens;
      this.className = d.className;
      this.limitedByMask = 0;
      this.#emit(d.timeMs, d.cost, d.className);
    }
    this.#decidedHead = i;
    if (i > 4096 && i * 2 > list.length) {
      list.splice(0, i);
      this.#decidedBase += i;
      this.#decidedHead = 0;
    }
  }

  #setCosts(cost: number): void {
    for (let i = 0; i < this.#units.length; i++) this.#costs[this.#units[i]!] = cost;
  }
}
