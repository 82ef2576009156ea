// How a timed record of what a reader received holds up against the token-bucket envelope.

/**
 * The most received in any window beyond burst + rate × window, in bytes: `times` (ms) and
 * `totals` (bytes received by then) are the reader's arrivals in order.
 */
export function envelopeExcess({ times, totals }, rate, burst) {
  let worst = -Infinity;
  let minStart = Infinity;
  for (let j = 0; j < times.length; j++) {
    const before = j === 0 ? 0 : totals[j - 1];
    minStart = Math.min(minStart, before - (rate * times[j]) / 1000);
    worst = Math.max(worst, totals[j] - (rate * times[j]) / 1000 - minStart - burst);
  }
  return worst;
}
