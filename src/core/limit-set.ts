import { type Clock, systemClock } from "./clock.js";
import { checkLimitSpecs, type CostUnit, type Costs, type LimitSpec } from "./limit-spec.js";
import { SlidingWindow, type SlidingWindowState } from "./sliding-window.js";
import { TokenBucket, type TokenBucketState } from "./token-bucket.js";

const BUCKET = 0;
const WINDOW = 1;
const CONCURRENCY = 2;

/**
 * The answer to `LimitSet.reserveAt`, and what `cancelAt`, `settleAt` and
 * `releaseAt` need to give back: the amount each limit took (its unit's cost;
 * a slot for concurrency), and for buckets the rate at the take and the level
 * the take left at the item's time. When `ok` is false nothing was taken.
 */
export class LimitReservation {
  /** Set once the reservation was cancelled: a second cancel or a settle does nothing. */
  cancelled = false;
  /** Set once its concurrency slots were given back. */
  released = false;

  constructor(
    readonly ok: boolean,
    /** When the item may act (the instant every limit admits it); Infinity when refused, or owed at a rate of 0. */
    readonly timeToActMs: number,
    /** How long after the reservation was made the item may act. */
    readonly waitMs: number,
    /** The limits, numbered from 1, that refused it or set its wait. */
    readonly limitedBy: readonly number[],
    /** True when refused because a concurrency limit had no free slot (an async layer then waits for a release). */
    readonly noSlot: boolean,
    /** What each limit took, by index; corrected by `settleAt`. */
    readonly amounts: Float64Array,
    /**
     * For a bucket: its rate at the take (cancelling gives back at this rate),
     * how far its level went down (the cost, and what its cap will cut off
     * while the item waits for another limit), and its level just after the
     * take, at `timeToActMs`.
     */
    readonly bucketRates: Float64Array,
    readonly bucketTaken: Float64Array,
    readonly bucketLevels: Float64Array,
  ) {}

  /** How long after `nowMs` the item may act: 0 to act at once, Infinity when not ok. */
  delayFrom(nowMs: number): number {
    if (!this.ok) return Infinity;
    return Math.max(0, this.timeToActMs - nowMs);
  }
}

const NO_AMOUNTS = new Float64Array(0);

/** One limit's state: a bucket's level and times, a window's records, the slots a concurrency limit has in use. */
export type LimitState = ({ kind: "bucket" } & TokenBucketState) | ({ kind: "window" } & SlidingWindowState) | { kind: "concurrency"; inUse: number };

/**
 * Everything a LimitSet holds besides its specs, as plain data: what a store
 * keeps for a key between steps (`state()`, and the constructor's `state`).
 */
export interface LimitSetState {
  /** The latest time anything was taken, given back or corrected: earlier times are clamped to it. */
  lastMs: number;
  /** Each limit's state, in the order of the specs. */
  limits: LimitState[];
}

/**
 * LimitSet admits items against several limits at once, each counting its
 * own unit of the item's costs: token buckets (x/time/rate, `TokenBucket`),
 * sliding windows (`SlidingWindow`) and concurrency slots. It is one key's
 * set (or a private one); a store keeps the same state and runs the same
 * steps in one transaction.
 *
 * Two ways to consume, with their `...At(nowMs)` twins as everywhere in the
 * core (the short forms read the injected clock):
 * - `allowAt(nowMs, costs)`: every limit admits the item at `nowMs`, and then
 *   each takes its cost; or none is touched and the answer is no. Use it to
 *   drop or refuse work.
 * - `reserveAt(nowMs, costs, maxWaitMs)`: the earliest instant t >= nowMs at
 *   which every limit admits, given all that was taken and reserved before
 *   (first come, first served for the whole set: a small item does not
 *   overtake a large one waiting); each limit takes at t, a bucket what it
 *   would hold at t (so waiting for another limit banks nothing past its
 *   burst), a window a record at t. Refused, touching nothing, when t is
 *   more than `maxWaitMs` away, or never comes (a cost above a bucket's
 *   burst or a window's n).
 * Then `cancelAt` gives a reservation not yet due back to every limit (a
 * bucket by x/time/rate's CancelAt rule, a window forgets the record),
 * `settleAt` corrects its costs afterwards (more becomes debt, less is given
 * back as of the item's time), and `releaseAt` frees its concurrency slot.
 *
 * The earliest instant: every limit admits on an up-set of times (a bucket
 * once its level reaches the cost, since the level only rises until the next
 * take; a window once enough records have slid out, since no record is ever
 * made before the latest one), so each limit's "earliest admit from t on" is
 * max(t, tau_i) for a tau_i of its own, and the set's instant is the latest of
 * them. The loop in `#decide` finds it by asking every limit again from the
 * latest answer until no limit moves it: with up-sets the second round moves
 * nothing, so it ends after at most two rounds (more only when rounding to
 * the nanosecond nudges a bucket, which moves t forward by a nanosecond and
 * cannot repeat without bound).
 *
 * Concurrency: a slot is taken with the item and held until `releaseAt` (or
 * `cancelAt`). The pure set cannot know when a slot will be freed, so a
 * reservation that finds none free is refused with `noSlot`; the caller that
 * waits (an async layer with a first-come-first-served turn queue) waits for
 * a release and asks again, holding its turn so that later items queue
 * behind it.
 *
 * The answer to the last decision is left in fields (`lastOk`,
 * `lastTimeToActMs`, `lastWaitMs`, `limitedByMask`), so that `allowAt` and
 * `admitAt` (a reserve that keeps no reservation) allocate nothing. Limits are numbered
 * from 1 in the order given; `limitedBy` lists the ones that refused the last
 * item or set its wait.
 */
export class LimitSet {
  readonly specs: readonly LimitSpec[];
  readonly clock: Clock;
  /** Whether the last decision admitted its item. */
  lastOk = false;
  /** When the last admitted item may act; Infinity when refused. */
  lastTimeToActMs = Infinity;
  /** How long the last admitted item waits; Infinity when refused. */
  lastWaitMs = Infinity;
  /** Bit i - 1 set when limit i refused the last item or set its wait. */
  limitedByMask = 0;
  /** True when the last item was refused because a concurrency limit had no free slot. */
  lastNoSlot = false;

  /** What every set of these specs shares: kinds, units and the scratch of a decision. */
  readonly #plan: LimitPlan;
  /** Each limit's state, by index: a TokenBucket, a SlidingWindow, or the slots in use of a concurrency limit. */
  readonly #state: Array<TokenBucket | SlidingWindow | number>;
  /** The latest time anything was taken, given back or corrected: earlier times are clamped to it. */
  #lastMs: number;

  /**
   * A set of `specs`, every bucket full and every window and slot empty at
   * the clock's now; or, with `state`, going on from a set's `state()` (same
   * specs, same order). Sets made from the same array share its checked,
   * frozen plan (the simulator makes one per key): do not change the array after.
   */
  constructor(specs: readonly LimitSpec[], options: { clock?: Clock; state?: LimitSetState } = {}) {
    this.#plan = planFor(specs);
    this.specs = this.#plan.specs;
    this.clock = options.clock ?? systemClock;
    const state = options.state;
    if (state !== undefined && (!Array.isArray(state.limits) || state.limits.length !== this.specs.length || state.limits.some((limit, i) => limit?.kind !== this.specs[i]!.kind))) {
      throw new RangeError("Expected `state` to hold one state of the same kind for each limit, in order");
    }
    this.#lastMs = state?.lastMs ?? this.clock.now();
    this.#state = this.specs.map((spec, i) => {
      const limit = state?.limits[i];
      if (spec.kind === "bucket") return new TokenBucket({ rate: spec.rate, burst: spec.burst, clock: this.clock, state: limit?.kind === "bucket" ? limit : undefined });
      if (spec.kind === "window") return new SlidingWindow(spec.n, spec.windowMs, limit?.kind === "window" ? limit : undefined);
      return limit?.kind === "concurrency" ? limit.inUse : 0;
    });
  }

  /** The set's state as plain data, to make it again with the constructor's `state`. */
  state(): LimitSetState {
    const limits: LimitState[] = [];
    for (let i = 0; i < this.#plan.count; i++) {
      const kind = this.#plan.kinds[i];
      if (kind === BUCKET) limits.push({ kind: "bucket", ...this.#bucket(i).state() });
      else if (kind === WINDOW) limits.push({ kind: "window", ...this.#window(i).state() });
      else limits.push({ kind: "concurrency", inUse: this.#slotsInUse(i) });
    }
    return { lastMs: this.#lastMs, limits };
  }

  /** How many limits the set has. */
  get size(): number {
    return this.#plan.count;
  }

  /** The limits, numbered from 1, that refused the last item or set its wait. */
  get limitedBy(): number[] {
    return limitNumbers(this.limitedByMask);
  }

  /**
   * Admits the item at `nowMs` if every limit admits it there, each taking
   * its cost; otherwise changes nothing and says no (`limitedByMask` names
   * the limits that refused). The same as `admitAt` with no wait.
   */
  allowAt(nowMs: number, costs: Costs): boolean {
    return this.admitAt(nowMs, costs, 0);
  }

  allow(costs: Costs): boolean {
    return this.allowAt(this.clock.now(), costs);
  }

  /**
   * Reserves the item as `reserveAt` does but keeps no reservation, leaving
   * the answer in `lastOk`, `lastTimeToActMs`, `lastWaitMs` and
   * `limitedByMask`: for callers that never cancel or settle (the
   * simulator), so that a decision allocates nothing.
   */
  admitAt(nowMs: number, costs: Costs, maxWaitMs: number): boolean {
    const now = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    this.#readCosts(costs);
    if (!this.#decide(now, maxWaitMs)) return false;
    this.#takeAll(now, this.lastTimeToActMs);
    return true;
  }

  /**
   * Reserves the item at the earliest instant every limit admits it, from
   * `nowMs` on, each limit taking at that instant. Refuses, changing
   * nothing, when a cost can never be admitted, a concurrency limit has no
   * free slot, or the wait would exceed `maxWaitMs`.
   */
  reserveAt(nowMs: number, costs: Costs, maxWaitMs = Infinity): LimitReservation {
    return this.#reserve(nowMs, costs, maxWaitMs, false);
  }

  /**
   * Reserves as `reserveAt` an item that must go out whole though it costs
   * more than a bucket's burst (the pipe's line longer than the burst): such
   * a bucket waits until it is full, and the rest of the cost is its debt,
   * which later items wait for. Windows and slots admit the whole item or
   * refuse it: a window has no debt, it never holds more than its n.
   */
  reserveInDebtAt(nowMs: number, costs: Costs, maxWaitMs = Infinity): LimitReservation {
    const reservation = this.#reserve(nowMs, costs, maxWaitMs, true);
    if (reservation.ok) this.settleAt(nowMs, reservation, costs);
    return reservation;
  }

  #reserve(nowMs: number, costs: Costs, maxWaitMs: number, capAtBurst: boolean): LimitReservation {
    const now = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    this.#readCosts(costs);
    if (capAtBurst) this.#capAtBursts();
    const ok = this.#decide(now, maxWaitMs);
    const limitedBy = limitNumbers(this.limitedByMask);
    if (!ok) return new LimitReservation(false, Infinity, Infinity, limitedBy, this.lastNoSlot, NO_AMOUNTS, NO_AMOUNTS, NO_AMOUNTS, NO_AMOUNTS);
    const actMs = this.lastTimeToActMs;
    const amounts = new Float64Array(this.#plan.cost);
    const rates = new Float64Array(this.#plan.count);
    const levels = new Float64Array(this.#plan.count);
    this.#takeAll(now, actMs);
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] !== BUCKET) continue;
      const bucket = this.#bucket(i);
      rates[i] = bucket.rate;
      levels[i] = bucket.tokensAt(actMs);
    }
    return new LimitReservation(true, actMs, this.lastWaitMs, limitedBy, false, amounts, rates, new Float64Array(this.#plan.taken), levels);
  }

  reserve(costs: Costs, maxWaitMs = Infinity): LimitReservation {
    return this.reserveAt(this.clock.now(), costs, maxWaitMs);
  }

  /**
   * The instant `reserveAt(nowMs, costs)` would answer, taking nothing: when
   * a refused item would be admitted (Retry-After, a --max-wait decision).
   * Infinity when it never would, or a concurrency limit has no free slot.
   * `limitedByMask` names the limits that set it, as after a decision.
   */
  earliestAt(nowMs: number, costs: Costs): number {
    const now = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    this.#readCosts(costs);
    this.#decide(now, Infinity);
    return this.lastTimeToActMs;
  }

  /**
   * Gives a reservation back to every limit, as far as each allows: a bucket
   * by x/time/rate's CancelAt rule (tokens spoken for by later reservations
   * stay taken), a window forgets the item; both only while the item is not
   * yet due. Its concurrency slots are freed in any case.
   */
  cancelAt(nowMs: number, reservation: LimitReservation): void {
    if (!reservation.ok || reservation.cancelled) return;
    reservation.cancelled = true;
    const t = this.#touch(nowMs);
    const due = reservation.timeToActMs < t;
    for (let i = 0; i < this.#plan.count; i++) {
      const amount = reservation.amounts[i]!;
      const kind = this.#plan.kinds[i];
      if (kind === BUCKET) {
        const tokens = reservation.bucketTaken[i]!;
        if (tokens > 0) this.#bucket(i).cancelAt(t, { ok: true, tokens, timeToActMs: reservation.timeToActMs, rate: reservation.bucketRates[i]! });
      } else if (kind === WINDOW) {
        if (!due && amount > 0) this.#window(i).adjustAt(reservation.timeToActMs, -amount);
      }
    }
    this.releaseAt(t, reservation);
  }

  cancel(reservation: LimitReservation): void {
    this.cancelAt(this.clock.now(), reservation);
  }

  /** Frees the concurrency slots a reservation holds (the item ended); other limits are untouched. */
  releaseAt(_nowMs: number, reservation: LimitReservation): void {
    if (!reservation.ok || reservation.released) return;
    reservation.released = true;
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] === CONCURRENCY && reservation.amounts[i]! > 0) this.#state[i] = Math.max(0, this.#slotsInUse(i) - reservation.amounts[i]!);
    }
  }

  release(reservation: LimitReservation): void {
    this.releaseAt(this.clock.now(), reservation);
  }

  /**
   * Corrects what a reservation (or an allowed item, reserved with no wait)
   * cost, once known: every limit that counts a unit of `actualCosts` moves
   * by the difference, as of the item's time. More is taken now, as a debt
   * later items wait for (a window adds it to the item's record, while that
   * is in the window). Less is given back: a window lowers the record; a
   * bucket gets back what the cap would not have cut off since the item's
   * time, at most the burst less the level the take left, less what it has
   * gained since (an upper bound of its level in between), so it never holds
   * more than had the item cost less from the start.
   */
  settleAt(nowMs: number, reservation: LimitReservation, actualCosts: Costs): void {
    if (!reservation.ok || reservation.cancelled) return;
    checkCostsObject(actualCosts);
    const t = this.#touch(nowMs);
    const amounts = reservation.amounts;
    for (let i = 0; i < this.#plan.count; i++) {
      const unit = this.#plan.units[i];
      if (unit === undefined) continue;
      const actual = actualCosts[unit];
      if (actual === undefined) continue;
      if (typeof actual !== "number" || !Number.isFinite(actual) || actual < 0) {
        throw new RangeError(`Expected \`${unit}\` cost to be a non-negative finite number, got \`${actual}\` (${typeof actual})`);
      }
      const delta = actual - amounts[i]!;
      if (delta === 0) continue;
      amounts[i] = actual;
      if (this.#plan.kinds[i] === WINDOW) {
        this.#window(i).adjustAt(reservation.timeToActMs, delta);
        continue;
      }
      const bucket = this.#bucket(i);
      if (delta > 0) {
        bucket.addTokensAt(t, -delta);
        reservation.bucketTaken[i] = reservation.bucketTaken[i]! + delta;
        reservation.bucketLevels[i] = reservation.bucketLevels[i]! - delta;
        continue;
      }
      const sinceMs = t > reservation.timeToActMs ? t - reservation.timeToActMs : 0;
      const gained = reservation.bucketRates[i]! === Infinity ? Infinity : (sinceMs / 1000) * reservation.bucketRates[i]!;
      const room = bucket.burst - reservation.bucketLevels[i]! - gained;
      const refund = Math.min(-delta, room > 0 ? room : 0);
      if (refund > 0) bucket.addTokensAt(t, refund);
      // What was not refunded the bucket had regained anyway: keep the level the cheaper take would have left.
      reservation.bucketLevels[i] = reservation.bucketLevels[i]! + refund;
      reservation.bucketTaken[i] = Math.max(0, reservation.bucketTaken[i]! - refund);
    }
  }

  settle(reservation: LimitReservation, actualCosts: Costs): void {
    this.settleAt(this.clock.now(), reservation, actualCosts);
  }

  /**
   * Lowers every bucket counting `unit` to at most `most` at `nowMs` (a
   * server saying how much of its limit is left): one above it loses the
   * difference, one below it is left as it is. Windows and concurrency are
   * not moved: what they hold is what was taken, not a level to correct.
   */
  /**
   * Keeps every bucket counting `unit` empty until `untilMs`: each owes what
   * it would gain by then (a server's pause, after which it starts from empty,
   * as the server's own count does, not from full). Never raises a level.
   */
  holdEmptyUntilAt(nowMs: number, unit: CostUnit, untilMs: number): void {
    const t = this.#touch(nowMs);
    const pauseMs = Math.max(0, untilMs - t);
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] !== BUCKET || this.#plan.units[i] !== unit) continue;
      const bucket = this.#bucket(i);
      if (!Number.isFinite(bucket.rate)) continue;
      const owed = -(bucket.rate * pauseMs) / 1000;
      const level = bucket.tokensAt(t);
      if (level > owed) bucket.addTokensAt(t, owed - level);
    }
  }

  capLevelAt(nowMs: number, unit: CostUnit, most: number): void {
    if (!(most >= 0)) throw new RangeError(`Expected \`most\` to be a non-negative number, got \`${most}\``);
    const t = this.#touch(nowMs);
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] !== BUCKET || this.#plan.units[i] !== unit) continue;
      const bucket = this.#bucket(i);
      const level = bucket.tokensAt(t);
      if (level > most) bucket.addTokensAt(t, most - level);
    }
  }

  /**
   * The level of limit `index` (from 0) at `nowMs`, read without changing
   * anything: a bucket's tokens (negative while reservations owe), a
   * window's room left (n less what is still in it, reservations included),
   * a concurrency limit's free slots.
   */
  levelAt(nowMs: number, index: number): number {
    const kind = this.#plan.kinds[index];
    if (kind === undefined) throw new RangeError(`Expected \`index\` to be a limit's index from 0 to ${this.#plan.count - 1}, got \`${index}\``);
    if (kind === BUCKET) return this.#bucket(index).tokensAt(nowMs);
    if (kind === WINDOW) return this.#window(index).remainingAt(nowMs);
    return this.#plan.slotLimits[index]! - this.#slotsInUse(index);
  }

  level(index: number): number {
    return this.levelAt(this.clock.now(), index);
  }

  /**
   * When limit `index` (from 0) alone would have room for `amount` of its
   * unit from `nowMs` on, taking nothing and leaving the other limits aside:
   * a bucket once it has refilled `amount` less its level at its rate (past
   * its burst too: what is taken meanwhile is refilled again), a window
   * `SlidingWindow.roomAt`, a concurrency limit now with a free slot, else
   * never. Retry-After's spread (no stampede) asks it for the room of the
   * clients already told to come back plus one: no limit has it sooner.
   */
  roomAt(nowMs: number, index: number, amount: number): number {
    const kind = this.#plan.kinds[index];
    if (kind === undefined) throw new RangeError(`Expected \`index\` to be a limit's index from 0 to ${this.#plan.count - 1}, got \`${index}\``);
    const t = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    if (kind === WINDOW) return this.#window(index).roomAt(t, amount);
    if (kind === CONCURRENCY) return this.#slotsInUse(index) < this.#plan.slotLimits[index]! ? t : Infinity;
    const bucket = this.#bucket(index);
    const missing = amount - bucket.tokensAt(t);
    if (!(missing > 0) || bucket.rate === Infinity) return t;
    return bucket.rate > 0 ? t + (missing * 1000) / bucket.rate : Infinity;
  }

  /** How many records window limit `index` holds (its memory); 0 for other kinds. */
  windowRecords(index: number): number {
    return this.#plan.kinds[index] === WINDOW ? this.#window(index).records : 0;
  }

  /** Copies the item's cost in each limit's unit; a concurrency limit takes one slot. */
  #readCosts(costs: Costs): void {
    checkCostsObject(costs);
    for (let i = 0; i < this.#plan.count; i++) {
      const unit = this.#plan.units[i];
      if (unit === undefined) {
        this.#plan.cost[i] = 1;
        continue;
      }
      const cost = costs[unit];
      if (cost === undefined) {
        this.#plan.cost[i] = 0;
        continue;
      }
      if (typeof cost !== "number" || !Number.isFinite(cost) || cost < 0) {
        throw new RangeError(`Expected \`${unit}\` cost to be a non-negative finite number, got \`${cost}\` (${typeof cost})`);
      }
      this.#plan.cost[i] = cost;
    }
  }

  /** Each bucket with a rate asks for at most its burst of the costs read (the rest is settled as debt). */
  #capAtBursts(): void {
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] !== BUCKET) continue;
      const bucket = this.#bucket(i);
      if (bucket.rate !== Infinity && this.#plan.cost[i]! > bucket.burst) this.#plan.cost[i] = bucket.burst;
    }
  }

  /** Limit i's earliest admit from t on, for the item whose costs were read. */
  #earliestOne(i: number, t: number): number {
    const kind = this.#plan.kinds[i];
    const cost = this.#plan.cost[i]!;
    let earliestMs: number;
    if (kind === BUCKET) {
      // t is never before the bucket's last update (the set clamps its present to the latest change).
      const waitMs = this.#bucket(i).delayAt(t, cost);
      earliestMs = t + waitMs;
      this.#plan.waitMs = waitMs;
    } else {
      earliestMs = kind === WINDOW ? this.#window(i).earliestAt(t, cost) : this.#slotsInUse(i) + 1 <= this.#plan.slotLimits[i]! ? t : Infinity;
      this.#plan.waitMs = earliestMs - t;
    }
    this.#plan.earliestMs[i] = earliestMs;
    return earliestMs;
  }

  /**
   * Decides the item whose costs were read, at the present `now`, leaving the
   * answer in the fields; takes nothing. The earliest instant is the fixed
   * point of t -> max over limits of their earliest admit from t (see the
   * class's comment for why the loop ends).
   */
  #decide(now: number, maxWaitMs: number): boolean {
    let t = now;
    // The limit whose answer t is: asking it again at its own answer changes nothing, so it is skipped.
    let setter = -1;
    let refused = 0;
    let blocked = false;
    let noSlot = false;
    for (let i = 0; i < this.#plan.count; i++) {
      if (this.#plan.kinds[i] === WINDOW) this.#window(i).pruneAt(now);
      const earliestMs = this.#earliestOne(i, now);
      this.#plan.fromNowMs[i] = earliestMs;
      this.#plan.fromNowWaitMs[i] = this.#plan.waitMs;
      if (earliestMs > t) {
        t = earliestMs;
        setter = i;
      }
      if (this.#neverAdmits(i) || (this.#plan.kinds[i] === CONCURRENCY && earliestMs > now)) {
        refused |= 1 << i;
        blocked = true;
        if (this.#plan.kinds[i] === CONCURRENCY) noSlot = true;
      }
    }
    // Later rounds only move t on: a wait already too long is refused without them.
    if (!blocked && !(t - now > maxWaitMs)) {
      for (let moved = t > now; moved && t !== Infinity; ) {
        moved = false;
        for (let i = 0; i < this.#plan.count; i++) {
          if (i === setter) continue;
          const earliestMs = this.#earliestOne(i, t);
          if (earliestMs > t) {
            t = earliestMs;
            setter = i;
            moved = true;
          }
        }
      }
    }
    // The wait as the limit that set it measured it (a bucket's is exactly x/time/rate's), unless later rounds moved t.
    const waitMs = setter >= 0 && t === this.#plan.fromNowMs[setter] ? this.#plan.fromNowWaitMs[setter]! : t > now ? t - now : 0;
    const ok = !blocked && !(waitMs > maxWaitMs);
    if (!blocked) {
      // The limits that set the wait; refused for too long a wait, the ones that alone would wait too long.
      for (let i = 0; i < this.#plan.count; i++) {
        const fromNowMs = this.#plan.fromNowMs[i]!;
        if (ok ? t > now && fromNowMs >= t : fromNowMs - now > maxWaitMs) refused |= 1 << i;
      }
      if (refused === 0 && setter >= 0 && t > now) refused = 1 << setter;
    }
    this.limitedByMask = refused;
    this.lastNoSlot = noSlot;
    this.lastOk = ok;
    this.lastTimeToActMs = ok ? t : Infinity;
    this.lastWaitMs = ok ? waitMs : Infinity;
    return ok;
  }

  /** True when the item's cost exceeds what limit i could ever admit at once. */
  #neverAdmits(i: number): boolean {
    const kind = this.#plan.kinds[i];
    if (kind === BUCKET) {
      const bucket = this.#bucket(i);
      return this.#plan.cost[i]! > bucket.burst && bucket.rate !== Infinity;
    }
    return this.#plan.cost[i]! > this.#plan.capacities[i]!;
  }

  /** Every limit takes the item's cost, asked at `now`, for an item acting at `actMs`. */
  #takeAll(now: number, actMs: number): void {
    this.#lastMs = now;
    for (let i = 0; i < this.#plan.count; i++) {
      const cost = this.#plan.cost[i]!;
      const kind = this.#plan.kinds[i];
      if (kind === BUCKET) this.#plan.taken[i] = this.#bucket(i).takeAt(now, actMs, cost);
      else if (kind === WINDOW) this.#window(i).recordAt(actMs, cost);
      else this.#state[i] = this.#slotsInUse(i) + 1;
    }
  }

  #bucket(i: number): TokenBucket {
    return this.#state[i] as TokenBucket;
  }

  #window(i: number): SlidingWindow {
    return this.#state[i] as SlidingWindow;
  }

  #slotsInUse(i: number): number {
    return this.#state[i] as number;
  }

  /** The time of a change, clamped so that it never runs backwards. */
  #touch(nowMs: number): number {
    if (nowMs > this.#lastMs) this.#lastMs = nowMs;
    return this.#lastMs;
  }
}

/**
 * What every set of one array of specs shares: the checked, frozen specs,
 * each limit's kind and unit, and the scratch a decision works in (a
 * decision runs to its end without yielding, so sets may share it).
 */
class LimitPlan {
  readonly specs: readonly LimitSpec[];
  readonly count: number;
  readonly kinds: Uint8Array;
  readonly units: Array<CostUnit | undefined>;
  readonly slotLimits: Float64Array;
  /** The most a window admits at once (its n), or a concurrency limit's slots: more is never admitted. */
  readonly capacities: Float64Array;
  /** The item being decided: each limit's cost, and its earliest admit. */
  readonly cost: Float64Array;
  readonly earliestMs: Float64Array;
  /** Each limit's earliest admit asked from the present (the ones at the instant set the wait), and its wait. */
  readonly fromNowMs: Float64Array;
  readonly fromNowWaitMs: Float64Array;
  /** How far each bucket's level went down at the last take. */
  readonly taken: Float64Array;
  /** The wait the last earliest admit found, from the time it was asked. */
  waitMs = 0;

  constructor(specs: readonly LimitSpec[]) {
    checkLimitSpecs(specs);
    this.specs = Object.freeze(specs.map((spec) => Object.freeze({ ...spec })));
    const count = (this.count = specs.length);
    this.kinds = new Uint8Array(count);
    this.units = [];
    this.slotLimits = new Float64Array(count);
    this.capacities = new Float64Array(count);
    this.cost = new Float64Array(count);
    this.earliestMs = new Float64Array(count);
    this.fromNowMs = new Float64Array(count);
    this.fromNowWaitMs = new Float64Array(count);
    this.taken = new Float64Array(count);
    specs.forEach((spec, i) => {
      this.units.push(spec.kind === "concurrency" ? undefined : spec.unit);
      this.kinds[i] = spec.kind === "bucket" ? BUCKET : spec.kind === "window" ? WINDOW : CONCURRENCY;
      if (spec.kind === "concurrency") this.slotLimits[i] = spec.n;
      // A concurrency limit takes one slot an item: with none at all it never admits.
      this.capacities[i] = spec.kind === "window" ? spec.n : spec.kind === "concurrency" ? (spec.n < 1 ? -1 : 1) : Infinity;
    });
  }
}

const plans = new WeakMap<readonly LimitSpec[], LimitPlan>();

function planFor(specs: readonly LimitSpec[]): LimitPlan {
  let plan = Array.isArray(specs) ? plans.get(specs) : undefined;
  if (plan === undefined) {
    plan = new LimitPlan(specs);
    plans.set(specs, plan);
  }
  return plan;
}

/** A library caller's `costs` is an object (a null would fail deep inside as a TypeError). */
function checkCostsObject(costs: Costs): void {
  if (typeof costs !== "object" || costs === null) throw new RangeError(`Expected \`costs\` to be an object of costs by unit, such as { count: 1 }, got \`${String(costs)}\``);
}

/** The limit numbers (from 1) of a mask's bits. */
export function limitNumbers(mask: number): number[] {
  const numbers: number[] = [];
  for (let i = 0; mask !== 0; i++, mask >>>= 1) if (mask & 1) numbers.push(i + 1);
  return numbers;
}
