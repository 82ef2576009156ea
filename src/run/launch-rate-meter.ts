/**
 * Launch rates a user can hold against the limit. A token bucket lets at most
 * burst + rate × t launches through in any span of t, so launches counted
 * over the time they took read above the limit while the burst is spent
 * (20 launches at 5/s, burst 1, in 3.8 s are 5.26/s). Both figures here leave
 * the burst out and count intervals, not launches:
 *
 * - `steadyPerSecond()`, for --stats: the launches beyond the burst over the
 *   time from the first launch to the last. The bucket's envelope bounds it
 *   by the rate on every correct run, and it equals the rate when the limit
 *   set the pace. The first launch counts from when its token was asked for:
 *   a launch recorded late (the process descheduled after the grant) would
 *   shorten the span and lift the figure above the rate.
 * - `ratePerSecond(now)`, for the progress line: the same over the last
 *   `windowMs`, from the last launch before the window. A burst after an
 *   idle spell mid-run can read above the rate for one window.
 *
 * Keeps one timestamp per launch in the window, no more.
 */
export class LaunchRateMeter {
  /** The last launch before the window (the anchor), then every launch in it. */
  #times: number[] = [];
  /** Launches dropped before the anchor: 0 while the anchor is the run's first launch. */
  #dropped = 0;
  #count = 0;
  #firstMs: number | undefined;
  #lastMs: number | undefined;

  constructor(
    private readonly burst = 1,
    private readonly windowMs = 5000,
  ) {}

  /** A launch at `atMs`, whose token was asked for at `askedMs` (no later than its grant). */
  record(atMs: number, askedMs = atMs): void {
    this.#firstMs ??= Math.min(askedMs, atMs);
    this.#lastMs = atMs;
    this.#count++;
    this.#times.push(atMs);
  }

  /** Launches recorded. */
  get launches(): number {
    return this.#count;
  }

  /** Launches beyond the burst per second, first launch to last; undefined while every launch fits in the burst. */
  steadyPerSecond(): number | undefined {
    const beyond = this.#count - Math.max(1, this.burst);
    const spanMs = this.#lastMs! - this.#firstMs!;
    return beyond > 0 && spanMs > 0 ? (beyond * 1000) / spanMs : undefined;
  }

  /** Launches per second over the window ending at `nowMs`; 0 until two launches are apart. */
  ratePerSecond(nowMs: number): number {
    const fromMs = nowMs - this.windowMs;
    let drop = 0;
    while (drop + 1 < this.#times.length && this.#times[drop + 1]! < fromMs) drop++;
    if (drop > 0) {
      this.#times = this.#times.slice(drop);
      this.#dropped += drop;
    }
    const intervals = this.#times.length - 1;
    // Launches of the starting burst still after the anchor are not counted: they took no time.
    const beyond = intervals - Math.max(0, this.burst - 1 - this.#dropped);
    if (beyond <= 0) return 0;
    const anchorMs = this.#times[0]!;
    const spanMs = this.#times.at(-1)! - anchorMs;
    // Once no launch came for longer than the usual interval, the time since counts too: a stall reads as a falling rate.
    const elapsedMs = Math.max(spanMs, nowMs - anchorMs - spanMs / intervals);
    return elapsedMs > 0 ? (beyond * 1000) / elapsedMs : 0;
  }
}
