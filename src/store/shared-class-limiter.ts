import type { ClassAnswer, ClassTaker } from "../core/class-limiter.js";
import { type ClassSpec, resolveClasses, type ResolvedClass, UnknownClassError } from "../core/class-spec.js";
import { type Clock, systemClock } from "../core/clock.js";
import { type Costs, type LimitSpec, lowestRate, mostAtOnce } from "../core/limit-spec.js";
import { ExceedsBurstError } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import { StoreError } from "./bucket-store.js";
import type { StoreBackedLimiter } from "./failover-limiter.js";
import { type LimitSetStore, type SetState, specOf } from "./limit-set-store.js";
import { WaitLine } from "./wait-line.js";

/** How much sooner than the store's instant a refused wait asks again: about what a busy process wakes late by. */
const WAKE_EARLY_MS = 3;

export interface SharedClassLimiterOptions {
  /** A store that keeps classes (takeClass). */
  store: LimitSetStore;
  key: string;
  /** The class every wait takes as. */
  className: string;
  /** The key as the store holds it now, with its classes (readSet). */
  state: SetState;
  /** What `n` counts: the pipe's bytes or lines, the run's launches. */
  unit: RateKind;
  clock?: Clock;
  /** The longest sleep between two asks of a refused wait: a `key set` reaches a waiting taker within this. */
  maxSleepMs?: number;
}

/**
 * SharedClassLimiter is a Limiter that takes as one class of a shared key
 * (design section 12): every process naming the key and a class is served
 * by one ClassScheduler in the store, one atomic `takeClass` a slice.
 *
 * A wait asks; refused, it sleeps until the instant the store named (at
 * most `maxSleepMs`) and asks again. The refusals are the class's marks in
 * the store, which hold its turn against the classes behind it. Nothing is
 * taken before the item is admitted, so an aborted wait gives nothing back.
 * Waits in one process go one at a time, in order.
 *
 * Its burst is the class's guarantee burst (a slice no larger can be served
 * from the guarantee), its rate the class's ceil within the key's rate.
 * When the store fails the limiter stops, as SharedSetLimiter does; going on
 * without the store is FailoverLimiter's business.
 */
export class SharedClassLimiter implements StoreBackedLimiter, ClassTaker {
  readonly key: string;
  readonly kind: RateKind;
  readonly className: string;
  readonly #store: LimitSetStore;
  readonly #clock: Clock;
  readonly #maxSleepMs: number;
  readonly #line = new WaitLine();
  #limits: LimitSpec[];
  #classes: ClassSpec[];
  #class: ResolvedClass;
  readonly #closed = new AbortController();
  /** Round trips made (for tests and benchmarks). */
  roundTrips = 0;

  constructor(options: SharedClassLimiterOptions) {
    this.#store = options.store;
    this.key = options.key;
    this.kind = options.unit;
    this.className = options.className;
    this.#clock = options.clock ?? systemClock;
    this.#maxSleepMs = options.maxSleepMs ?? 1000;
    this.#limits = options.state.limits.map(specOf);
    this.#classes = (options.state.classes ?? []).map(({ name, rate, ceil, prio, weight, burst }) => ({ name, rate, ceil, prio, weight, burst }));
    this.#class = this.#resolve();
  }

  get rate(): number {
    return Math.min(this.#class.ceil, lowestRate(this.#limits, this.kind));
  }

  // The guarantee's whole burst: a smaller slice lets a lower prio borrow in the few ms a waiting higher prio
  // wakes late (measured with bench/class-pipes.mjs), which costs the higher prio its loans.
  get burst(): number {
    const own = this.#class.burst > 0 ? this.#class.burst : this.#class.ceilBurst;
    // Whole units: a scaled burst (the key's × guarantee / rate) is seldom whole, and a slice is.
    return Math.min(Math.max(Math.min(1, own), Math.floor(own)), mostAtOnce(this.#limits, this.kind));
  }

  /** Nothing is held here: every slice is asked of the store. */
  tokens(): number {
    return 0;
  }

  /** The key's classes as last read, with the one this limiter takes as. */
  get classes(): readonly ClassSpec[] {
    return this.#classes;
  }

  async wait(n: number, signal?: AbortSignal, costs?: Costs): Promise<void> {
    if (!(await this.tryWait(n, Infinity, signal, costs))) throw new ExceedsBurstError(n, this.burst);
  }

  async tryWait(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<boolean> {
    return (await this.tryTake(n, maxWaitMs, signal, costs)).ok;
  }

  /** As `tryWait`, telling when a refused class could be served: the store's instant. */
  tryTake(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<ClassAnswer> {
    if (!(n >= 0) || !Number.isFinite(n)) return Promise.reject(new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${n}\``));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return this.#line.run(() => this.#ask(costs ?? { [this.kind]: n }, maxWaitMs, signal), signal);
  }

  async close(): Promise<void> {
    this.#closed.abort();
  }

  async #ask(costs: Costs, maxWaitMs: number, signal: AbortSignal | undefined): Promise<ClassAnswer> {
    const deadlineMs = this.#clock.now() + maxWaitMs;
    const stop = signal ? AbortSignal.any([signal, this.#closed.signal]) : this.#closed.signal;
    for (;;) {
      signal?.throwIfAborted();
      if (this.#closed.signal.aborted) throw this.#closedError();
      const result = await this.#take(costs);
      if (result.ok) return { ok: true, retryMs: 0 };
      if (result.waitMs === Infinity || this.#clock.now() + result.waitMs > deadlineMs) return { ok: false, retryMs: result.waitMs };
      try {
        // Waking a little early and asking again costs a round trip; waking late lets a lower prio borrow first.
        // Once within that margin, the wait is slept out whole: one more ask, not one a millisecond.
        const sleepMs = result.waitMs > WAKE_EARLY_MS ? result.waitMs - WAKE_EARLY_MS : result.waitMs;
        await this.#clock.sleep(Math.max(1, Math.min(sleepMs, this.#maxSleepMs)), stop);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (this.#closed.signal.aborted) throw this.#closedError();
        throw error;
      }
    }
  }

  async #take(costs: Costs) {
    this.roundTrips++;
    let result;
    try {
      result = await this.#store.takeClass!(this.key, this.className, costs);
    } catch (error) {
      // A class dropped by a `key set` while in use ends the taker as a key deleted would.
      if (error instanceof UnknownClassError) {
        throw new StoreError("classes", `store ${this.#store.url}: key ${this.key} no longer has class "${this.className}"; the classes are ${error.defined.join(", ")}`, {
          storeUrl: this.#store.url,
          key: this.key,
        });
      }
      throw error;
    }
    if (!result) throw new StoreError("deleted", `key "${this.key}": deleted from ${this.#store.url} while in use`, { storeUrl: this.#store.url, key: this.key });
    this.#limits = result.limits;
    this.#classes = result.classes;
    this.#class = this.#resolve();
    return result;
  }

  /** This limiter's class, with its defaults, from the key's limits and classes as last read. */
  #resolve(): ResolvedClass {
    const share = this.#limits.find((spec) => spec.kind === "bucket");
    if (share?.kind !== "bucket") throw new RangeError(`key "${this.key}": classes share a bucket, and its set has none`);
    const resolved = resolveClasses(this.#classes, share.rate, share.burst).find((c) => c.name === this.className);
    if (!resolved) throw new UnknownClassError(this.className, this.#classes.map((c) => c.name));
    return resolved;
  }

  #closedError(): StoreError {
    return new StoreError("closed", `key "${this.key}": the limiter was closed while waiting`, { storeUrl: this.#store.url, key: this.key });
  }
}
