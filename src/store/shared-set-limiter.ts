import { type Clock, systemClock } from "../core/clock.js";
import { type CostUnit, type Costs, type LimitSpec, lowestRate, mostAtOnce } from "../core/limit-spec.js";
import type { Limiter } from "../core/limiter.js";
import { ExceedsBurstError } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import { StoreError } from "./bucket-store.js";
import { WaitLine } from "./wait-line.js";
import { type LimitSetStore, sameLimits, type SetReservation, type SetState, specOf } from "./limit-set-store.js";

export interface SharedSetLimiterOptions {
  store: LimitSetStore;
  key: string;
  /** The key's set as the store holds it now, with its levels (readSet, configureSet). */
  state: SetState;
  /** What `n` counts: the pipe's bytes or lines, the run's launches. */
  unit: RateKind;
  /** Local time for sleeping; the store keeps its own clock. */
  clock?: Clock;
  /** Each lease is this long at the lowest rate of its unit, so a busy process makes at most ~1000 / leaseMs round trips a second. */
  leaseMs?: number;
  /** How often a wait refused for want of a free slot asks again: slots freed by other processes send no word. */
  slotPollMs?: number;
  /** How often the key's set is read while no take brings it: a `key set` reaches a slow run within this. */
  pollMs?: number;
  /** Told of each lease's wait and the limits (numbered from 1) that set it. */
  onWait?: (limitedBy: readonly number[], waitMs: number) => void;
}

/**
 * SharedSetLimiter is a Limiter over a key of a LimitSetStore: every limit of
 * the key's set (buckets, windows, concurrency), shared with every process
 * that names the key, as SharedLimiter is for a key of one bucket.
 *
 * Costs are taken in leases, each one `takeSet` of every unit an item costs:
 * about `leaseMs` of the lowest rate counting the unit (never more than a
 * burst or a window's n, which the store could never admit at once), so a
 * fast pipe costs ~50 round trips a second. A lease is a reservation in the
 * store, first come first served across processes, and counts in a window
 * from when it is taken; together the processes keep every limit's
 * envelope plus the one lease each holds. Waits in one process are served
 * one at a time, in order, from the lease they share.
 *
 * A lease not yet due when its wait is aborted, or when the limiter closes,
 * is cancelled in the store (every limit gets it back, a window forgets it);
 * a lease due but not all used is settled down to what was used when the
 * limiter closes, so no debt and no window room is left behind.
 *
 * A set with a concurrency limit takes no lease: each wait takes exactly
 * the item's costs and a slot, held under a holder id of its own and given
 * back when the wait resolves; a wait refused for want of a slot asks again
 * every `slotPollMs`. `acquire` keeps the slot for an item that runs a
 * while, renewed within each lease, until `release`.
 *
 * When the store fails, the limiter stops: that wait and every later one
 * reject with the StoreError. Going on without the store is
 * FailoverLimiter's business.
 */
export class SharedSetLimiter implements Limiter {
  readonly key: string;
  readonly kind: RateKind;
  readonly #store: LimitSetStore;
  readonly #clock: Clock;
  readonly #leaseMs: number;
  readonly #slotPollMs: number;
  readonly #pollMs: number;
  #pollTimer: ReturnType<typeof setInterval> | undefined;
  #lastContactMs: number;
  readonly #onWait: ((limitedBy: readonly number[], waitMs: number) => void) | undefined;
  #limits: LimitSpec[];
  /** Costs leased from the store and not yet used, by unit. */
  readonly #held = new Map<CostUnit, number>();
  /** When the held costs may be used, on the local clock. */
  #readyAtMs: number;
  /** The last lease, what it took of each unit and the ready time before it: cancelled while not yet due, settled down to what was used at close. */
  #lease: { reservation: SetReservation; leased: Record<string, number>; readyAtBeforeMs: number } | undefined;
  readonly #line = new WaitLine();
  /** The take under way, which close() lets finish before giving back its lease. */
  #taking: Promise<unknown> | undefined;
  #closed = false;
  #failure: StoreError | undefined;
  /** Slots held by `acquire`, renewed on a timer. */
  readonly #slots = new Set<SetReservation>();
  #renewTimer: ReturnType<typeof setInterval> | undefined;
  /** Each limit's level as last known, and when (local clock): read at the start, a bucket's again at each take. */
  #levels: Array<{ level: number; atMs: number }>;
  /** This process's leases within the longest window, for the windows' levels. */
  readonly #takes: Array<{ atMs: number; amounts: number[] }> = [];
  /** Round trips made to the store, for tests. */
  roundTrips = 0;

  constructor(options: SharedSetLimiterOptions) {
    this.key = options.key;
    this.kind = options.unit;
    this.#store = options.store;
    this.#clock = options.clock ?? systemClock;
    this.#leaseMs = options.leaseMs ?? 20;
    this.#slotPollMs = options.slotPollMs ?? 50;
    this.#onWait = options.onWait;
    this.#pollMs = options.pollMs ?? 500;
    this.#limits = options.state.limits.map(specOf);
    this.#readyAtMs = this.#clock.now();
    this.#levels = options.state.limits.map((limit) => ({ level: limit.level, atMs: this.#readyAtMs }));
    this.#lastContactMs = this.#readyAtMs;
  }

  /** Reads the key's set every `pollMs` while no take does; the timer never keeps the process alive. */
  startPolling(): void {
    if (this.#pollTimer) return;
    this.#pollTimer = setInterval(() => void this.poll().catch(() => {}), this.#pollMs);
    this.#pollTimer.unref?.();
  }

  /** Reads the key's set and levels unless a take did within `pollMs`; a failure stops the limiter (the next wait throws it). */
  async poll(): Promise<void> {
    if (this.#failure || this.#closed || this.#clock.now() - this.#lastContactMs < this.#pollMs) return;
    const state = await this.#call(() => this.#store.readSet(this.key)).catch(() => undefined);
    if (!state || this.#failure) return;
    this.#lastContactMs = this.#clock.now();
    this.#limits = state.limits.map(specOf);
    this.#levels = state.limits.map((limit) => ({ level: limit.level, atMs: this.#lastContactMs }));
    this.#takes.length = 0;
  }

  /** The key's limits as last read. */
  get limits(): readonly LimitSpec[] {
    return this.#limits;
  }

  get rate(): number {
    return lowestRate(this.#limits, this.kind);
  }

  get burst(): number {
    return mostAtOnce(this.#limits, this.kind);
  }

  /**
   * The lowest level of the limits counting the main unit, without a round
   * trip: a bucket's as its last take left it, refilled since at its rate; a
   * window's room as the store last read it, less this process's leases
   * within its length (others' are seen at the next read). For pacing.
   */
  tokens(): number {
    const nowMs = this.#clock.now();
    let level = Infinity;
    this.#limits.forEach((spec, index) => {
      if (spec.kind === "concurrency" || spec.unit !== this.kind || (spec.kind === "bucket" && spec.rate === Infinity)) return;
      if (spec.kind === "bucket") level = Math.min(level, this.#bucketLevelAtMost(index));
      else level = Math.min(level, this.#levels[index]!.level - this.#recentTakes(index, spec.windowMs, nowMs));
    });
    return level;
  }

  /** What this process took in window `index` within its length, since its level was read. */
  #recentTakes(index: number, windowMs: number, nowMs: number): number {
    let sum = 0;
    for (const take of this.#takes) if (take.atMs > nowMs - windowMs && take.atMs >= this.#levels[index]!.atMs) sum += take.amounts[index] ?? 0;
    return sum;
  }

  /** After a take: each bucket's level as the take left it, at the time the lease is due; the lease among the recent takes. */
  #noteTake(reservation: SetReservation, readyAtMs: number): void {
    this.#limits.forEach((spec, index) => {
      if (spec.kind === "bucket") this.#levels[index] = { level: reservation.bucketLevels[index] ?? spec.burst, atMs: readyAtMs };
    });
    const longestMs = Math.max(0, ...this.#limits.map((spec) => (spec.kind === "window" ? spec.windowMs : 0)));
    this.#takes.push({ atMs: readyAtMs, amounts: reservation.amounts });
    while (this.#takes.length > 0 && this.#takes[0]!.atMs <= readyAtMs - longestMs) this.#takes.shift();
  }

  wait(n: number, signal?: AbortSignal, costs?: Costs): Promise<void> {
    const item = this.#costsOf(n, costs);
    signal?.throwIfAborted();
    return this.#serialize(async () => {
      const reservation = await this.#takeItem(item, Infinity, signal);
      if (reservation !== "refused") await this.#releaseSlot(reservation);
    }, signal);
  }

  tryWait(n: number, maxWaitMs: number, signal?: AbortSignal, costs?: Costs): Promise<boolean> {
    const item = this.#costsOf(n, costs);
    signal?.throwIfAborted();
    const calledAtMs = this.#clock.now();
    return this.#serialize(async () => {
      const reservation = await this.#takeItem(item, Math.max(0, maxWaitMs - (this.#clock.now() - calledAtMs)), signal);
      if (reservation === "refused") return false;
      await this.#releaseSlot(reservation);
      return true;
    }, signal);
  }

  /**
   * Waits until the item may act, as tryWait, and holds its concurrency
   * slot, renewed within each slot lease, until `release`. Undefined, having
   * taken nothing, when the wait would exceed `maxWaitMs`.
   */
  acquire(costs: Costs, maxWaitMs = Infinity, signal?: AbortSignal): Promise<SetReservation | undefined> {
    signal?.throwIfAborted();
    return this.#serialize(async () => {
      const reservation = await this.#takeItem(this.#costsOf(0, costs), maxWaitMs, signal);
      if (reservation === "refused") return undefined;
      if (reservation) this.#holdSlot(reservation);
      return reservation;
    }, signal);
  }

  /**
   * An item admitted at `admitted` really cost `actual` (run's `tbucket-cost`):
   * the difference is this process's to use or to owe. Less is held, and
   * serves its next items before a new take; more is owed, and its next take
   * asks for it too. No round trip: the store counted the item when it was
   * taken, and what this process holds or owes is settled with its next take.
   */
  settle(admitted: Costs, actual: Costs): void {
    for (const unit in actual) {
      const cost = (actual as Record<string, number>)[unit]!;
      if (!(cost >= 0) || !Number.isFinite(cost)) continue;
      const was = (admitted as Record<string, number>)[unit] ?? 0;
      this.#held.set(unit as CostUnit, (this.#held.get(unit as CostUnit) ?? 0) + was - cost);
    }
  }

  /**
   * Keeps the key's buckets empty until `pauseMs` from now, for every
   * process on it (the server's pushback, DESIGN 13): a debt in the buckets
   * of each unit, taken as an item of cost 0 settled up to the lowest rate's
   * worth of the pause. After the server's pause the key starts
   * from empty, as the server's own count does, not from full: a key that
   * filled while paused let a burst go at once, and the server refused its
   * end. What the key already makes the next item wait is not added again, so
   * pauses that overlap (several jobs throttled at once) hold until the latest,
   * not their sum. A unit a window counts too is not emptied (a debt in a
   * window would hold for its whole length), nor a key with a concurrency
   * limit; their pause is ServerPause's alone. Resolves to whether it was emptied.
   */
  async emptyFor(pauseMs: number): Promise<boolean> {
    this.#throwIfFailed();
    this.#throwIfClosed();
    if (!(pauseMs > 0) || this.#limits.some((spec) => spec.kind === "concurrency")) return false;
    // Every unit the buckets count (launches, and a run's costs), but none a window counts too.
    const units = [...new Set(this.#limits.flatMap((spec) => (spec.kind === "bucket" ? [spec.unit] : [])))].filter(
      (unit) => !this.#limits.some((spec) => spec.kind === "window" && spec.unit === unit) && Number.isFinite(lowestRate(this.#limits, unit)),
    );
    if (units.length === 0) return false;
    const sentMs = this.#clock.now();
    const marker = await this.#call(() => this.#store.takeSet(this.key, Object.fromEntries(units.map((unit) => [unit, 0]))));
    if (!marker?.ok || !Number.isFinite(marker.waitMs)) return false;
    // The marker waits behind every lease reserved already: the key is held that long anyway.
    const moreMs = pauseMs - (this.#clock.now() - sentMs) - marker.waitMs;
    if (moreMs <= 0) return true;
    // What each unit's buckets hold now goes too: a full bucket would otherwise be only just empty at the pause's end.
    const reservation = marker.reservation!;
    const held = (unit: string) => Math.max(0, Math.min(...reservation.limits.flatMap((spec, i) => (spec.kind === "bucket" && spec.unit === unit ? [reservation.bucketLevels[i] ?? 0] : []))));
    const debt = Object.fromEntries(units.map((unit) => [unit, held(unit) + (lowestRate(this.#limits, unit) * moreMs) / 1000]));
    await this.#call(() => this.#store.settleSet(this.key, reservation, debt));
    return true;
  }

  /**
   * Lowers the key's buckets counting `unit` to at most `most`, for every
   * process on it: what the server said is left of its limit (DESIGN 13),
   * which counts every process's requests. The key's least level sets what
   * may go now, so every bucket of the unit gives up what that one holds
   * above `most`. Never raises a level. A unit a window counts too is left
   * (a debt there would hold its whole length). No round trip when the
   * least level cannot be above `most`: as this process last saw the
   * buckets, refilled since (what other processes give back aside), capped at their bursts.
   * Resolves to whether it lowered.
   */
  async capLevel(unit: CostUnit, most: number): Promise<boolean> {
    this.#throwIfFailed();
    this.#throwIfClosed();
    const indexes = this.#limits.flatMap((spec, i) => (spec.kind === "bucket" && spec.unit === unit ? [i] : []));
    if (!(most >= 0) || indexes.length === 0 || this.#limits.some((spec) => spec.kind === "window" && spec.unit === unit)) return false;
    if (Math.min(...indexes.map((i) => this.#bucketLevelAtMost(i))) <= most) return false;
    const marker = await this.#call(() => this.#store.takeSet(this.key, { [unit]: 0 }));
    if (!marker?.ok || !marker.reservation) return false;
    const reservation = marker.reservation;
    const excess = Math.min(...indexes.map((i) => reservation.bucketLevels[i] ?? 0)) - most;
    if (!(excess > 0)) return false;
    await this.#call(() => this.#store.settleSet(this.key, reservation, { [unit]: excess }));
    const nowMs = this.#clock.now();
    for (const i of indexes) this.#levels[i] = { level: (reservation.bucketLevels[i] ?? 0) - excess, atMs: nowMs };
    return true;
  }

  /** Bucket `index`'s level at most, without a round trip: as last seen, refilled since at its rate, at most its burst. */
  #bucketLevelAtMost(index: number): number {
    const spec = this.#limits[index] as LimitSpec & { kind: "bucket" };
    const known = this.#levels[index]!;
    return Math.min(spec.burst, known.level + (spec.rate * Math.max(0, this.#clock.now() - known.atMs)) / 1000);
  }

  /** Gives back an acquired item's slot. */
  async release(reservation: SetReservation | undefined): Promise<void> {
    if (!reservation || !this.#slots.delete(reservation)) return;
    if (this.#slots.size === 0) this.#stopRenewing();
    await this.#releaseSlot(reservation);
  }

  /** Gives back what is held: a lease cancelled or settled down to what was used, and every slot. Await it before closing the store. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stopRenewing();
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    await this.#taking?.catch(() => {});
    await this.#giveBackLease();
    for (const reservation of this.#slots) await this.#releaseSlot(reservation);
    this.#slots.clear();
  }

  #costsOf(n: number, costs: Costs | undefined): Record<string, number> {
    const item: Record<string, number> = { ...((costs ?? { [this.kind]: n }) as Record<string, number>) };
    for (const unit in item) {
      const cost = item[unit]!;
      if (typeof cost !== "number" || !(cost >= 0) || !Number.isFinite(cost)) throw new RangeError(`Expected \`${unit}\` cost to be a non-negative finite number, got \`${String(cost)}\``);
    }
    return item;
  }

  /** One wait at a time, in order (WaitLine); a caller that gives up before its turn leaves the line at once. */
  #serialize<T>(operation: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.#line.run(operation, signal);
  }

  /**
   * Takes the item's costs: from the lease when it holds them, else in a new
   * lease (a set with a concurrency limit: the item alone, with its slot),
   * then sleeps until they are due. The reservation when it holds a slot.
   */
  async #takeItem(costs: Record<string, number>, maxWaitMs: number, signal: AbortSignal | undefined): Promise<SetReservation | undefined | "refused"> {
    this.#throwIfFailed();
    this.#throwIfClosed();
    for (const unit in costs) {
      const most = mostAtOnce(this.#limits, unit);
      if (costs[unit]! > most) throw new ExceedsBurstError(costs[unit]!, most);
    }
    const slotted = this.#limits.some((spec) => spec.kind === "concurrency");
    let reservation: SetReservation | undefined;
    if (slotted || !this.#holds(costs)) {
      const aheadMs = Math.max(0, this.#readyAtMs - this.#clock.now());
      if (aheadMs > maxWaitMs) return "refused";
      const bounded = maxWaitMs !== Infinity;
      // A bounded wait asks for exactly what is missing: a refusal must take nothing.
      const lease = slotted || bounded ? this.#missing(costs) : this.#leaseFor(costs);
      const taken = await this.#take(lease, bounded ? maxWaitMs - aheadMs : Infinity, signal);
      if (taken === "refused") return "refused";
      if (slotted) reservation = taken;
    }
    try {
      await this.#sleepUntilReady(signal);
    } catch (error) {
      await this.#cancelLease();
      if (reservation) await this.#releaseSlot(reservation);
      throw error;
    }
    for (const unit in costs) this.#held.set(unit, (this.#held.get(unit) ?? 0) - costs[unit]!);
    return reservation;
  }

  #holds(costs: Record<string, number>): boolean {
    for (const unit in costs) if ((this.#held.get(unit) ?? 0) < costs[unit]!) return false;
    return true;
  }

  #missing(costs: Record<string, number>): Record<string, number> {
    const missing: Record<string, number> = {};
    for (const unit in costs) missing[unit] = Math.max(0, costs[unit]! - (this.#held.get(unit) ?? 0));
    return missing;
  }

  /** What is missing, rounded up to about `leaseMs` of each unit's lowest rate, at most what one take may cost. */
  #leaseFor(costs: Record<string, number>): Record<string, number> {
    const lease = this.#missing(costs);
    for (const unit in lease) {
      const rate = lowestRate(this.#limits, unit);
      const most = mostAtOnce(this.#limits, unit);
      if (rate === Infinity || lease[unit]! === 0) continue;
      lease[unit] = Math.max(lease[unit]!, Math.min(most, (rate * this.#leaseMs) / 1000));
    }
    return lease;
  }

  /** One take (asking again while no slot is free); the lease held and its ready time moved. */
  async #take(lease: Record<string, number>, maxWaitMs: number, signal: AbortSignal | undefined): Promise<SetReservation | "refused"> {
    // The lease before is due by now (waits are served in order), and what is left of it goes into this item.
    this.#lease = undefined;
    for (;;) {
      const sentMs = this.#clock.now();
      const taking = this.#call(() => this.#store.takeSet(this.key, lease, maxWaitMs === Infinity ? {} : { maxWaitMs }));
      this.#taking = taking;
      const result = await taking.finally(() => (this.#taking = undefined));
      if (!result) throw this.#fail(new StoreError("deleted", `key "${this.key}": deleted from ${this.#store.url} while in use`, { storeUrl: this.#store.url, key: this.key }));
      this.#lastContactMs = this.#clock.now();
      if (!sameLimits(this.#limits, result.limits)) {
        // The set changed (a `key set`): levels are known again at the next take, or as the new limits' capacity until then.
        this.#limits = result.limits;
        this.#levels = result.limits.map((spec) => ({ level: spec.kind === "bucket" ? spec.burst : spec.n, atMs: sentMs }));
        this.#takes.length = 0;
      }
      if (result.ok) {
        const reservation = result.reservation!;
        for (const unit in lease) this.#held.set(unit, (this.#held.get(unit) ?? 0) + lease[unit]!);
        const readyAtBeforeMs = this.#readyAtMs;
        this.#readyAtMs = Math.max(this.#readyAtMs, sentMs + result.waitMs);
        this.#noteTake(reservation, this.#readyAtMs);
        if (result.waitMs > 0 && Number.isFinite(result.waitMs)) this.#onWait?.(result.limitedBy, result.waitMs);
        this.#lease = { reservation, leased: { ...lease }, readyAtBeforeMs };
        return reservation;
      }
      if (!result.noSlot || maxWaitMs !== Infinity) return "refused";
      await this.#clock.sleep(this.#slotPollMs, signal);
      this.#throwIfClosed();
    }
  }

  async #sleepUntilReady(signal: AbortSignal | undefined): Promise<void> {
    const leftMs = this.#readyAtMs - this.#clock.now();
    if (leftMs > 0) await this.#clock.sleep(leftMs, signal);
  }

  /** The lease not yet due goes back to every limit; its slot goes with it. */
  async #cancelLease(): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    this.#lease = undefined;
    for (const unit in lease.leased) this.#held.set(unit, Math.max(0, (this.#held.get(unit) ?? 0) - lease.leased[unit]!));
    this.#readyAtMs = lease.readyAtBeforeMs;
    if (this.#failure) return;
    await this.#call(() => this.#store.cancelSet(this.key, lease.reservation)).catch(() => {});
  }

  /** At close: the last lease cancelled if not yet due, else settled down to what was used of it (what is held unused leaves every limit). */
  async #giveBackLease(): Promise<void> {
    const lease = this.#lease;
    if (!lease || this.#failure) return;
    if (this.#clock.now() < this.#readyAtMs) return this.#cancelLease();
    this.#lease = undefined;
    const used: Record<string, number> = {};
    let unused = false;
    for (const unit in lease.leased) {
      const left = Math.min(lease.leased[unit]!, Math.max(0, this.#held.get(unit) ?? 0));
      used[unit] = lease.leased[unit]! - left;
      if (left > 0) unused = true;
      this.#held.set(unit, (this.#held.get(unit) ?? 0) - left);
    }
    if (unused) await this.#call(() => this.#store.settleSet(this.key, lease.reservation, used)).catch(() => {});
  }

  async #releaseSlot(reservation: SetReservation | undefined): Promise<void> {
    if (!reservation?.holder) return;
    if (this.#lease?.reservation === reservation) this.#lease = undefined;
    if (this.#failure) return;
    await this.#call(() => this.#store.releaseSet(this.key, reservation)).catch(() => {});
  }

  #holdSlot(reservation: SetReservation): void {
    if (this.#lease?.reservation === reservation) this.#lease = undefined;
    this.#slots.add(reservation);
    if (this.#renewTimer) return;
    // Renewed three times a lease: one late renewal does not lose the slot.
    this.#renewTimer = setInterval(() => {
      for (const held of this.#slots) void this.#call(() => this.#store.renewSet(this.key, held)).catch(() => {});
    }, RENEW_EVERY_MS);
    this.#renewTimer.unref?.();
  }

  #stopRenewing(): void {
    if (this.#renewTimer) clearInterval(this.#renewTimer);
    this.#renewTimer = undefined;
  }

  /** One round trip; a failure stops the limiter. */
  async #call<T>(call: () => Promise<T>): Promise<T> {
    this.roundTrips++;
    try {
      return await call();
    } catch (error) {
      throw this.#fail(error);
    }
  }

  #fail(error: unknown): StoreError {
    if (this.#failure) return this.#failure;
    this.#failure =
      error instanceof StoreError
        ? error
        : new StoreError("lost", `store ${this.#store.url}: ${(error as Error)?.message ?? String(error)}`, { storeUrl: this.#store.url, key: this.key, cause: error });
    this.#stopRenewing();
    if (this.#pollTimer) clearInterval(this.#pollTimer);
    return this.#failure;
  }

  #throwIfFailed(): void {
    if (this.#failure) throw this.#failure;
  }

  #throwIfClosed(): void {
    if (this.#closed) throw new StoreError("closed", `key "${this.key}": the limiter was closed while waiting`, { storeUrl: this.#store.url, key: this.key });
  }
}

/** A third of the default slot lease (DEFAULT_SLOT_LEASE_MS). */
const RENEW_EVERY_MS = 10_000;
