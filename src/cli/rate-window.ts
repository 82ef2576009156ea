/**
 * The rate of a growing total (bytes, lines) over the last stretch of time,
 * from samples taken as the progress line is drawn: the current rate over a
 * short window, and a longer, smoother one for the ETA (pv's rate window).
 * Time is a parameter, so a fake clock drives it in tests.
 */
export class RateWindow {
  #samples: Array<{ atMs: number; total: number }> = [];

  /** Keeps the samples of the last `keepMs`, the longest window asked for. */
  constructor(private readonly keepMs: number) {}

  record(atMs: number, total: number): void {
    this.#samples.push({ atMs, total });
    // One sample at or before the window's start stays, so the window is always covered.
    while (this.#samples.length > 2 && this.#samples[1]!.atMs <= atMs - this.keepMs) this.#samples.shift();
  }

  /** Per second over the last `windowMs` (or since the first sample, early on); 0 before two samples. */
  rateOver(windowMs: number): number {
    const last = this.#samples.at(-1);
    if (!last) return 0;
    const fromMs = last.atMs - windowMs;
    let first = this.#samples[0]!;
    for (const sample of this.#samples) {
      if (sample.atMs > fromMs) break;
      first = sample;
    }
    const spanMs = last.atMs - first.atMs;
    return spanMs > 0 ? ((last.total - first.total) * 1000) / spanMs : 0;
  }
}
