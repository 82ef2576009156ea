import { randomUUID } from "node:crypto";
import type { Clock } from "../core/clock.js";
import { LimitReservation, LimitSet, type LimitSetState, type LimitState } from "../core/limit-set.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";
import { durationMsFromTokens, TokenBucket } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import type { StoredBucket } from "./bucket-math.js";
import { checkKeptClasses, classLevelsOf, type StoredClasses } from "./class-math.js";
import {
  DEFAULT_SLOT_LEASE_MS,
  type LimitLevel,
  matchLimits,
  sameLimits,
  type SetReservation,
  type SetState,
  type SetTakeOptions,
  type SetTakeResult,
} from "./limit-set-store.js";

/**
 * A key's set as the memory and SQLite stores keep it: the limits, the
 * core LimitSet's state, and who holds each concurrency limit's slots until
 * when. Every step loads a LimitSet from it, runs the core's step at the
 * store's time and stores the state after, so the stores answer exactly as
 * LimitSet does (the Redis script re-expresses the same steps in Lua).
 */
export interface StoredSet {
  limits: LimitSpec[];
  state: LimitSetState;
  /** For each limit (by index; empty but for concurrency): each holder's id and when its lease ends, in ms. */
  holders: Array<Array<[string, number]>>;
  /** The classes sharing the key's rate, when it has any (class-math.ts). */
  classes?: StoredClasses;
}

/** A clock that stands still: the store's steps all give their time. */
function standingAt(nowMs: number): Clock {
  return { now: () => nowMs, sleep: () => Promise.resolve() };
}

/** A new key's set: buckets full, windows and slots empty. */
export function newSetAt(limits: readonly LimitSpec[], nowMs: number): StoredSet {
  const set = new LimitSet(limits, { clock: standingAt(nowMs) });
  return { limits: set.specs.map((spec) => ({ ...spec })), state: set.state(), holders: limits.map(() => []) };
}

/** The holders whose lease has not ended by `nowMs`. */
function liveHolders(stored: StoredSet, nowMs: number): Array<Array<[string, number]>> {
  return stored.holders.map((list) => list.filter(([, untilMs]) => untilMs > nowMs).map(([id, untilMs]): [string, number] => [id, untilMs]));
}

/** The stored state with each concurrency limit's slots in use counted from its holders. */
function withHolders(limits: readonly LimitSpec[], state: LimitSetState, holders: Array<Array<[string, number]>>): StoredSet {
  const counted = state.limits.map((limit, i): LimitState => (limit.kind === "concurrency" ? { kind: "concurrency", inUse: holders[i]!.length } : limit));
  return { limits: limits.map((spec) => ({ ...spec })), state: { lastMs: state.lastMs, limits: counted }, holders };
}

/** The LimitSet standing at the stored state, with the holders still alive at `nowMs`. */
function setAt(stored: StoredSet, nowMs: number): { set: LimitSet; holders: Array<Array<[string, number]>> } {
  const holders = liveHolders(stored, nowMs);
  const { state } = withHolders(stored.limits, stored.state, holders);
  return { set: new LimitSet(stored.limits, { clock: standingAt(nowMs), state }), holders };
}

/**
 * The reservation as the stored set's LimitSet knows it: its amounts moved
 * to the limits they were taken from (matchLimits), nothing for a limit new
 * since; and for each of the stored limits the index in `reservation`.
 */
function reservationFor(limits: readonly LimitSpec[], reservation: SetReservation): { core: LimitReservation; from: number[] } {
  const from = sameLimits(reservation.limits, limits) ? limits.map((_, i) => i) : matchLimits(reservation.limits, limits);
  const pick = (values: number[]) => Float64Array.from(from, (j) => (j < 0 ? 0 : values[j]!));
  const core = new LimitReservation(
    true,
    reservation.timeToActMs,
    0,
    [],
    false,
    pick(reservation.amounts),
    pick(reservation.bucketRates),
    pick(reservation.bucketTaken),
    pick(reservation.bucketLevels),
  );
  return { core, from };
}

/** Reserve the item's costs at `nowMs`: the answer, and the set to store (undefined: unchanged). */
export function takeSetAt(stored: StoredSet, nowMs: number, costs: Costs, options: SetTakeOptions = {}): { result: SetTakeResult; next: StoredSet | undefined } {
  const { set, holders } = setAt(stored, nowMs);
  const taken = set.reserveAt(nowMs, costs, options.maxWaitMs ?? Infinity);
  const limits = stored.limits.map((spec) => ({ ...spec }));
  if (!taken.ok) {
    return { result: { ok: false, waitMs: Infinity, timeToActMs: Infinity, limitedBy: [...taken.limitedBy], noSlot: taken.noSlot, limits }, next: undefined };
  }
  const reservation: SetReservation = {
    timeToActMs: taken.timeToActMs,
    limits,
    amounts: Array.from(taken.amounts),
    bucketRates: Array.from(taken.bucketRates),
    bucketTaken: Array.from(taken.bucketTaken),
    bucketLevels: Array.from(taken.bucketLevels),
  };
  if (stored.limits.some((spec) => spec.kind === "concurrency")) {
    const holder = options.holder ?? randomUUID();
    reservation.holder = holder;
    const untilMs = slotLeaseEnd(nowMs, taken.timeToActMs, options.leaseMs);
    stored.limits.forEach((spec, i) => {
      // A holder named again holds one slot, as in Redis's sorted set: its lease is the new one.
      if (spec.kind === "concurrency") holders[i] = [...holders[i]!.filter(([id]) => id !== holder), [holder, untilMs]];
    });
  }
  const result: SetTakeResult = { ok: true, waitMs: taken.waitMs, timeToActMs: taken.timeToActMs, limitedBy: [...taken.limitedBy], noSlot: false, reservation, limits };
  return { result, next: withHolders(stored.limits, set.state(), holders) };
}

/** When a slot taken at `nowMs` for an item acting at `timeToActMs` is given back unless renewed. */
export function slotLeaseEnd(nowMs: number, timeToActMs: number, leaseMs = DEFAULT_SLOT_LEASE_MS): number {
  return (Number.isFinite(timeToActMs) && timeToActMs > nowMs ? timeToActMs : nowMs) + leaseMs;
}

/** Cancels a reservation at `nowMs` (LimitSet.cancelAt), its slots freed: the set to store. */
export function cancelSetAt(stored: StoredSet, nowMs: number, reservation: SetReservation): StoredSet {
  const { set, holders } = setAt(stored, nowMs);
  set.cancelAt(nowMs, reservationFor(stored.limits, reservation).core);
  return withHolders(stored.limits, set.state(), withoutHolder(holders, reservation.holder).holders);
}

/** Settles a reservation at `nowMs` (LimitSet.settleAt): the reservation as corrected, and the set to store. */
export function settleSetAt(stored: StoredSet, nowMs: number, reservation: SetReservation, actualCosts: Costs): { reservation: SetReservation; next: StoredSet } {
  const { set, holders } = setAt(stored, nowMs);
  const { core, from } = reservationFor(stored.limits, reservation);
  set.settleAt(nowMs, core, actualCosts);
  const settled: SetReservation = {
    ...reservation,
    amounts: [...reservation.amounts],
    bucketTaken: [...reservation.bucketTaken],
    bucketLevels: [...reservation.bucketLevels],
  };
  from.forEach((j, i) => {
    if (j < 0) return;
    settled.amounts[j] = core.amounts[i]!;
    settled.bucketTaken[j] = core.bucketTaken[i]!;
    settled.bucketLevels[j] = core.bucketLevels[i]!;
  });
  return { reservation: settled, next: withHolders(stored.limits, set.state(), holders) };
}

/** Frees a reservation's slots: whether it held any still, and the set to store (undefined: unchanged). */
export function releaseSetAt(stored: StoredSet, nowMs: number, reservation: SetReservation): { released: boolean; next: StoredSet | undefined } {
  const { holders, found } = withoutHolder(liveHolders(stored, nowMs), reservation.holder);
  return found ? { released: true, next: withHolders(stored.limits, stored.state, holders) } : { released: false, next: undefined };
}

/** Holds a reservation's slots `leaseMs` from `nowMs`: whether it held any still, and the set to store. */
export function renewSetAt(stored: StoredSet, nowMs: number, reservation: SetReservation, leaseMs = DEFAULT_SLOT_LEASE_MS): { renewed: boolean; next: StoredSet | undefined } {
  const holders = liveHolders(stored, nowMs);
  let renewed = false;
  for (const list of holders) {
    for (const entry of list) {
      if (entry[0] !== reservation.holder) continue;
      entry[1] = nowMs + leaseMs;
      renewed = true;
    }
  }
  return renewed ? { renewed, next: withHolders(stored.limits, stored.state, holders) } : { renewed, next: undefined };
}

function withoutHolder(holders: Array<Array<[string, number]>>, holder: string | undefined): { holders: Array<Array<[string, number]>>; found: boolean } {
  let found = false;
  const kept = holders.map((list) =>
    list.filter(([id]) => {
      if (id !== holder) return true;
      found = true;
      return false;
    }),
  );
  return { holders: kept, found };
}

/**
 * Changes a key's set at `nowMs`, keeping each matched limit's state
 * (matchLimits): a bucket as TokenBucket's setRateAt and setBurstAt do, a
 * window its records, a concurrency limit its holders. A new key, and a
 * limit new to it, start afresh.
 */
export function configureSetAt(stored: StoredSet | undefined, nowMs: number, limits: readonly LimitSpec[]): StoredSet {
  const fresh = newSetAt(limits, nowMs);
  if (!stored) return fresh;
  const match = matchLimits(stored.limits, limits);
  const holders = liveHolders(stored, nowMs);
  const kept = limits.map((spec, i): LimitState => {
    const j = match[i]!;
    const old = stored.state.limits[j];
    if (j < 0 || old === undefined) return fresh.state.limits[i]!;
    if (spec.kind === "bucket" && old.kind === "bucket") {
      const before = stored.limits[j] as typeof spec;
      const bucket = new TokenBucket({ rate: before.rate, burst: before.burst, state: old });
      bucket.setRateAt(nowMs, spec.rate);
      bucket.setBurstAt(nowMs, spec.burst);
      return { kind: "bucket", ...bucket.state() };
    }
    return old;
  });
  const keptHolders = limits.map((_, i) => (match[i]! >= 0 ? holders[match[i]!]! : []));
  const next = withHolders(limits, { lastMs: Math.max(stored.state.lastMs, nowMs), limits: kept }, keptHolders);
  if (!stored.classes) return next;
  // The classes stay, and must fit the new limits (a lower rate below their guarantees is refused).
  const withClasses = { ...next, classes: stored.classes };
  checkKeptClasses(withClasses);
  return withClasses;
}

/** Each limit and its level at `nowMs`, read without changing anything. */
export function setStateOf(key: string, stored: StoredSet, nowMs: number, expiresWhenFull = false): SetState {
  const { set } = setAt(stored, nowMs);
  const limits = stored.limits.map((spec, i): LimitLevel => ({ ...spec, level: set.levelAt(nowMs, i) }));
  const state: SetState = { key, limits, updatedAtMs: stored.state.lastMs };
  if (expiresWhenFull) state.expiresWhenFull = true;
  const classes = classLevelsOf(stored, nowMs);
  if (classes) state.classes = classes;
  return state;
}

/**
 * When the key is as a new one would be (every bucket full, every window
 * empty, no slot held), if nothing is taken meanwhile: a key made with
 * `expireWhenFull` may be forgotten from then on. Infinity for never (a
 * bucket paused below full).
 */
export function fullAtMs(stored: StoredSet): number {
  let atMs = stored.state.lastMs;
  stored.state.limits.forEach((limit, i) => {
    const spec = stored.limits[i]!;
    if (limit.kind === "bucket" && spec.kind === "bucket") {
      if (spec.rate !== Infinity && limit.tokens < spec.burst) atMs = Math.max(atMs, spec.rate === 0 ? Infinity : limit.lastMs + ((spec.burst - limit.tokens) / spec.rate) * 1000);
    } else if (limit.kind === "window" && spec.kind === "window") {
      if (limit.times.length > 0) atMs = Math.max(atMs, limit.times[limit.times.length - 1]! + spec.windowMs);
    } else {
      for (const [, untilMs] of stored.holders[i]!) atMs = Math.max(atMs, untilMs);
    }
  });
  return atMs;
}

/** A key stored as one bucket (by a release before limit sets, or since) as a set of one. */
export function setOfBucket(bucket: StoredBucket): StoredSet {
  const tokens = Math.min(bucket.tokens, bucket.burst);
  // The bucket's debt stands for the reservations due until it is repaid, as TokenBucket takes a stored level.
  const lastEventMs = bucket.lastMs + (tokens < 0 ? durationMsFromTokens(-tokens, bucket.rate) : 0);
  return {
    limits: [{ kind: "bucket", unit: bucket.kind, rate: bucket.rate, burst: bucket.burst }],
    state: { lastMs: bucket.lastMs, limits: [{ kind: "bucket", tokens, lastMs: bucket.lastMs, lastEventMs }] },
    holders: [[]],
  };
}

const RATE_KINDS: readonly RateKind[] = ["bytes", "count"];

/** The one bucket a set stands for when it is one bucket counting bytes or counts, and has no classes (stored as BucketStore keeps it); undefined otherwise. */
export function bucketOfSet(stored: StoredSet): StoredBucket | undefined {
  if (stored.classes) return undefined;
  const [spec, ...others] = stored.limits;
  const limit = stored.state.limits[0];
  if (others.length > 0 || spec?.kind !== "bucket" || limit?.kind !== "bucket") return undefined;
  const kind = RATE_KINDS.find((rateKind) => rateKind === spec.unit);
  if (kind === undefined) return undefined;
  const bucket = new TokenBucket({ rate: spec.rate, burst: spec.burst, state: limit });
  const lastMs = stored.state.lastMs;
  return { rate: spec.rate, burst: spec.burst, kind, tokens: bucket.tokensAt(lastMs), lastMs };
}
