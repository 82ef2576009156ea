import type { Clock } from "../core/clock.js";

/**
 * The launch rate of `run --adaptive`: the configured rate is a ceiling, and
 * the rate actually used follows what the server lets through, by the rule of
 * the AWS SDKs' "adaptive" retry mode (a CUBIC congestion window, counted in
 * requests per second instead of packets in flight):
 *
 * - Until the first throttle the rate is the ceiling: nothing says it is too
 *   high yet.
 * - On a throttle, the rate the client was really sending at (the measured
 *   rate, no higher than the rate it was allowed) becomes Wmax, the rate known
 *   to be too high, and the new rate is β × Wmax with β = 0.7. Cutting from
 *   what was sent, not from the allowed rate, matters when the allowed rate
 *   was never reached (the jobs are slower than the limit).
 * - After it, the rate grows back along W(t) = C (t − K)³ + Wmax, t seconds
 *   since the last throttle, C = 0.4, K = ∛(Wmax (1 − β) / C): W(0) = β Wmax,
 *   fast at first, flat near Wmax (where the server throttled last), then
 *   faster again beyond it, probing for a limit that has risen.
 * - The rate never goes above the ceiling, nor grows past twice the measured
 *   rate (a client that sends less than it may must not grow a rate it never
 *   tries), nor falls below the floor.
 *
 * To plug into a bucket: `new AdaptiveRate(ceiling, clock, { onRate: (r) =>
 * bucket.setRate(r) })` (TokenBucket.setRate keeps the tokens gained so far),
 * then `record(throttled)` at each job's outcome.
 */
export interface AdaptiveRateOptions {
  /** β: the fraction of the measured rate kept at a throttle. */
  beta?: number;
  /** C: how fast the cubic grows back, in launches/s per s³. */
  scale?: number;
  /** The lowest rate, in launches/s; defaults to `defaultFloor(ceiling)`. */
  floor?: number;
  /** The measured rate's time bucket and smoothing; see SendRateMeter. */
  bucketMs?: number;
  smoothing?: number;
  /** Called with the new rate whenever an outcome changes it (e.g. a bucket's setRate). */
  onRate?: (rate: number) => void;
  /**
   * Cut once per round trip (default true; the AWS rule cuts at every
   * throttle): a throttle of a request sent before the last cut, or within a
   * round trip after it (the server still working off the excess), says
   * nothing new, so it does not cut again, as TCP cuts its window once per
   * window of losses. Cut at every throttle, the throttles already under way
   * compound the cut (0.7³ for three) and the rate settles far below the limit.
   */
  cutOncePerRoundTrip?: boolean;
  /**
   * Wmax from the rate allowed when the throttled request was sent (default
   * true), capped at twice the measured rate, rather than from the measured
   * rate alone (the AWS rule). The meter lags a rate that is growing: cut
   * from it, the rate settles on a plateau well below the server's limit.
   */
  maxFromSendRate?: boolean;
  /**
   * Wmax near the rate the server admitted over the last second (default
   * true; three quarters of the way down to it from the rate sent): at a
   * throttle the client is sending above the limit, so what got through is
   * about the limit itself, a closer bound than any rate sent. Cut from it,
   * the cubic's plateau sits near the server's limit rather than above it,
   * and a fallen limit is reached in fewer cuts.
   */
  maxFromAdmitted?: boolean;
}

export const AWS_BETA = 0.7;
export const AWS_SCALE = 0.4;

/**
 * 0.5 launches/s, the least rate the AWS SDKs' adaptive mode keeps, so that
 * outcomes keep coming and the rate can learn the server has recovered; never
 * above the ceiling (a ceiling of 6/m stays 0.1/s).
 */
export function defaultFloor(ceiling: number): number {
  return Math.min(ceiling, 0.5);
}

export class AdaptiveRate {
  readonly ceiling: number;
  readonly floor: number;
  readonly meter: SendRateMeter;
  readonly #beta: number;
  readonly #scale: number;
  readonly #clock: Clock;
  readonly #onRate: ((rate: number) => void) | undefined;
  #rate: number;
  /** Wmax, the rate at the last throttle; undefined before the first. */
  #maxRate: number | undefined;
  /** K, the seconds the cubic takes to climb back to Wmax. */
  #kSeconds = 0;
  #lastThrottleMs = 0;
  /** From the last cut's throttled request to its answer: throttles of requests sent within it after the cut are its echo. */
  #lastRoundTripMs = 0;
  readonly #cutOnce: boolean;
  readonly #maxFromSendRate: boolean;
  readonly #maxFromAdmitted: boolean;
  readonly #admitted: AdmittedRateMeter;
  /** The rates allowed lately and since when, oldest first: what a request sent then was allowed. */
  readonly #history: Array<{ sinceMs: number; rate: number }> = [];

  constructor(ceiling: number, clock: Clock, options: AdaptiveRateOptions = {}) {
    if (!(ceiling > 0)) throw new RangeError(`Expected \`ceiling\` to be a positive rate, got \`${ceiling}\``);
    this.ceiling = ceiling;
    this.floor = Math.min(ceiling, options.floor ?? defaultFloor(ceiling));
    this.#beta = options.beta ?? AWS_BETA;
    this.#scale = options.scale ?? AWS_SCALE;
    this.#clock = clock;
    this.#onRate = options.onRate;
    // All three on by default; bench/adaptive.mjs sets each rule against the AWS one (figures in docs/benchmarks.md).
    this.#cutOnce = options.cutOncePerRoundTrip ?? true;
    this.#maxFromSendRate = options.maxFromSendRate ?? true;
    this.#maxFromAdmitted = options.maxFromAdmitted ?? true;
    this.#admitted = new AdmittedRateMeter(clock.now());
    this.meter = new SendRateMeter(clock.now(), options.bucketMs, options.smoothing);
    this.#rate = ceiling;
    this.lowest = ceiling;
    this.#history.push({ sinceMs: clock.now(), rate: ceiling });
  }

  /** Launches per second to allow now. */
  get rate(): number {
    return this.#rate;
  }

  /** Throttles recorded, and the cuts they made (an echo of the last cut makes none). */
  throttles = 0;
  cuts = 0;
  /** The lowest rate allowed so far. */
  lowest: number;

  /** Wmax, K (seconds) and the last throttle's time, for --stats; undefined before the first throttle. */
  get cubic(): { maxRate: number; kSeconds: number; lastThrottleMs: number } | undefined {
    if (this.#maxRate === undefined) return undefined;
    return { maxRate: this.#maxRate, kSeconds: this.#kSeconds, lastThrottleMs: this.#lastThrottleMs };
  }

  onSuccess(): number {
    return this.record(false);
  }

  onThrottle(): number {
    return this.record(true);
  }

  /**
   * One job's outcome, at the clock's time, `sentAtMs` when its request went
   * (its launch); returns the new rate.
   */
  record(throttled: boolean, sentAtMs?: number): number {
    const nowMs = this.#clock.now();
    const measured = this.meter.record(nowMs);
    if (throttled) this.throttles++;
    else this.#admitted.record(nowMs);
    let next: number;
    if (throttled && this.#cutOnce && this.#maxRate !== undefined && sentAtMs !== undefined && sentAtMs < this.#lastThrottleMs + this.#lastRoundTripMs) {
      // Sent before the last cut, or within a round trip after it while the server still worked off the excess: answered by it.
      return this.#rate;
    }
    if (throttled) {
      // What was really sent, and never more than was allowed: the smoothed
      // meter still remembers a faster past for a moment after a cut.
      let sent = this.#maxFromSendRate && sentAtMs !== undefined ? Math.min(this.#rateAt(sentAtMs), 2 * measured) : Math.min(measured, this.#rate);
      if (this.#maxFromAdmitted) sent = admittedWeight * Math.min(sent, this.#admitted.rateAt(nowMs)) + (1 - admittedWeight) * sent;
      this.#maxRate = sent;
      this.#kSeconds = Math.cbrt((sent * (1 - this.#beta)) / this.#scale);
      this.cuts++;
      this.#lastThrottleMs = nowMs;
      this.#lastRoundTripMs = sentAtMs === undefined ? 0 : Math.max(0, nowMs - sentAtMs);
      next = sent * this.#beta;
    } else if (this.#maxRate === undefined) {
      next = this.ceiling;
    } else {
      const t = (nowMs - this.#lastThrottleMs) / 1000;
      next = this.#scale * (t - this.#kSeconds) ** 3 + this.#maxRate;
      // Grown no faster than twice what is sent (a rate never tried is not known good), but not cut by it: a run
      // paused by the server sends nothing for a while, and that says nothing about the rate.
      next = Math.min(next, Math.max(this.#rate, 2 * measured));
    }
    next = Math.max(this.floor, Math.min(this.ceiling, next));
    if (next !== this.#rate) {
      this.#rate = next;
      this.lowest = Math.min(this.lowest, next);
      this.#history.push({ sinceMs: nowMs, rate: next });
      // A request's answer comes within seconds: older rates are not asked for.
      while (this.#history.length > 2 && this.#history[1]!.sinceMs < nowMs - HISTORY_MS) this.#history.shift();
      this.#onRate?.(next);
    }
    return next;
  }

  /** The rate allowed at `atMs` (the oldest kept, for an instant before it). */
  #rateAt(atMs: number): number {
    for (let i = this.#history.length - 1; i >= 0; i--) if (this.#history[i]!.sinceMs <= atMs) return this.#history[i]!.rate;
    return this.#history[0]!.rate;
  }
}

/**
 * Successes per second over about the last second: counted in ten slots of
 * 100 ms, over the time from the oldest slot's start (or the meter's, if
 * later) to now.
 */
export class AdmittedRateMeter {
  static readonly SLOT_MS = 100;
  static readonly SLOTS = 10;
  readonly #counts = new Array<number>(AdmittedRateMeter.SLOTS).fill(0);
  #slot: number;
  readonly #startMs: number;

  constructor(startMs: number) {
    this.#startMs = startMs;
    this.#slot = Math.floor(startMs / AdmittedRateMeter.SLOT_MS);
  }

  record(nowMs: number): void {
    this.#advance(nowMs);
    this.#counts[this.#slot % AdmittedRateMeter.SLOTS]!++;
  }

  rateAt(nowMs: number): number {
    this.#advance(nowMs);
    const oldestSlotMs = (this.#slot - AdmittedRateMeter.SLOTS + 1) * AdmittedRateMeter.SLOT_MS;
    const windowMs = nowMs - Math.max(oldestSlotMs, this.#startMs);
    if (windowMs <= 0) return Infinity;
    let count = 0;
    for (const n of this.#counts) count += n;
    return (count * 1000) / windowMs;
  }

  #advance(nowMs: number): void {
    const slot = Math.floor(nowMs / AdmittedRateMeter.SLOT_MS);
    for (let next = this.#slot + 1; next <= slot && next <= this.#slot + AdmittedRateMeter.SLOTS; next++) this.#counts[next % AdmittedRateMeter.SLOTS] = 0;
    this.#slot = Math.max(this.#slot, slot);
  }
}

/**
 * With maxFromAdmitted, Wmax lies this far from the rate sent towards the
 * rate admitted: the admitted rate is the server's limit only while the
 * client sent above it for the whole second, and reads low when it did not
 * (just after a cut). Three quarters: bench/adaptive.mjs's fewest refusals
 * after a fall of the limit, at the same throughput, of 1/2, 3/4 and all the way.
 */
const admittedWeight = 0.75;

/** How long the allowed rates are kept for `maxFromSendRate`. */
const HISTORY_MS = 30_000;

/**
 * The rate outcomes arrive at, as the AWS adaptive mode measures it: counted
 * over fixed time buckets (0.5 s), and when a bucket closes its rate is mixed
 * into the estimate with weight `smoothing` (0.8), the old estimate keeping
 * the rest. A quick estimate that one odd bucket does not throw.
 *
 * Before the first bucket closes there is no estimate yet; the rate is then
 * what was counted over the time since the start, so that a throttle in the
 * first half second cuts from what was sent rather than from nothing.
 */
export class SendRateMeter {
  #rate = 0;
  #closedAny = false;
  #count = 0;
  readonly #startMs: number;
  #bucketStartMs: number;

  constructor(
    startMs: number,
    private readonly bucketMs = 500,
    private readonly smoothing = 0.8,
  ) {
    this.#startMs = startMs;
    this.#bucketStartMs = Math.floor(startMs / bucketMs) * bucketMs;
  }

  /** One outcome at `nowMs`; returns the measured rate, per second. */
  record(nowMs: number): number {
    this.#count++;
    const bucketStart = Math.floor(nowMs / this.bucketMs) * this.bucketMs;
    if (bucketStart > this.#bucketStartMs) {
      const bucketRate = (this.#count * 1000) / (bucketStart - this.#bucketStartMs);
      this.#rate = this.#closedAny ? this.smoothing * bucketRate + (1 - this.smoothing) * this.#rate : bucketRate;
      this.#closedAny = true;
      this.#count = 0;
      this.#bucketStartMs = bucketStart;
      return this.#rate;
    }
    if (this.#closedAny) return this.#rate;
    const spanMs = nowMs - this.#startMs;
    return spanMs > 0 ? (this.#count * 1000) / spanMs : Infinity;
  }

  /** The estimate as of the last closed bucket; 0 before one closes. */
  get rate(): number {
    return this.#rate;
  }
}
