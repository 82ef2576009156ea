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
import { checkLimitSpecs, type Costs, type LimitSpec } from "../core/limit-spec.js";
import {
  checkLease,
  checkSetReservation,
  checkSetTake,
  heldAsSetError,
  type LimitSetStore,
  type SetReservation,
  type SetState,
  type SetTakeOptions,
  type SetTakeResult,
} from "./limit-set-store.js";
import {
  bucketOfSet,
  cancelSetAt,
  configureSetAt,
  releaseSetAt,
  renewSetAt,
  setOfBucket,
  setStateOf,
  settleSetAt,
  type StoredSet,
  takeSetAt,
} from "./set-math.js";
import type { StoreBackend } from "./store-backend.js";
import type { ClassSpec } from "../core/class-spec.js";
import { classesError, type ClassTakeResult, configureClassesAt, takeClassAt } from "./class-math.js";
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
export class MemoryStore implements BucketStore, LimitSetStore {
  readonly url = "memory:";
  readonly #clock: Clock;
  readonly #buckets = new Map<string, StoredBucket>();
  /** Keys of any other set than one bucket counting bytes or counts; a key is in one map or the other. */
  readonly #sets = new Map<string, StoredSet>();
  /** Keys made with `expireWhenFull`: marked, never swept (the map goes with the process). */
  readonly #implicit = new Set<string>();

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? wallClock;
  }

  async take(key: string, n: number, options?: TakeOptions): Promise<TakeResult | undefined> {
    checkTake(n, options);
    const stored = this.#bucket(key);
    if (!stored) return undefined;
    const { result, next } = takeAt(stored, this.#clock.now(), n, options);
    if (next) this.#buckets.set(key, next);
    return result;
  }

  async cancel(key: string, reservation: StoreReservation): Promise<number | undefined> {
    checkCancel(reservation);
    const stored = this.#bucket(key);
    if (!stored) return undefined;
    const { restored, next } = cancelAt(stored, this.#clock.now(), reservation);
    if (next) this.#buckets.set(key, next);
    return restored;
  }

  async read(key: string): Promise<BucketState | undefined> {
    const stored = this.#bucket(key);
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
    this.#sets.delete(key);
    return stateOf(key, next, nowMs, this.#implicit.has(key));
  }

  async list(): Promise<BucketState[]> {
    const nowMs = this.#clock.now();
    return [...this.#buckets.keys()].sort().map((key) => stateOf(key, this.#buckets.get(key)!, nowMs, this.#implicit.has(key)));
  }

  async delete(key: string): Promise<boolean> {
    this.#implicit.delete(key);
    const set = this.#sets.delete(key);
    return this.#buckets.delete(key) || set;
  }

  /** The key's bucket; a key of another set is refused. */
  #bucket(key: string): StoredBucket | undefined {
    const set = this.#sets.get(key);
    if (set) throw set.classes ? classesError(this.url, key, set.classes.specs.map((c) => c.name)) : heldAsSetError(this.url, key, set.limits.length);
    return this.#buckets.get(key);
  }

  /** The key's set, a one-bucket key as a set of one. */
  #set(key: string): StoredSet | undefined {
    const bucket = this.#buckets.get(key);
    return bucket ? setOfBucket(bucket) : this.#sets.get(key);
  }

  /** Stores the key's set where its shape belongs: one bucket counting bytes or counts as BucketStore keeps it. */
  #store(key: string, next: StoredSet): void {
    const bucket = bucketOfSet(next);
    if (bucket) {
      this.#buckets.set(key, bucket);
      this.#sets.delete(key);
    } else {
      this.#sets.set(key, next);
      this.#buckets.delete(key);
    }
  }

  async configureSet(key: string, limits: readonly LimitSpec[], options?: ConfigureOptions): Promise<SetState> {
    checkLimitSpecs(limits);
    const nowMs = this.#clock.now();
    const existing = this.#set(key);
    const next = configureSetAt(existing, nowMs, limits);
    if (options?.expireWhenFull && (!existing || this.#implicit.has(key))) this.#implicit.add(key);
    else this.#implicit.delete(key);
    this.#store(key, next);
    return setStateOf(key, next, nowMs, this.#implicit.has(key));
  }

  async takeSet(key: string, costs: Costs, options?: SetTakeOptions): Promise<SetTakeResult | undefined> {
    checkSetTake(costs, options);
    const stored = this.#set(key);
    if (!stored) return undefined;
    if (stored.classes) throw classesError(this.url, key, stored.classes.specs.map((c) => c.name));
    const { result, next } = takeSetAt(stored, this.#clock.now(), costs, options);
    if (next) this.#store(key, next);
    return result;
  }

  async configureClasses(key: string, classes: readonly ClassSpec[] | null): Promise<SetState | undefined> {
    const stored = this.#set(key);
    if (!stored) return undefined;
    const nowMs = this.#clock.now();
    const next = configureClassesAt(stored, nowMs, classes);
    this.#store(key, next);
    return setStateOf(key, next, nowMs, this.#implicit.has(key));
  }

  async takeClass(key: string, className: string, costs: Costs): Promise<ClassTakeResult | undefined> {
    checkSetTake(costs, undefined);
    const stored = this.#set(key);
    if (!stored) return undefined;
    const taken = takeClassAt(stored, this.#clock.now(), className, costs);
    if (!taken) throw classesError(this.url, key, undefined);
    this.#store(key, taken.next);
    return taken.result;
  }

  async cancelSet(key: string, reservation: SetReservation): Promise<true | undefined> {
    checkSetReservation(reservation);
    const stored = this.#set(key);
    if (!stored) return undefined;
    this.#store(key, cancelSetAt(stored, this.#clock.now(), reservation));
    return true;
  }

  async settleSet(key: string, reservation: SetReservation, actualCosts: Costs): Promise<SetReservation | undefined> {
    checkSetReservation(reservation);
    checkSetTake(actualCosts, undefined);
    const stored = this.#set(key);
    if (!stored) return undefined;
    const settled = settleSetAt(stored, this.#clock.now(), reservation, actualCosts);
    this.#store(key, settled.next);
    return settled.reservation;
  }

  async releaseSet(key: string, reservation: SetReservation): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    const stored = this.#set(key);
    if (!stored) return undefined;
    const { released, next } = releaseSetAt(stored, this.#clock.now(), reservation);
    if (next) this.#store(key, next);
    return released;
  }

  async renewSet(key: string, reservation: SetReservation, leaseMs?: number): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    checkLease(leaseMs);
    const stored = this.#set(key);
    if (!stored) return undefined;
    const { renewed, next } = renewSetAt(stored, this.#clock.now(), reservation, leaseMs);
    if (next) this.#store(key, next);
    return renewed;
  }

  async readSet(key: string): Promise<SetState | undefined> {
    const stored = this.#set(key);
    return stored && setStateOf(key, stored, this.#clock.now(), this.#implicit.has(key));
  }

  async listSets(): Promise<SetState[]> {
    const nowMs = this.#clock.now();
    return [...new Set([...this.#buckets.keys(), ...this.#sets.keys()])].sort().map((key) => setStateOf(key, this.#set(key)!, nowMs, this.#implicit.has(key)));
  }

  async deleteSet(key: string): Promise<boolean> {
    return this.delete(key);
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
