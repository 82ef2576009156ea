import { type Clock, systemClock } from "./clock.js";

/** Waits below one nanosecond count as no wait, as in golang.org/x/time/rate. */
const NS_PER_MS = 1e6;

export interface TokenBucketOptions {
  /** Tokens added per second; `Infinity` admits everything, 0 adds nothing (the burst, then nothing). */
  rate: number;
  /** Capacity: the most tokens the bucket holds, and the largest single request; ignored at an infinite rate. */
  burst: number;
  /**
   * Tokens at the start; the bucket starts full by default. A negative level
   * is a debt owed to reservations due when it is repaid (a stored bucket).
   */
  tokens?: number;
  /** The clock used by the methods without an explicit time. */
  clock?: Clock;
  /**
   * The whole state a bucket had (`state()`), to go on from it: a store
   * keeps it between steps. Overrides `tokens`; its level is at most the burst.
   */
  state?: TokenBucketState;
}

/** What a bucket holds besides its settings: the level at `lastMs`, and the latest time to act of a reservation (what cancelling measures from). */
export interface TokenBucketState {
  tokens: number;
  lastMs: number;
  lastEventMs: number;
}

/**
 * The answer to a reservation. When `ok` is false nothing was taken and
 * `waitMs` is Infinity: the request can never be met (more than the burst)
 * or would wait longer than the caller's limit. At a rate of 0 a reservation
 * beyond the level is granted with an infinite wait, as in x/time/rate: its
 * tokens are owed, and are repaid once the rate is raised.
 */
export class Reservation {
  constructor(
    readonly ok: boolean,
    /** Tokens taken. */
    readonly tokens: number,
    /** When the caller may act, on the bucket's clock. */
    readonly timeToActMs: number,
    /** How long after the reservation the caller may act. */
    readonly waitMs: number,
    /** The rate when the reservation was made: cancelling gives back tokens at this rate. */
    readonly rate: number,
  ) {}

  /** How long after `nowMs` the caller may act: 0 to act at once, Infinity when not ok. */
  delayFrom(nowMs: number): number {
    if (!this.ok) return Infinity;
    return Math.max(0, this.timeToActMs - nowMs);
  }
}

/** What `cancelAt` needs of a reservation, so a stored one can be given back too. */
export type ReservationRecord = Pick<Reservation, "ok" | "tokens" | "timeToActMs" | "rate">;

/** Thrown (or rejected) by `wait` when a request can never be granted. */
export class ExceedsBurstError extends RangeError {
  readonly code = "EXCEEDS_BURST";
  constructor(
    /** What was asked for, and the most that can ever be granted at once. */
    readonly n: number,
    readonly burst: number,
  ) {
    super(`Requested ${n} tokens, more than the burst of ${burst}: this can never be granted`);
    this.name = "ExceedsBurstError";
  }
}

/** Rejected by `waitWithDeadline` when the tokens would not be due by the deadline: nothing was taken. */
export class ExceedsDeadlineError extends RangeError {
  readonly code = "EXCEEDS_DEADLINE";
  constructor(n: number, deadlineMs: number) {
    super(`Waiting for ${n} tokens would pass the deadline (${deadlineMs} ms on the bucket's clock)`);
    this.name = "ExceedsDeadlineError";
  }
}

/** The rate of one token every `intervalMs`; an interval of 0 or less is no limit (x/time/rate's Every). */
export function every(intervalMs: number): number {
  if (typeof intervalMs !== "number" || Number.isNaN(intervalMs)) {
    throw new RangeError(`Expected \`intervalMs\` to be a number, got \`${intervalMs}\` (${typeof intervalMs})`);
  }
  return intervalMs <= 0 ? Infinity : 1000 / intervalMs;
}

/**
 * TokenBucket is a token bucket with the semantics of golang.org/x/time/rate.
 *
 * The bucket holds up to `burst` tokens and gains `rate` tokens a second. It
 * starts full. Refill is lazy: the level is worked out from the elapsed time
 * whenever it is asked for, so an idle bucket costs nothing. Tokens are
 * fractional; time that runs backwards is clamped, never credited.
 *
 * Three ways to consume:
 * - `allow(n)` takes n tokens if they are there, and otherwise changes nothing
 *   and says no. Use it to drop or refuse work.
 * - `reserve(n)` always takes n tokens (unless n > burst), letting the level go
 *   negative, and says how long to wait before acting. Reservations are served
 *   first come, first served; `cancel` gives a reservation's tokens back. With
 *   a wait limit it refuses, changing nothing, when the wait would be longer.
 * - `wait(n, signal)` reserves and sleeps; aborting the signal cancels.
 *   `waitWithDeadline` refuses at once when the tokens would come too late.
 *
 * A rate of 0 adds nothing: what the bucket holds can be taken, then every
 * wait lasts until it is aborted (`setRate(0)` pauses new reservations; one
 * made before keeps its time to act). A burst of 0 admits nothing unless the
 * rate is infinite.
 *
 * Every method has an `...At(nowMs)` twin that takes the time explicitly; the
 * short forms read the injected clock.
 */
export class TokenBucket {
  #rate: number;
  #burst: number;
  #tokens: number;
  /** When #tokens was last brought up to date. */
  #lastMs: number;
  /** The latest time to act of any reservation: cancelling the last one may rewind it. */
  #lastEventMs: number;
  readonly clock: Clock;

  constructor(options: TokenBucketOptions) {
    this.clock = options.clock ?? systemClock;
    this.#rate = checkRate(options.rate);
    this.#burst = checkBurst(options.burst);
    const state = options.state;
    const start = state?.tokens ?? options.tokens ?? this.#burst;
    if (!Number.isFinite(start) || start > this.#burst) {
      throw new RangeError(`Expected \`tokens\` to be a finite number at most the burst, got \`${start}\``);
    }
    this.#tokens = start;
    if (state) {
      if (typeof state.lastMs !== "number" || !Number.isFinite(state.lastMs) || typeof state.lastEventMs !== "number" || Number.isNaN(state.lastEventMs)) {
        throw new RangeError(`Expected \`state\` to have a finite \`lastMs\` and a \`lastEventMs\`, got \`${state.lastMs}\`, \`${state.lastEventMs}\``);
      }
      this.#lastMs = state.lastMs;
      this.#lastEventMs = state.lastEventMs;
      return;
    }
    this.#lastMs = this.clock.now();
    // A bucket that starts in debt owes it to reservations due when the debt is repaid.
    this.#lastEventMs = this.#lastMs + (start < 0 ? durationMsFromTokens(-start, this.#rate) : 0);
  }

  /** The bucket's state, to make it again with the `state` option (a store keeps it between steps). */
  state(): TokenBucketState {
    return { tokens: this.#tokens, lastMs: this.#lastMs, lastEventMs: this.#lastEventMs };
  }

  get rate(): number {
    return this.#rate;
  }

  get burst(): number {
    return this.#burst;
  }

  /** The level at `nowMs`, without changing anything. */
  tokensAt(nowMs: number): number {
    if (this.#rate === Infinity) return this.#burst;
    return this.#levelAt(nowMs > this.#lastMs ? nowMs : this.#lastMs);
  }

  tokens(): number {
    return this.tokensAt(this.clock.now());
  }

  /** Takes `n` tokens at `nowMs` if the bucket holds them; otherwise changes nothing. */
  allowAt(nowMs: number, n = 1): boolean {
    return this.reserveAt(nowMs, n, 0).ok;
  }

  allow(n = 1): boolean {
    return this.allowAt(this.clock.now(), n);
  }

  /**
   * Takes `n` tokens at `nowMs`, going into debt if need be, and says when the
   * caller may act. Refuses, changing nothing, if `n` exceeds the burst or the
   * wait would exceed `maxWaitMs`.
   */
  reserveAt(nowMs: number, n = 1, maxWaitMs = Infinity): Reservation {
    checkCount(n);
    if (this.#rate === Infinity) {
      return new Reservation(true, n, nowMs, 0, Infinity);
    }
    const { nowMs: t, tokens: level } = this.#advance(nowMs);
    const tokens = level - n;
    const waitMs = tokens < 0 ? durationMsFromTokens(-tokens, this.#rate) : 0;
    if (n > this.#burst || waitMs > maxWaitMs) {
      return new Reservation(false, 0, Infinity, Infinity, this.#rate);
    }
    this.#lastMs = t;
    this.#tokens = tokens;
    this.#lastEventMs = t + waitMs;
    return new Reservation(true, n, t + waitMs, waitMs, this.#rate);
  }

  reserve(n = 1, maxWaitMs = Infinity): Reservation {
    return this.reserveAt(this.clock.now(), n, maxWaitMs);
  }

  /**
   * The earliest time, from `nowMs` on, at which `n` tokens could be taken
   * without waiting: the time to act `reserveAt(nowMs, n)` would answer,
   * read without changing anything (and without allocating). Infinity when n
   * exceeds the burst, or at a rate of 0 beyond the level.
   */
  earliestAt(nowMs: number, n: number): number {
    const t = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    return t + this.delayAt(t, n);
  }

  /** How long after `nowMs` (or the last update, if later) `reserveAt(nowMs, n)` would say to wait, without changing anything. */
  delayAt(nowMs: number, n: number): number {
    if (this.#rate === Infinity) return 0;
    if (n > this.#burst) return Infinity;
    const tokens = this.#levelAt(nowMs > this.#lastMs ? nowMs : this.#lastMs) - n;
    return tokens < 0 ? durationMsFromTokens(-tokens, this.#rate) : 0;
  }

  /**
   * Takes `n` tokens, asked at `nowMs`, for an item that acts at `actMs`,
   * no earlier than `earliestAt(nowMs, n)` (the caller checks: a limit set
   * acts at the latest of its limits' earliest times). The bucket gives what
   * it would hold at `actMs`: what it would gain past the burst while the
   * item waits for another limit is lost, so waiting banks nothing. At the
   * bucket's own earliest time this is exactly `reserveAt(nowMs, n)`.
   * Returns how far the level went down: n, and what the cap will cut off
   * (cancelling gives both back).
   */
  takeAt(nowMs: number, actMs: number, n: number): number {
    if (this.#rate === Infinity) return n;
    const t = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    const level = this.#levelAt(t);
    const short = level - n;
    const ownMs = short < 0 ? t + durationMsFromTokens(-short, this.#rate) : t;
    let tokens = short;
    if (actMs > ownMs && actMs < Infinity) {
      const ahead = tokensFromDurationMs(actMs - t, this.#rate);
      // Lower the level now by what the cap would cut off before actMs: at actMs it is then min(burst, ...) - n.
      if (level + ahead > this.#burst) tokens = this.#burst - ahead - n;
    }
    this.#lastMs = t;
    this.#tokens = tokens;
    this.#lastEventMs = actMs;
    return level - tokens;
  }

  /**
   * Corrects the level at `nowMs` by `tokens`: a negative correction is a
   * debt that later reservations wait for, a positive one is capped at the
   * burst (a cost settled lower than it was taken).
   */
  addTokensAt(nowMs: number, tokens: number): void {
    if (this.#rate === Infinity) return;
    const t = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    this.#tokens = Math.min(this.#levelAt(t) + tokens, this.#burst);
    this.#lastMs = t;
  }

  /**
   * Gives back what a reservation took, as far as later reservations allow:
   * tokens already spoken for by reservations made after it stay taken.
   * Cancelling after the time to act does nothing.
   */
  cancelAt(nowMs: number, reservation: ReservationRecord): void {
    if (!reservation.ok || reservation.tokens === 0 || this.#rate === Infinity) return;
    if (reservation.timeToActMs < nowMs) return;
    const laterTokens = tokensFromDurationMs(this.#lastEventMs - reservation.timeToActMs, reservation.rate);
    const restore = reservation.tokens - laterTokens;
    if (restore <= 0) return;
    const { nowMs: t, tokens } = this.#advance(nowMs);
    this.#lastMs = t;
    this.#tokens = Math.min(tokens + restore, this.#burst);
    if (reservation.timeToActMs === this.#lastEventMs) {
      const previousEventMs = reservation.timeToActMs - durationMsFromTokens(reservation.tokens, reservation.rate);
      if (previousEventMs >= t) this.#lastEventMs = previousEventMs;
    }
  }

  cancel(reservation: ReservationRecord): void {
    this.cancelAt(this.clock.now(), reservation);
  }

  /**
   * Waits until `n` tokens may be used, on the injected clock. Rejects with
   * ExceedsBurstError when n exceeds the burst; aborting cancels the reservation.
   */
  async wait(n = 1, signal?: AbortSignal): Promise<void> {
    await this.waitAt(this.clock.now(), n, signal);
  }

  /**
   * Waits for `n` tokens as if asked at `asOfMs` (no later than now), and
   * resolves to the time they were due. Times before the last update count as
   * the last update. Asking as of an earlier time credits the caller with time
   * it slept, so the window after it may exceed burst + rate x T.
   */
  async waitAt(asOfMs: number, n = 1, signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    const nowMs = this.clock.now();
    const reservation = this.reserveAt(Math.min(asOfMs, nowMs), n);
    if (!reservation.ok) throw new ExceedsBurstError(n, this.#burst);
    await this.#sleepUntilDue(reservation, nowMs, signal);
    return reservation.timeToActMs;
  }

  /**
   * Waits for `n` tokens unless that would take longer than `maxWaitMs`: then
   * resolves false at once, having taken nothing. Rejects with
   * ExceedsBurstError when n exceeds the burst; aborting cancels the reservation.
   */
  async tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    signal?.throwIfAborted();
    const nowMs = this.clock.now();
    const reservation = this.reserveAt(nowMs, n, maxWaitMs);
    if (!reservation.ok) {
      if (n > this.#burst && this.#rate !== Infinity) throw new ExceedsBurstError(n, this.#burst);
      return false;
    }
    await this.#sleepUntilDue(reservation, nowMs, signal);
    return true;
  }

  /**
   * Waits for `n` tokens if they are due by `deadlineMs` on the bucket's
   * clock; otherwise rejects at once with ExceedsDeadlineError, having taken
   * nothing (x/time/rate's "would exceed context deadline"). Rejects with
   * ExceedsBurstError when n exceeds the burst; aborting cancels the reservation.
   */
  async waitWithDeadline(n: number, deadlineMs: number, signal?: AbortSignal): Promise<void> {
    if (typeof deadlineMs !== "number" || Number.isNaN(deadlineMs)) {
      throw new RangeError(`Expected \`deadlineMs\` to be a number, got \`${deadlineMs}\` (${typeof deadlineMs})`);
    }
    checkCount(n);
    if (n > this.#burst && this.#rate !== Infinity) throw new ExceedsBurstError(n, this.#burst);
    signal?.throwIfAborted();
    const nowMs = this.clock.now();
    const reservation = this.reserveAt(nowMs, n, deadlineMs - nowMs);
    if (!reservation.ok) throw new ExceedsDeadlineError(n, deadlineMs);
    await this.#sleepUntilDue(reservation, nowMs, signal);
  }

  async #sleepUntilDue(reservation: Reservation, nowMs: number, signal: AbortSignal | undefined): Promise<void> {
    const sleepMs = reservation.timeToActMs - nowMs;
    if (sleepMs <= 0) return;
    try {
      await this.clock.sleep(sleepMs, signal);
    } catch (error) {
      this.cancel(reservation);
      throw error;
    }
  }

  /** The time on this bucket's clock. */
  now(): number {
    return this.clock.now();
  }

  /** Changes the rate from `nowMs` on; tokens gained so far are kept. */
  setRateAt(nowMs: number, rate: number): void {
    checkRate(rate);
    const { nowMs: t, tokens } = this.#advance(nowMs);
    this.#lastMs = t;
    this.#tokens = tokens;
    this.#rate = rate;
  }

  setRate(rate: number): void {
    this.setRateAt(this.clock.now(), rate);
  }

  /** Changes the burst from `nowMs` on; a lower burst caps the level at once. */
  setBurstAt(nowMs: number, burst: number): void {
    checkBurst(burst);
    const { nowMs: t, tokens } = this.#advance(nowMs);
    this.#lastMs = t;
    this.#burst = burst;
    this.#tokens = Math.min(tokens, burst);
  }

  setBurst(burst: number): void {
    this.setBurstAt(this.clock.now(), burst);
  }

  /** The level brought up to `nowMs`; a time before the last update counts as the last update. */
  #advance(nowMs: number): { nowMs: number; tokens: number } {
    const t = Math.max(nowMs, this.#lastMs);
    if (this.#rate === Infinity) return { nowMs: t, tokens: this.#burst };
    return { nowMs: t, tokens: this.#levelAt(t) };
  }

  /** The level at `t`, no earlier than the last update, at a finite rate. */
  #levelAt(t: number): number {
    const tokens = this.#tokens + tokensFromDurationMs(t - this.#lastMs, this.#rate);
    return tokens < this.#burst ? tokens : this.#burst;
  }
}

/** Whole nanoseconds, truncated, as x/time/rate's durationFromTokens: under 1 ns is no wait; at rate 0, never. */
export function durationMsFromTokens(tokens: number, rate: number): number {
  if (rate <= 0) return Infinity;
  const ns = Math.trunc((tokens / rate) * 1e9);
  return ns / NS_PER_MS;
}

/** Tokens gained in `ms` at `rate`: none at rate 0, nor over no time (NaN, from infinite times, counts as none). */
export function tokensFromDurationMs(ms: number, rate: number): number {
  if (!(ms > 0) || rate <= 0) return 0;
  return (ms / 1000) * rate;
}

function checkRate(rate: number): number {
  if (typeof rate !== "number" || Number.isNaN(rate) || rate < 0) {
    throw new RangeError(`Expected \`rate\` to be a non-negative number or Infinity, got \`${rate}\` (${typeof rate})`);
  }
  return rate;
}

function checkBurst(burst: number): number {
  if (typeof burst !== "number" || !Number.isFinite(burst) || burst < 0) {
    throw new RangeError(`Expected \`burst\` to be a non-negative finite number, got \`${burst}\` (${typeof burst})`);
  }
  return burst;
}

/** Throws a RangeError unless `n` is a count of tokens a wait may ask for: finite and not negative. */
export function checkCount(n: number): void {
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${n}\` (${typeof n})`);
  }
}
