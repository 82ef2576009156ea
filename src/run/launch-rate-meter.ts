/**
 * The recent launch rate, for the progress line: launches within the last
 * `windowMs`, divided by the window (or by the time since the first launch,
 * early on). Keeps one timestamp per launch in the window, no more.
 */
export class LaunchRateMeter {
  #times: number[] = [];
  #firstMs: number | undefined;

  constructor(private readonly windowMs = 5000) {}

  record(atMs: number): void {
    this.#firstMs ??= atMs;
    this.#times.push(atMs);
  }

  /** Launches per second over the window ending at `nowMs`. */
  ratePerSecond(nowMs: number): number {
    const fromMs = nowMs - this.windowMs;
    let drop = 0;
    while (drop < this.#times.length && this.#times[drop]! < fromMs) drop++;
    if (drop > 0) this.#times = this.#times.slice(drop);
    if (this.#firstMs === undefined) return 0;
    const spanMs = Math.min(this.windowMs, nowMs - this.#firstMs);
    return spanMs > 0 ? (this.#times.length * 1000) / spanMs : 0;
  }
}
