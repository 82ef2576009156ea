import { type ClassAnswer, ClassLimiter } from "../core/class-limiter.js";
import type { ClassSpec } from "../core/class-spec.js";
import type { Clock } from "../core/clock.js";
import type { LimitSpec } from "../core/limit-spec.js";

/**
 * One key's limits shared by classes of requests (design section 12), as
 * the request gate takes from them: an ask of one request as a class,
 * admitted (after a wait within `maxWaitMs`, queueing) or refused with the
 * time until that class could be served, which is the refusal's honest
 * Retry-After. `PrivateKeyClasses` is one in this process; a store's is
 * the same with promises (store-key-classes.ts).
 */
export interface KeyClasses {
  take(className: string, maxWaitMs: number, signal?: AbortSignal, cost?: number): ClassAnswer | Promise<ClassAnswer>;
  /** The level of the key's rate, as far as it is known without a round trip (undefined: not known). */
  level(): number | undefined;
  /** True when the key is as a new one: it may be forgotten. */
  isIdle(): boolean;
  close?(): void;
}

/** Where the keys' classes come from when they are not private: a store's. */
export interface KeyClassesSource {
  open(key: string): KeyClasses;
  dispose?(): void;
}

/** A key's classes in this process: a ClassLimiter, asked synchronously when no request may wait (drop). */
export class PrivateKeyClasses implements KeyClasses {
  readonly #limiter: ClassLimiter;

  constructor(limits: readonly LimitSpec[], classes: readonly ClassSpec[], clock: Clock) {
    this.#limiter = new ClassLimiter(limits, classes, { clock });
  }

  take(className: string, maxWaitMs: number, signal?: AbortSignal, cost = 1): ClassAnswer | Promise<ClassAnswer> {
    return maxWaitMs === 0 ? this.#limiter.takeNow(className, cost) : this.#limiter.tryTake(className, cost, maxWaitMs, signal);
  }

  level(): number {
    return this.#limiter.tokens();
  }

  isIdle(): boolean {
    return this.#limiter.isIdle();
  }

  close(): void {
    this.#limiter.close();
  }
}
