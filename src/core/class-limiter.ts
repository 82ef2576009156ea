import { ClassScheduler, type ClassSchedulerOptions } from "./class-scheduler.js";
import type { ClassSpec } from "./class-spec.js";
import { type Clock, systemClock } from "./clock.js";
import { type LimitSpec, lowestRate, mostAtOnce } from "./limit-spec.js";
import type { Limiter } from "./limiter.js";
import { ExceedsBurstError } from "./token-bucket.js";

/** Thrown to the waiters of a closed ClassLimiter. */
export class ClassLimiterClosedError extends Error {
  readonly code = "CLASS_LIMITER_CLOSED";
  constructor() {
    super("The class limiter was closed");
    this.name = "ClassLimiterClosedError";
  }
}

/** A class's answer to one ask: admitted, or refused with how long from now until the class could be served. */
export interface ClassAnswer {
  ok: boolean;
  /** Refused: from now until the same ask would be admitted if nothing else were taken (Infinity: never); 0 when ok. */
  retryMs: number;
}

/** A Limiter of one class that also tells, when it refuses, when the class could be served (an honest Retry-After). */
export interface ClassTaker extends Limiter {
  tryTake(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<ClassAnswer>;
}

interface Waiter {
  n: number;
  deadlineMs: number;
  /** Ends the wait: true admitted, false refused (past its deadline); an error rejects. */
  end(result: boolean | Error): void;
}

/**
 * ClassLimiter waits in real time on a private ClassScheduler (classes
 * sharing one set of limits, design section 12), by the simulator's rule:
 * each class is a line, first come first served within the class; its first
 * asks, and when refused sleeps until `earliestAt` and asks again (its
 * refusals are the marks that hold its class's turn). Lines of different
 * classes do not wait for one another: the scheduler decides between them.
 *
 * A wait that is aborted leaves its line at once; it had taken nothing (a
 * take happens only at admission), so nothing is given back. `close()`
 * rejects every waiter with ClassLimiterClosedError.
 */
export class ClassLimiter {
  readonly scheduler: ClassScheduler;
  readonly clock: Clock;
  /** By class index: the units admitted. */
  readonly takenBy: Float64Array;
  readonly #lines: Waiter[][];
  /** By class index: stops the sleep of its first waiter (it left, or the limiter closed). */
  readonly #sleeping: (AbortController | undefined)[];
  /** By class index: its line is being served (one loop a line, even while a sleep it aborted unwinds). */
  readonly #serving: boolean[];
  readonly #costs: Record<string, number> = {};
  #closed = false;

  constructor(limits: readonly LimitSpec[], classes: readonly ClassSpec[], options: ClassSchedulerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.scheduler = new ClassScheduler(limits, classes, { ...options, clock: this.clock });
    const count = this.scheduler.classes.length;
    this.takenBy = new Float64Array(count);
    this.#lines = Array.from({ length: count }, () => []);
    this.#sleeping = new Array(count).fill(undefined);
    this.#serving = new Array<boolean>(count).fill(false);
  }

  get classNames(): string[] {
    return this.scheduler.classes.map((c) => c.name);
  }

  /** The index of a class by name; an UnknownClassError naming the defined ones if none. */
  classIndex(name: string): number {
    return this.scheduler.classIndex(name);
  }

  /** The lowest long-run rate of the shared limits, in the key's unit. */
  get rate(): number {
    return lowestRate(this.scheduler.parent.specs, this.scheduler.unit);
  }

  get burst(): number {
    return mostAtOnce(this.scheduler.parent.specs, this.scheduler.unit);
  }

  /** The level of the key's rate bucket. */
  tokens(): number {
    return this.scheduler.keyLevelAt(this.clock.now());
  }

  /** How many wait in class `name`'s line. */
  waiting(name: string): number {
    return this.#lines[this.classIndex(name)]!.length;
  }

  /** Resolves when class `name` may take `n`; rejects with the signal's reason when aborted, ExceedsBurstError when it never could. */
  async wait(name: string, n: number, signal?: AbortSignal): Promise<void> {
    if (!(await this.tryWait(name, n, Infinity, signal))) throw new ExceedsBurstError(n, this.burst);
  }

  /**
   * As `wait`, but false, having taken nothing, once the wait would pass
   * `maxWaitMs` from now (asked when the waiter is first in its line, as the
   * simulator's --max-wait), or when the take could never be admitted.
   */
  tryWait(name: string, n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    const c = this.classIndex(name);
    if (!(n >= 0) || !Number.isFinite(n)) return Promise.reject(new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${n}\``));
    if (this.#closed) return Promise.reject(new ClassLimiterClosedError());
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<boolean>((resolve, reject) => {
      const line = this.#lines[c]!;
      const leave = () => {
        const at = line.indexOf(waiter);
        if (at < 0) return;
        line.splice(at, 1);
        waiter.end(signal!.reason as Error);
        // The first left: the one behind it asks at once.
        if (at === 0) this.#sleeping[c]?.abort();
      };
      const waiter: Waiter = {
        n,
        deadlineMs: this.clock.now() + maxWaitMs,
        end: (result) => {
          signal?.removeEventListener("abort", leave);
          if (result instanceof Error) reject(result);
          else resolve(result);
        },
      };
      signal?.addEventListener("abort", leave, { once: true });
      line.push(waiter);
      if (!this.#serving[c]) void this.#serve(c);
    });
  }

  /** As `tryWait`, telling when a refused class could be served. */
  async tryTake(name: string, n: number, maxWaitMs: number, signal?: AbortSignal): Promise<ClassAnswer> {
    if (await this.tryWait(name, n, maxWaitMs, signal)) return { ok: true, retryMs: 0 };
    return { ok: false, retryMs: this.#retryMs(this.classIndex(name), n) };
  }

  /**
   * Admits `n` for class `name` now or refuses it, synchronously (the drop
   * policy of a server: no wait, so no line); a class whose line holds
   * waiters is refused, as it would be behind them.
   */
  takeNow(name: string, n: number): ClassAnswer {
    const c = this.classIndex(name);
    if (this.#lines[c]!.length === 0 && this.scheduler.allowAt(this.clock.now(), c, { [this.scheduler.unit]: n })) {
      this.takenBy[c] = this.takenBy[c]! + n;
      return { ok: true, retryMs: 0 };
    }
    return { ok: false, retryMs: this.#retryMs(c, n) };
  }

  /** True when every bucket is full and no one waits: the same as a new limiter. */
  isIdle(): boolean {
    return this.#lines.every((line) => line.length === 0) && this.scheduler.isFullAt(this.clock.now());
  }

  #retryMs(c: number, n: number): number {
    const nowMs = this.clock.now();
    const atMs = this.scheduler.earliestAt(nowMs, c, { [this.scheduler.unit]: n });
    return atMs === Infinity ? Infinity : Math.max(0, atMs - nowMs);
  }

  /** A Limiter that waits in class `name`'s line; its rate, burst and level are the shared limits'. */
  limiterFor(name: string): ClassTaker {
    this.classIndex(name);
    const self = this;
    return {
      get rate() {
        return self.rate;
      },
      get burst() {
        return self.burst;
      },
      tokens: () => this.tokens(),
      wait: (n, signal) => this.wait(name, n, signal),
      tryWait: (n, maxWaitMs, signal) => this.tryWait(name, n, maxWaitMs, signal),
      tryTake: (n, maxWaitMs, signal) => this.tryTake(name, n, maxWaitMs, signal),
    };
  }

  /** Rejects every waiter; later waits reject at once. */
  close(): void {
    this.#closed = true;
    this.#lines.forEach((line, c) => {
      for (const waiter of line.splice(0)) waiter.end(new ClassLimiterClosedError());
      this.#sleeping[c]?.abort();
    });
  }

  /** Serves class c's line until it is empty: the first asks, and sleeps to `earliestAt` when refused. */
  async #serve(c: number): Promise<void> {
    const line = this.#lines[c]!;
    const unit = this.scheduler.unit;
    // Set and cleared with no await between the line's last look and the clear: a waiter never finds it stale.
    this.#serving[c] = true;
    while (line.length > 0) {
      const head = line[0]!;
      const nowMs = this.clock.now();
      this.#costs[unit] = head.n;
      if (this.scheduler.allowAt(nowMs, c, this.#costs)) {
        line.shift();
        this.takenBy[c] = this.takenBy[c]! + head.n;
        head.end(true);
        continue;
      }
      const earliestMs = this.scheduler.earliestAt(nowMs, c, this.#costs);
      if (earliestMs === Infinity || earliestMs > head.deadlineMs) {
        line.shift();
        head.end(false);
        continue;
      }
      const sleeping = new AbortController();
      this.#sleeping[c] = sleeping;
      try {
        // A step that does not move (rounding) moves a microsecond: the line never asks twice at one instant.
        await this.clock.sleep(Math.max(earliestMs - nowMs, 1e-3), sleeping.signal);
      } catch {
        // Its first left, or the limiter closed: ask again (an empty line ends the loop).
      } finally {
        if (this.#sleeping[c] === sleeping) this.#sleeping[c] = undefined;
      }
    }
    this.#serving[c] = false;
  }
}
