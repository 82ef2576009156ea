import type { ClassSpec } from "../core/class-spec.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";
import type { ClassLevel, ClassTakeResult } from "./class-math.js";
import { type BucketStore, type ConfigureOptions, StoreError } from "./bucket-store.js";

/**
 * A LimitSetStore keeps keys that hold a set of limits (DESIGN section 11):
 * token buckets, sliding windows and concurrency slots, each counting its own
 * unit of an item's costs, shared by every process that names the key.
 *
 * Every operation that changes a key is one atomic step in the store (one
 * SQLite transaction, one Redis script call), on the store's clock, with
 * exactly LimitSet's semantics (src/core/limit-set.ts): a take is all or
 * nothing at the earliest instant every limit admits, first come first
 * served, and names the limits that bound (`limitedBy`); cancel and settle
 * reach every limit that counts the item.
 *
 * It stands beside BucketStore rather than in it, so that what wraps or
 * fakes a BucketStore (StoreWatch, tests) goes on as it is; the memory and
 * SQLite stores are both. A key that holds one bucket counting bytes or
 * counts is the same key for both contracts: BucketStore's `take`, `cancel`,
 * `read` and `list` see it as they always did, and a key a release before
 * limit sets stored reads here as a set of one bucket. A key of any other
 * set is refused by BucketStore's `take`, `cancel` and `read` (a StoreError
 * that says so) and left out of its `list`; BucketStore's `configure` and
 * `delete` replace or remove it.
 */
export interface LimitSetStore {
  /** The store's address as the user wrote it (for messages). */
  readonly url: string;
  /**
   * Creates or changes a key's set. A new key starts with its buckets full,
   * its windows and slots empty. A changed set keeps the state of each limit
   * still in it (matchLimits): a bucket keeps its level (a rate change keeps
   * the tokens gained so far, a lower burst caps it), a window its records,
   * a concurrency limit its holders; a limit new to the set starts afresh.
   */
  configureSet(key: string, limits: readonly LimitSpec[], options?: ConfigureOptions): Promise<SetState>;
  /**
   * Takes an item's costs from every limit of the key's set, at the earliest
   * instant every limit admits it (Reserve), or none (refused: the wait would
   * exceed `maxWaitMs`, a cost can never be admitted, or no slot is free);
   * `maxWaitMs: 0` is Allow. `undefined` when the key is not configured.
   */
  takeSet(key: string, costs: Costs, options?: SetTakeOptions): Promise<SetTakeResult | undefined>;
  /**
   * Gives a reservation back to every limit, as LimitSet.cancelAt does (a
   * bucket by x/time/rate's CancelAt rule, a window forgets the item, both
   * while it is not yet due), and frees its slots. `undefined` when the key
   * is not configured.
   */
  cancelSet(key: string, reservation: SetReservation): Promise<true | undefined>;
  /**
   * Corrects a reservation's costs once known (LimitSet.settleAt): more goes
   * into debt, less is given back, in every limit that counts a unit of
   * `actualCosts`. Resolves to the reservation as corrected (to settle or
   * cancel again); `undefined` when the key is not configured.
   */
  settleSet(key: string, reservation: SetReservation, actualCosts: Costs): Promise<SetReservation | undefined>;
  /** Frees the concurrency slots a reservation holds (the item ended); says whether it held any still. */
  releaseSet(key: string, reservation: SetReservation): Promise<boolean | undefined>;
  /**
   * Keeps a reservation's slots `leaseMs` more from now (a holder alive
   * says so within each lease); says whether it held any still: false once
   * its lease ran out and its slots went back.
   */
  renewSet(key: string, reservation: SetReservation, leaseMs?: number): Promise<boolean | undefined>;
  /**
   * Defines the classes that share the key's rate (design section 12; null:
   * none). A class already defined keeps its state. A ClassDefinitionError
   * for classes that do not fit the key's limits; `undefined` when the key
   * is not configured. A store that keeps no classes has none of this.
   */
  configureClasses?(key: string, classes: readonly ClassSpec[] | null): Promise<SetState | undefined>;
  /**
   * Class `className`'s ask for `costs`, one atomic step for all the
   * processes sharing the key: admitted now, or refused with how long until
   * it could be (ask again then). An UnknownClassError for a class the key
   * does not define, a StoreError ("classes") for a key without classes;
   * `undefined` when the key is not configured. takeSet refuses a key with
   * classes the same way: every take names its class.
   */
  takeClass?(key: string, className: string, costs: Costs): Promise<ClassTakeResult | undefined>;
  /** Each limit of the key's set with its level now, without changing anything; `undefined` when unknown. */
  readSet(key: string): Promise<SetState | undefined>;
  /** Every key, each as a set (a one-bucket key as a set of one), sorted by key. */
  listSets(): Promise<SetState[]>;
  /** Forgets a key and all its limits' state; says whether it existed. */
  deleteSet(key: string): Promise<boolean>;
}

/** Whether a store keeps limit sets: the memory and SQLite stores do; Redis's is wired in next. */
export function isLimitSetStore(store: BucketStore | LimitSetStore): store is BucketStore & LimitSetStore {
  return typeof (store as Partial<LimitSetStore>).takeSet === "function";
}

/** How long a concurrency slot is held without a renewal: a holder that dies gives its slot back within this. */
export const DEFAULT_SLOT_LEASE_MS = 30_000;

export interface SetTakeOptions {
  /** Refuse, changing nothing, when the wait would be longer; 0 is Allow. */
  maxWaitMs?: number;
  /** Who holds the slots taken (concurrency limits), unique per item; made up when not given. */
  holder?: string;
  /** How long the slots are held past the item's time to act without a renewal (DEFAULT_SLOT_LEASE_MS). */
  leaseMs?: number;
}

export interface SetTakeResult {
  /** False when nothing was taken. */
  ok: boolean;
  /** How long after the take the item may act; Infinity when not ok, and when owed at a rate of 0. */
  waitMs: number;
  /** When it may act, in ms on the store's clock; Infinity when `waitMs` is. */
  timeToActMs: number;
  /** The limits, numbered from 1, that refused the item or set its wait. */
  limitedBy: number[];
  /** True when refused because a concurrency limit had no free slot (a caller that waits asks again once one is released). */
  noSlot: boolean;
  /** What to give back with cancelSet, settleSet and releaseSet; set when ok. */
  reservation?: SetReservation;
  /** The key's set at the take, so that callers follow live changes. */
  limits: LimitSpec[];
}

/**
 * What a take took, as plain data, for cancelSet, settleSet and releaseSet:
 * LimitReservation's fields, and the set they index (a set changed since is
 * matched limit by limit, as configureSet keeps state).
 */
export interface SetReservation {
  timeToActMs: number;
  limits: LimitSpec[];
  /** What each limit took, by index (a slot for concurrency). */
  amounts: number[];
  /** For buckets: the rate at the take, how far the level went down, and the level the take left at `timeToActMs`. */
  bucketRates: number[];
  bucketTaken: number[];
  bucketLevels: number[];
  /** Who holds its slots, when the set has a concurrency limit. */
  holder?: string;
}

/** A limit and its level now: a bucket's tokens, a window's room left, a concurrency limit's free slots. */
export type LimitLevel = LimitSpec & { level: number };

/** The limit without its level: what a key's set is, as configureSet takes it. */
export function specOf({ level: _level, ...spec }: LimitLevel): LimitSpec {
  return spec as LimitSpec;
}

/** What readSet and listSets report of a key (`key show --json`'s `limits`). */
export interface SetState {
  key: string;
  limits: LimitLevel[];
  /** When the key was last changed, in ms since the epoch on the store's clock. */
  updatedAtMs: number;
  /** Set when the key was made with `expireWhenFull` and may be forgotten once full. */
  expiresWhenFull?: true;
  /** The classes sharing the key's rate, with their use, when it has any. */
  classes?: ClassLevel[];
}

/** Checks a take's arguments the same way in every store. */
export function checkSetTake(costs: Costs, options: SetTakeOptions | undefined): void {
  if (typeof costs !== "object" || costs === null) throw new RangeError(`Expected \`costs\` to be an object of costs by unit, got \`${String(costs)}\``);
  for (const [unit, cost] of Object.entries(costs)) {
    if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) {
      throw new RangeError(`Expected \`${unit}\` cost to be a non-negative finite number, got \`${String(cost)}\` (${typeof cost})`);
    }
  }
  const maxWaitMs = options?.maxWaitMs;
  if (maxWaitMs !== undefined && (typeof maxWaitMs !== "number" || Number.isNaN(maxWaitMs) || maxWaitMs < 0)) {
    throw new RangeError(`Expected \`maxWaitMs\` to be a non-negative number or Infinity, got \`${String(maxWaitMs)}\``);
  }
  checkLease(options?.leaseMs);
}

export function checkLease(leaseMs: number | undefined): void {
  if (leaseMs !== undefined && (typeof leaseMs !== "number" || !Number.isFinite(leaseMs) || leaseMs <= 0)) {
    throw new RangeError(`Expected \`leaseMs\` to be a positive finite number of milliseconds, got \`${String(leaseMs)}\``);
  }
}

/** Checks a reservation handed back, the same way in every store. */
export function checkSetReservation(reservation: SetReservation): void {
  const { timeToActMs, limits, amounts, bucketRates, bucketTaken, bucketLevels } = reservation ?? ({} as SetReservation);
  const count = Array.isArray(limits) ? limits.length : -1;
  const sized = (array: unknown) => Array.isArray(array) && array.length === count;
  if (typeof timeToActMs !== "number" || Number.isNaN(timeToActMs) || count < 1 || ![amounts, bucketRates, bucketTaken, bucketLevels].every(sized)) {
    throw new RangeError("Expected a reservation as takeSet answered it: `timeToActMs`, `limits`, and `amounts`, `bucketRates`, `bucketTaken`, `bucketLevels` one per limit");
  }
}

/**
 * Which limit of `from` each limit of `to` goes on from (its index), or -1
 * for a new one: first the same limit exactly, then one of the same kind
 * counting the same unit (a bucket whose rate or burst changed, a window
 * whose n or length did), each limit of `from` at most once, in order. How
 * configureSet keeps state, and how a reservation made before a change
 * finds its limits.
 */
export function matchLimits(from: readonly LimitSpec[], to: readonly LimitSpec[]): number[] {
  const used = new Array<boolean>(from.length).fill(false);
  const match = new Array<number>(to.length).fill(-1);
  const pass = (same: (a: LimitSpec, b: LimitSpec) => boolean) => {
    to.forEach((spec, i) => {
      if (match[i] !== -1) return;
      const j = from.findIndex((candidate, index) => !used[index] && same(candidate, spec));
      if (j === -1) return;
      match[i] = j;
      used[j] = true;
    });
  };
  pass((a, b) => sameLimit(a, b));
  pass((a, b) => a.kind === b.kind && (a.kind === "concurrency" || a.unit === (b as typeof a).unit));
  return match;
}

/** Whether two specs are the same limit. */
export function sameLimit(a: LimitSpec, b: LimitSpec): boolean {
  if (a.kind === "bucket" && b.kind === "bucket") return a.unit === b.unit && a.rate === b.rate && a.burst === b.burst;
  if (a.kind === "window" && b.kind === "window") return a.unit === b.unit && a.n === b.n && a.windowMs === b.windowMs;
  return a.kind === "concurrency" && b.kind === "concurrency" && a.n === b.n;
}

/** Whether two sets are the same limits in the same order. */
export function sameLimits(a: readonly LimitSpec[], b: readonly LimitSpec[]): boolean {
  return a.length === b.length && a.every((spec, i) => sameLimit(spec, b[i]!));
}

/** What BucketStore's take, cancel and read say of a key that holds a set other than one bucket. */
export function heldAsSetError(storeUrl: string, key: string, limits: number): StoreError {
  return new StoreError("holds-a-set", `store ${storeUrl}: key ${key} holds a set of ${limits} limits, not one bucket; take from it as a set, or set it again with one rate`, {
    storeUrl,
    key,
  });
}
