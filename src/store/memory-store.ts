import { type Clock } from "../core/clock.js";
import {
  type BucketConfig,
  type BucketState,
  type BucketStore,
  checkCancel,
  type ConfigureOptions,
  checkConfig,
  checkTake,
  type StoreReservation,
  type TakeOptions,
  type TakeResult,
} from "./bucket-store.js";
import { cancelAt, configureAt, levelAt, type StoredBucket, takeAt } from "./bucket-math.js";
import type { StoreBackend } from "./store-backend.js";
import { StoreUrlError } from "./store-url-error.js";

/** Wall-clock milliseconds: stores shared between processes need a clock they all read alike. */
export const wallClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/**
 * Buckets in this process's memory: for tests, and for the library user who
 * wants the store contract without a file. Asynchronous like the others, so
 * code written against it behaves the same on SQLite or Redis.
 */
export class MemoryStore implements BucketStore {
  readonly url = "memory:";
  readonly #clock: Clock;
  readonly #buckets = new Map<string, StoredBucket>();
  /** Keys made with `expireWhenFull`: marked, never swept (the map goes with the process). */
  readonly #implicit = new Set<string>();

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? wallClock;
  }

  async take(key: string, n: number, options?: TakeOptions): Promise<TakeResult | undefined> {
    checkTake(n, options);
    const stored = this.#buckets.get(key);
    if (!stored) return undefined;
    const { result, next } = takeAt(stored, this.#clock.now(), n, options);
    if (next) this.#buckets.set(key, next);
    return result;
  }

  async cancel(key: string, reservation: StoreReservation): Promise<number | undefined> {
    checkCancel(reservation);
    const stored = this.#buckets.get(key);
    if (!stored) return undefined;
    const { restored, next } = cancelAt(stored, this.#clock.now(), reservation);
    if (next) this.#buckets.set(key, next);
    return restored;
  }

  async read(key: string): Promise<BucketState | undefined> {
    const stored = this.#buckets.get(key);
    return stored && stateOf(key, stored, this.#clock.now(), this.#implicit.has(key));
  }

  async configure(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState> {
    checkConfig(config);
    const nowMs = this.#clock.now();
    const existing = this.#buckets.get(key);
    const next = configureAt(existing, nowMs, config);
    if (options?.expireWhenFull && (!existing || this.#implicit.has(key))) this.#implicit.add(key);
    else this.#implicit.delete(key);
    this.#buckets.set(key, next);
    return stateOf(key, next, nowMs, this.#implicit.has(key));
  }

  async list(): Promise<BucketState[]> {
    const nowMs = this.#clock.now();
    return [...this.#buckets.keys()].sort().map((key) => stateOf(key, this.#buckets.get(key)!, nowMs, this.#implicit.has(key)));
  }

  async delete(key: string): Promise<boolean> {
    this.#implicit.delete(key);
    return this.#buckets.delete(key);
  }

  async close(): Promise<void> {}
}

/** What `read` and `list` report for a stored record at `nowMs`. */
export function stateOf(key: string, stored: StoredBucket, nowMs: number, expiresWhenFull = false): BucketState {
  const state: BucketState = { key, rate: stored.rate, burst: stored.burst, kind: stored.kind, tokens: levelAt(stored, nowMs), updatedAtMs: stored.lastMs };
  if (expiresWhenFull) state.expiresWhenFull = true;
  return state;
}

/** `memory:`: buckets in this process alone (tests, and the library user who wants no file). */
export const memoryBackend: StoreBackend = {
  type: "memory",
  schemes: ["memory:"],
  examples: [],
  another: "memory:",
  parse(text) {
    if (text !== "memory:") throw new StoreUrlError(text);
    return { type: "memory", url: "memory:" };
  },
  // A new one holds nothing.
  exists: () => false,
  open: async (_location, options) => new MemoryStore({ clock: options.clock }),
};
