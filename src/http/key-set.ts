import type { Clock } from "../core/clock.js";
import { type LimitReservation, LimitSet } from "../core/limit-set.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";

/** A limit and its level: a bucket's tokens, a window's room left, a concurrency limit's free slots. */
export type LimitLevel = LimitSpec & { level: number };

/** What a take of one request came to. */
export interface KeySetTake {
  /** False when nothing was taken. */
  readonly ok: boolean;
  /** From the take until the request may go; Infinity when refused. */
  readonly waitMs: number;
  /** The limits, numbered from 1, that refused the request or set its wait. */
  readonly limitedBy: readonly number[];
  /** Refused because a concurrency limit had no free slot: one may come free when a response ends. */
  readonly noSlot: boolean;
  /** Refused: from the take until the same request would be let through (Infinity: never, or when a slot frees). */
  readonly retryMs: number;
}

/**
 * One key's set of limits as the request gate needs it (DESIGN section 11):
 * take a request at the earliest instant every limit admits it within a
 * wait, or nothing; give a take back (the client left while it waited);
 * free its concurrency slots when its response ends.
 *
 * `PrivateKeySet` is one in this process. A set kept in a store (a
 * LimitSetStore's takeSet/cancelSet/releaseSet on the key) is the same
 * interface with promises, given to the gate by a `KeySetSource`, so the
 * gate's turns, waits and slot queue stay as they are. Slots freed by other
 * processes are not announced here: a request queued for one is woken by
 * this process's releases and its wait limit only, so with a store the
 * gate will have to ask again now and then while anyone waits (not built:
 * a private set hears of every release).
 */
export interface KeySet {
  readonly limits: readonly LimitSpec[];
  /** While a request waits for a concurrency slot, ask again this often (slots freed elsewhere are not announced). */
  readonly slotPollMs?: number;
  /** Takes one request (1 in every bucket and window, a slot in every concurrency limit) if it may go within `maxWaitMs`. */
  take(maxWaitMs: number, cost?: number): KeySetTake | Promise<KeySetTake>;
  /** Gives an ok take not yet due back to every limit, and frees its slots. */
  cancel(take: KeySetTake): void;
  /** Frees the concurrency slots of an ok take (its response ended); once only. */
  release(take: KeySetTake): void;
  /**
   * From now until a request of `cost` would find room behind `ahead`
   * refused clients told to come back before it (one unit each), as far as
   * each rate and window alone tells (the k-th next token, the k-th next
   * record to leave): Retry-After's spread, so that refused clients are
   * told different times (no stampede). Concurrency is left out (a slot
   * frees when a response ends). The gate tells the later of it and a
   * take's `retryMs`; without it, refusals are told `retryMs` alone.
   */
  retryBehindMs?(ahead: number, cost: number): number;
  /** Each limit with its level now, as far as it is known without a round trip. */
  levels(): LimitLevel[];
  /** True when the set is the same as a new one (buckets full, windows empty, no slot held): the key may be forgotten. */
  isIdle(): boolean;
}

/**
 * Where keys' sets come from when they are not private: a store's, for a
 * limit that several servers hold together. `open` is synchronous (a set
 * that must be created in its store does so at its first take); `close` is
 * told when the key leaves the gate's table, to give back what it holds.
 */
export interface KeySetSource {
  open(key: string, limits: readonly LimitSpec[]): KeySet;
  close?(set: KeySet): void;
}

/** The costs of one request of `cost` (1 unless a cost function says): rate and window limits count it, a concurrency limit one slot. */
export function requestCosts(cost: number): Costs {
  return cost === 1 ? ONE_REQUEST : { count: cost };
}

const ONE_REQUEST: Costs = { count: 1 };
const NOTHING: Costs = { count: 0 };

/** A take of a private set: the set's reservation, and the instant a refusal points to. */
class PrivateTake implements KeySetTake {
  constructor(
    readonly reservation: LimitReservation,
    readonly waitMs: number,
    readonly retryMs: number,
  ) {}

  get ok(): boolean {
    return this.reservation.ok;
  }

  get limitedBy(): readonly number[] {
    return this.reservation.limitedBy;
  }

  get noSlot(): boolean {
    return this.reservation.noSlot;
  }
}

/** A key's set of limits in this process: a LimitSet counting requests, decided synchronously. */
export class PrivateKeySet implements KeySet {
  readonly #set: LimitSet;
  readonly #clock: Clock;

  constructor(limits: readonly LimitSpec[], clock: Clock) {
    this.#set = new LimitSet(limits, { clock });
    this.#clock = clock;
  }

  get limits(): readonly LimitSpec[] {
    return this.#set.specs;
  }

  take(maxWaitMs: number, cost = 1): KeySetTake {
    const nowMs = this.#clock.now();
    const costs = requestCosts(cost);
    const reservation = this.#set.reserveAt(nowMs, costs, maxWaitMs);
    if (reservation.ok) return new PrivateTake(reservation, reservation.delayFrom(nowMs), 0);
    // The same instant a reserve would find with no wait limit, taking nothing: Retry-After tells the truth.
    const retryMs = reservation.noSlot ? Infinity : this.#set.earliestAt(nowMs, costs) - nowMs;
    return new PrivateTake(reservation, Infinity, retryMs);
  }

  cancel(take: KeySetTake): void {
    this.#set.cancelAt(this.#clock.now(), (take as PrivateTake).reservation);
  }

  release(take: KeySetTake): void {
    this.#set.releaseAt(this.#clock.now(), (take as PrivateTake).reservation);
  }

  /**
   * Gives an ok take back whole, due or not, as if it had cost nothing (a
   * settle to 0: `cancel` gives back only what is not yet due), and frees its
   * slots: for a take that another set then refused (TotalKeySet).
   */
  refund(take: KeySetTake): void {
    const nowMs = this.#clock.now();
    const { reservation } = take as PrivateTake;
    this.#set.settleAt(nowMs, reservation, NOTHING);
    this.#set.releaseAt(nowMs, reservation);
  }

  retryBehindMs(ahead: number, cost = 1): number {
    const nowMs = this.#clock.now();
    const costs = requestCosts(cost);
    let atMs = nowMs;
    this.#set.specs.forEach((spec, index) => {
      const counted = spec.kind === "concurrency" ? 0 : (costs[spec.unit] ?? 0);
      if (counted > 0) atMs = Math.max(atMs, this.#set.roomAt(nowMs, index, counted + ahead));
    });
    return atMs - nowMs;
  }

  levels(): LimitLevel[] {
    const nowMs = this.#clock.now();
    return this.#set.specs.map((spec, index) => ({ ...spec, level: this.#set.levelAt(nowMs, index) }));
  }

  isIdle(): boolean {
    const nowMs = this.#clock.now();
    return this.#set.specs.every((spec, index) => {
      const level = this.#set.levelAt(nowMs, index);
      if (spec.kind === "bucket") return level >= spec.burst;
      return level >= spec.n;
    });
  }
}
