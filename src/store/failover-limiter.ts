import { type Clock, systemClock } from "../core/clock.js";
import type { Costs } from "../core/limit-spec.js";
import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import { type BucketConfig, StoreError } from "./bucket-store.js";
import { isStoreFailure, type StoreOutage, type StoreWatch } from "./store-watch.js";

/** A limiter whose tokens come from a store: it rejects with a StoreError when the store fails. */
export interface StoreBackedLimiter extends Limiter {
  readonly kind: RateKind;
  /** Gives back what it holds (a lease not yet due) and stops its timers. */
  close(): Promise<void>;
}

/**
 * What a key's waits do while its store is lost:
 * - `fail`: reject at once with the store's failure (an HTTP server's 503);
 * - `wait`: wait for the store's return, up to `timeoutMs` after it was lost,
 *   then reject with what `giveUp` makes (a pipe or a run: no data moves meanwhile);
 * - `local`: take from a private bucket of the key's settings;
 * - `open`: let every wait through at once.
 */
export type WhileLost =
  | { mode: "fail" }
  | { mode: "wait"; timeoutMs: number; giveUp: (error: StoreError, lostForMs: number) => unknown }
  | { mode: "local" }
  | { mode: "open" };

export interface FailoverLimiterOptions {
  /** The store the key lives in: whether it is lost is the watch's business, shared by every key. */
  watch: StoreWatch;
  key: string;
  /**
   * The key's settings: what a private bucket gets, and what the key is made
   * with should the store come back without it. Kept up to date from the
   * store-backed limiter while it runs.
   */
  settings: BucketConfig;
  /** The key's limiter on the store, when it could be opened; without it, it is opened once the store answers. */
  primary?: StoreBackedLimiter;
  /** Opens the key's limiter on the store again (after an outage), making the key with `settings` if the store lacks it. */
  reopen: (settings: BucketConfig) => Promise<StoreBackedLimiter>;
  whileLost: WhileLost;
  /** What a failure of the key itself (deleted while in use, its classes dropped) is thrown as; by default the StoreError. */
  keyFailure?: (error: StoreError) => unknown;
  /**
   * The private limiter of an outage (`local`), `full` for a key first met
   * while the store was lost; by default a TokenBucket of `settings`. A key
   * holding a set of limits gets a private set of them.
   */
  makePrivate?: (settings: BucketConfig, full: boolean) => Limiter;
  /** For private buckets and the wait's time limit: the watch's clock. */
  clock?: Clock;
}

/**
 * FailoverLimiter is a key's bucket that outlives its store's outages. While
 * the store answers, every wait goes to the store-backed limiter; when the
 * store fails, what the waits do is `whileLost`'s, and a wait under way is
 * carried on so that its caller sees no failure (unless the mode is to fail).
 * Once the watch finds the store again, the next wait opens the key afresh on
 * it (the store may have restarted empty, or the old limiter may have failed)
 * and the waits are shared again.
 *
 * A private bucket is made once per outage: empty when the key was in use
 * (its shared bucket may just have been drained, so the switch grants no extra
 * burst), full for a key first met while the store was lost, as a new bucket
 * is. A wait aborted by the caller, a request over the burst, the key deleted
 * from the store and the limiter being closed are not outages and pass through.
 */
export class FailoverLimiter implements Limiter {
  readonly key: string;
  readonly #watch: StoreWatch;
  readonly #reopen: (settings: BucketConfig) => Promise<StoreBackedLimiter>;
  readonly #whileLost: WhileLost;
  readonly #keyFailure: ((error: StoreError) => unknown) | undefined;
  readonly #clock: Clock;
  #settings: BucketConfig;
  #primary: StoreBackedLimiter | undefined;
  #reopening: Promise<StoreBackedLimiter | StoreError> | undefined;
  /** The private bucket of an outage, with the outage it is for. */
  #private: { outage: StoreOutage; bucket: Limiter } | undefined;
  readonly #makePrivate: (settings: BucketConfig, full: boolean) => Limiter;
  /** Whether the key ever took from the store: a private bucket then starts empty. */
  #used: boolean;
  readonly #closing = new AbortController();

  constructor(options: FailoverLimiterOptions) {
    this.key = options.key;
    this.#watch = options.watch;
    this.#reopen = options.reopen;
    this.#whileLost = options.whileLost;
    this.#keyFailure = options.keyFailure;
    this.#clock = options.clock ?? systemClock;
    this.#settings = options.settings;
    this.#makePrivate =
      options.makePrivate ?? ((settings, full) => new TokenBucket({ rate: settings.rate, burst: settings.burst, tokens: full ? settings.burst : 0, clock: this.#clock }));
    this.#primary = options.primary;
    this.#used = options.primary !== undefined;
  }

  get rate(): number {
    return this.#current().rate;
  }

  get burst(): number {
    return this.#current().burst;
  }

  get kind(): RateKind {
    return this.#primary?.kind ?? this.#settings.kind;
  }

  /** True while the store is lost and a private bucket serves the waits. */
  get failedOver(): boolean {
    return this.#watch.lost !== undefined && this.#private?.outage === this.#watch.lost;
  }

  /** The private bucket's level while it serves, else the store's as last reported (the settings' burst before any). */
  tokens(): number {
    const current = this.#current();
    return current === this.#settings ? this.#settings.burst : (current as Limiter).tokens();
  }

  wait(n: number, signal?: AbortSignal, costs?: Costs): Promise<void> {
    return this.#decide((limiter) => limiter.wait(n, signal, costs), undefined, signal);
  }

  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<boolean> {
    return this.#decide((limiter) => limiter.tryWait(n, maxWaitMs, signal, costs), true, signal);
  }

  /**
   * Runs `operation` on the limiter that serves now (the store's, or the
   * private one of an outage), as wait and tryWait do: carried across an
   * outage as `whileLost` says; `admitted` is the answer while the store is
   * lost in `open` mode. For what a key's own limiter offers beyond Limiter
   * (a set's concurrency slots).
   */
  run<T>(operation: (limiter: Limiter) => Promise<T>, admitted: T, signal?: AbortSignal): Promise<T> {
    return this.#decide(operation, admitted, signal);
  }

  /** Gives back what the store-backed limiter holds; waits still waiting for the store reject. */
  async close(): Promise<void> {
    this.#closing.abort();
    const primary = this.#primary;
    this.#primary = undefined;
    await primary?.close();
  }

  /** The limiter whose settings stand now: the private bucket while it serves, else the store's, else the settings. */
  #current(): Limiter | BucketConfig {
    if (this.failedOver) return this.#private!.bucket;
    return this.#primary ?? this.#settings;
  }

  /** While the store answers, straight to the key's limiter (one promise more, not #run's loop: every request of a server comes this way); else #run. */
  #decide<T>(operation: (limiter: Limiter) => Promise<T>, admitted: T, signal: AbortSignal | undefined): Promise<T> {
    const primary = this.#primary;
    if (!primary || this.#watch.lost || this.#closing.signal.aborted) return this.#run(operation, admitted, signal);
    this.#used = true;
    return operation(primary).catch((error: unknown) => this.#recover(error, primary, operation, admitted, signal));
  }

  async #run<T>(operation: (limiter: Limiter) => Promise<T>, admitted: T, signal: AbortSignal | undefined): Promise<T> {
    for (;;) {
      this.#throwIfClosed();
      const outage = this.#watch.lost;
      if (!outage) {
        const primary = this.#primary ?? (await this.#open());
        if (primary instanceof StoreError) {
          this.#throwUnlessLost(primary);
          continue;
        }
        try {
          this.#used = true;
          return await operation(primary);
        } catch (error) {
          this.#dropOnStoreFailure(error, primary, signal);
          continue;
        }
      }
      switch (this.#whileLost.mode) {
        case "fail":
          throw outage.error;
        case "open":
          signal?.throwIfAborted();
          return admitted;
        case "local":
          return operation(this.#privateBucket(outage));
        case "wait": {
          const { timeoutMs, giveUp } = this.#whileLost;
          if (!(await this.#whenBack(outage.sinceMs + timeoutMs, signal))) throw giveUp(outage.error, this.#clock.now() - outage.sinceMs);
        }
      }
    }
  }

  /** After the operation on `primary` failed: the failure thrown, or, a store's while it is lost, carried on as `whileLost` says. */
  async #recover<T>(error: unknown, primary: StoreBackedLimiter, operation: (limiter: Limiter) => Promise<T>, admitted: T, signal: AbortSignal | undefined): Promise<T> {
    this.#dropOnStoreFailure(error, primary, signal);
    return this.#run(operation, admitted, signal);
  }

  /** Throws what is not the store's failure (or what the caller gave up); drops `primary`, stopped on a store's failure. */
  #dropOnStoreFailure(error: unknown, primary: StoreBackedLimiter, signal: AbortSignal | undefined): void {
    // The key itself changed under the taker (deleted, its classes dropped): said as the program says it.
    if (error instanceof StoreError && (error.failure === "deleted" || error.failure === "classes") && this.#keyFailure) throw this.#keyFailure(error);
    if (!isStoreFailure(error) || signal?.aborted) throw error;
    // This limiter has stopped on the failure: the key is opened afresh once the store answers.
    this.#drop(primary);
    this.#throwUnlessLost(error);
  }

  /**
   * A store failure that the watch did not take for an outage (it was stopped,
   * its owner closing) is this wait's: thrown, rather than asked again at once.
   */
  #throwUnlessLost(error: StoreError): void {
    if (!this.#watch.lost) throw error;
  }

  /** Opens the key on the store, once for every wait that asks; the failure when the store failed again meanwhile. */
  #open(): Promise<StoreBackedLimiter | StoreError> {
    this.#reopening ??= (async () => {
      try {
        const primary = await this.#reopen(this.#settings);
        if (this.#closing.signal.aborted) {
          await primary.close().catch(() => {});
          this.#throwIfClosed();
        }
        this.#primary = primary;
        return primary;
      } catch (error) {
        if (isStoreFailure(error)) return error;
        throw error;
      } finally {
        this.#reopening = undefined;
      }
    })();
    return this.#reopening;
  }

  #drop(primary: StoreBackedLimiter): void {
    if (this.#primary !== primary) return;
    this.#settings = { rate: primary.rate, burst: primary.burst, kind: primary.kind };
    this.#primary = undefined;
    void primary.close().catch(() => {});
  }

  #privateBucket(outage: StoreOutage): Limiter {
    if (this.#private?.outage === outage) return this.#private.bucket;
    if (this.#primary) this.#settings = { rate: this.#primary.rate, burst: this.#primary.burst, kind: this.#primary.kind };
    const bucket = this.#makePrivate(this.#settings, !this.#used);
    this.#private = { outage, bucket };
    return bucket;
  }

  /** Waits for the store's return until `untilMs`; the caller's signal or the limiter closing ends it early. */
  async #whenBack(untilMs: number, signal: AbortSignal | undefined): Promise<boolean> {
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    this.#closing.signal.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted || this.#closing.signal.aborted) onAbort();
    try {
      return await this.#watch.whenBack(untilMs, stop.signal);
    } catch (error) {
      this.#throwIfClosed();
      throw error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#closing.signal.removeEventListener("abort", onAbort);
    }
  }

  #throwIfClosed(): void {
    if (this.#closing.signal.aborted) {
      throw new StoreError("closed", `key "${this.key}": the limiter was closed while waiting`, { storeUrl: this.#watch.url, key: this.key });
    }
  }
}
