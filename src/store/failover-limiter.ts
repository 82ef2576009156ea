import type { Limiter } from "../core/limiter.js";
import type { RateKind } from "../core/units.js";
import { type BucketConfig, StoreError } from "./bucket-store.js";

/** A limiter whose tokens come from a store: it rejects with a StoreError when the store fails. */
export interface StoreBackedLimiter extends Limiter {
  readonly kind: RateKind;
}

/**
 * Called once, on the store's first failure, with the key's settings as last
 * read: returns the limiter to carry on with (a private bucket), or throws to
 * stop (what it throws is what every wait rejects with from then on).
 */
export type FallbackFactory = (error: StoreError, settings: BucketConfig) => Limiter;

/**
 * FailoverLimiter passes every wait to a store-backed limiter until the store
 * fails, then hands over, once and for good, to the limiter `fallback` makes.
 * A wait under way when the store fails is carried on by the fallback, so the
 * caller sees no failure at all; a fallback that throws stops every wait.
 *
 * The store-backed limiter knows nothing of this: it only rejects with the
 * StoreError. A wait aborted by the caller, a request over the burst, or the
 * limiter being closed are not store failures and pass through as they are.
 */
export class FailoverLimiter implements Limiter {
  readonly #primary: StoreBackedLimiter;
  readonly #fallback: FallbackFactory;
  #current: Limiter | undefined;
  #failure: { error: unknown } | undefined;

  constructor(primary: StoreBackedLimiter, fallback: FallbackFactory) {
    this.#primary = primary;
    this.#fallback = fallback;
  }

  get rate(): number {
    return (this.#current ?? this.#primary).rate;
  }

  get burst(): number {
    return (this.#current ?? this.#primary).burst;
  }

  get kind(): RateKind {
    return this.#primary.kind;
  }

  /** True once the store failed and the fallback took over. */
  get failedOver(): boolean {
    return this.#current !== undefined;
  }

  /** The fallback's level once it took over, else the store's as last reported. */
  tokens(): number {
    return (this.#current ?? this.#primary).tokens();
  }

  async wait(n: number, signal?: AbortSignal): Promise<void> {
    const fallback = await this.#attempt(() => this.#primary.wait(n, signal));
    if (fallback) await fallback.wait(n, signal);
  }

  async tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    let granted = false;
    const fallback = await this.#attempt(async () => {
      granted = await this.#primary.tryWait(n, maxWaitMs, signal);
    });
    return fallback ? fallback.tryWait(n, maxWaitMs, signal) : granted;
  }

  /** Runs `operation` on the store-backed limiter while it stands; resolves to the fallback once the store failed. */
  async #attempt(operation: () => Promise<void>): Promise<Limiter | undefined> {
    if (this.#failure) throw this.#failure.error;
    if (this.#current) return this.#current;
    try {
      await operation();
      return undefined;
    } catch (error) {
      if (!(error instanceof StoreError) || error.failure === "closed") throw error;
      return this.#failOver(error);
    }
  }

  /** Several waits may see the failure: the fallback is made once. */
  #failOver(error: StoreError): Limiter {
    if (this.#failure) throw this.#failure.error;
    if (this.#current) return this.#current;
    const primary = this.#primary;
    try {
      this.#current = this.#fallback(error, { rate: primary.rate, burst: primary.burst, kind: primary.kind });
    } catch (stop) {
      this.#failure = { error: stop };
      throw stop;
    }
    return this.#current;
  }
}
