import { type Clock, systemClock } from "./clock.js";
import { type LimitReservation, LimitSet } from "./limit-set.js";
import { type CostUnit, type Costs, type LimitSpec, lowestRate, mostAtOnce } from "./limit-spec.js";
import type { Limiter } from "./limiter.js";
import { ExceedsBurstError } from "./token-bucket.js";

/**
 * LimitSetLimiter is a private `LimitSet` behind the `Limiter` interface, so
 * that the stream and the runner wait on a set of limits as they wait on one
 * bucket. `n` is in its main unit (`unit`); an item that costs something in
 * other units too passes `costs`, and every limit takes its own unit's cost.
 *
 * Waits are first come, first served across the whole set: each wait
 * reserves at once, at the earliest instant every limit admits it (the set
 * keeps the order), and sleeps until then; an aborted wait cancels in every
 * limit. A concurrency limit with no free slot has no instant to sleep to:
 * the wait joins a queue of turns and asks again when a slot is released,
 * and while anyone is in that queue, later waits queue behind it. `wait`
 * and `tryWait` give a slot back as soon as they resolve; an item that runs
 * for a while holds it with `acquire` until `release`.
 *
 * `rate`, `burst` and `tokens()` describe the main unit for pacing: the
 * lowest long-run rate (a window's n / W counts as one), the least that any
 * of its limits can take at once (a burst, a window's n), and the lowest
 * level (a window's room left).
 *
 * For `--stats`, `waitedMsBy` adds up, for each limit, the waits it set.
 */
export class LimitSetLimiter implements Limiter {
  readonly set: LimitSet;
  /** What `n` counts. */
  readonly unit: CostUnit;
  readonly clock: Clock;
  /** By limit index: the time of the finished waits each limit set (several at once share a wait); see `waitedMs`. */
  readonly waitedMsBy: Float64Array;
  /** By limit index: how many items it refused (their wait past the --max-wait of `tryWait` or `acquire`). */
  readonly refusedBy: Float64Array;
  /** The waits under way: when each began, how long it is, and the limits that set it. */
  readonly #waiting = new Set<{ startedMs: number; waitMs: number; limitedBy: readonly number[] }>();
  /**
   * Waits for a concurrency slot, in turn; the head asks again at each
   * release. Not core's TurnQueue: its turns are instants reserved on one
   * bucket and served by a timer, while a slot has no instant until a holder
   * releases it, and the head must then reserve in every limit of the set at
   * once. What the two share is the rule: first come, first served, and a
   * waiter that gives up leaves the line and wakes the one behind it.
   */
  readonly #turns: Array<() => void> = [];

  constructor(specs: readonly LimitSpec[], options: { unit: CostUnit; clock?: Clock }) {
    this.clock = options.clock ?? systemClock;
    this.set = new LimitSet(specs, { clock: this.clock });
    this.unit = options.unit;
    this.waitedMsBy = new Float64Array(specs.length);
    this.refusedBy = new Float64Array(specs.length);
  }

  /** The time of the waits limit `index` (from 0) set, the ones under way as far as they went (stats asked at a signal). */
  waitedMs(index: number): number {
    let ms = this.waitedMsBy[index]!;
    const nowMs = this.clock.now();
    for (const wait of this.#waiting) if (wait.limitedBy.includes(index + 1)) ms += Math.min(wait.waitMs, nowMs - wait.startedMs);
    return ms;
  }

  get rate(): number {
    return lowestRate(this.set.specs, this.unit);
  }

  get burst(): number {
    return this.mostAtOnce(this.unit);
  }

  /**
   * The most of `unit` one item may cost (limit-spec's mostAtOnce). With `windows: false`, the
   * buckets' alone; with `buckets: false`, the windows' alone: the most an item may cost at all, a
   * bucket running into debt for more than its burst (`waitInDebt`).
   */
  mostAtOnce(unit: CostUnit, kinds: { buckets?: boolean; windows?: boolean } = {}): number {
    return mostAtOnce(this.set.specs, unit, kinds);
  }

  tokens(): number {
    const nowMs = this.clock.now();
    let level = Infinity;
    this.set.specs.forEach((spec, index) => {
      if (spec.kind === "concurrency" || spec.unit !== this.unit || (spec.kind === "bucket" && spec.rate === Infinity)) return;
      level = Math.min(level, this.set.levelAt(nowMs, index));
    });
    return level;
  }

  async wait(n: number, signal?: AbortSignal, costs?: Costs): Promise<void> {
    this.release(await this.#take(costs ?? { [this.unit]: n }, Infinity, signal));
  }

  async tryWait(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<boolean> {
    const reservation = await this.#take(costs ?? { [this.unit]: n }, maxWaitMs, signal);
    this.release(reservation);
    return reservation !== undefined;
  }

  /**
   * Waits as `wait` for an item that goes out whole though it costs more
   * than a bucket's burst (LimitSet.reserveInDebtAt: the buckets run into
   * debt, the windows count it whole). Rejects with ExceedsBurstError when a
   * window could never hold it.
   */
  async waitInDebt(costs: Costs, signal?: AbortSignal): Promise<void> {
    this.release(await this.#take(costs, Infinity, signal, true));
  }

  /**
   * Waits until the item may act, as `tryWait`, and holds its concurrency
   * slots until `release`: for items that run for a while (a job, a
   * request). Undefined, having taken nothing, when the timed part of the
   * wait would exceed `maxWaitMs`.
   */
  acquire(costs: Costs, maxWaitMs = Infinity, signal?: AbortSignal): Promise<LimitReservation | undefined> {
    return this.#take(costs, maxWaitMs, signal);
  }

  /** Gives back the concurrency slots of an acquired item, and wakes the next in turn. */
  release(reservation: LimitReservation | undefined): void {
    if (reservation === undefined || reservation.released) return;
    this.set.releaseAt(this.clock.now(), reservation);
    this.#turns[0]?.();
  }

  async #take(costs: Costs, maxWaitMs: number, signal: AbortSignal | undefined, inDebt = false): Promise<LimitReservation | undefined> {
    signal?.throwIfAborted();
    this.#checkCosts(costs, inDebt);
    const reserve = () => (inDebt ? this.set.reserveInDebtAt(this.clock.now(), costs, maxWaitMs) : this.set.reserve(costs, maxWaitMs));
    let reservation = this.#turns.length === 0 ? reserve() : undefined;
    if (reservation === undefined || reservation.noSlot) reservation = await this.#inTurn(reserve, signal);
    if (!reservation.ok) {
      for (const number of reservation.limitedBy) this.refusedBy[number - 1] = this.refusedBy[number - 1]! + 1;
      return undefined;
    }
    const nowMs = this.clock.now();
    const waitMs = reservation.delayFrom(nowMs);
    // A wait cut short counts as far as it went: a limit's waits never add up to more than the time.
    const waited = (ms: number) => {
      for (const number of reservation.limitedBy) this.waitedMsBy[number - 1] = this.waitedMsBy[number - 1]! + ms;
    };
    if (waitMs <= 0) {
      waited(reservation.waitMs);
      return reservation;
    }
    const waiting = { startedMs: nowMs, waitMs: reservation.waitMs, limitedBy: reservation.limitedBy };
    this.#waiting.add(waiting);
    try {
      await this.clock.sleep(waitMs, signal);
    } catch (error) {
      waited(Math.min(reservation.waitMs, this.clock.now() - nowMs));
      this.set.cancel(reservation);
      this.#turns[0]?.();
      throw error;
    } finally {
      this.#waiting.delete(waiting);
    }
    waited(reservation.waitMs);
    return reservation;
  }

  /** Waits for its turn in the queue of those without a slot, asking again at each release. */
  async #inTurn(reserve: () => LimitReservation, signal: AbortSignal | undefined): Promise<LimitReservation> {
    let wake!: () => void;
    let woken = new Promise<void>((resolve) => (wake = resolve));
    const turn = () => wake();
    this.#turns.push(turn);
    const onAbort = () => wake();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      for (;;) {
        if (this.#turns[0] === turn) {
          const reservation = reserve();
          if (!reservation.noSlot) return reservation;
        }
        await woken;
        signal?.throwIfAborted();
        woken = new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#turns.splice(this.#turns.indexOf(turn), 1);
      // The next in line may find a slot too (several freed, or this one gave up).
      this.#turns[0]?.();
    }
  }

  /** A cost above what some limit can ever take at once (in debt, what a window can ever hold) is refused as a bucket refuses one above its burst. */
  #checkCosts(costs: Costs, inDebt: boolean): void {
    for (const unit in costs) {
      const cost = costs[unit]!;
      const most = this.mostAtOnce(unit, { buckets: !inDebt });
      if (cost > most) throw new ExceedsBurstError(cost, most);
    }
  }
}
