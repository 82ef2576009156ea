/**
 * Wait percentiles with bounded memory. Waits are whole nanoseconds (the
 * core truncates them, as x/time/rate does). Zero waits are only counted.
 * The first EXACT_LIMIT non-zero waits are kept as they are, so percentiles
 * of runs up to four million waiting events are exact (nearest rank); past
 * that they move into a log-linear histogram with 1024 sub-buckets per power
 * of two, whose answers are within 0.1 % above the true value. Memory stays
 * under 32 MB whatever the number of events.
 */

/** How many non-zero waits are kept exactly, before they move into the histogram. */
export const EXACT_LIMIT = 2 ** 22;

const SUB_BUCKETS = 1024;
const LINEAR_LIMIT = 2 * SUB_BUCKETS;
const HISTOGRAM_SIZE = LINEAR_LIMIT + 44 * SUB_BUCKETS;

export class WaitStats {
  #count = 0;
  #zeros = 0;
  #maxNs = 0;
  #sumNs = 0;
  #values = new Float64Array(1024);
  #stored = 0;
  #histogram: Float64Array | undefined;

  constructor(readonly exactLimit = EXACT_LIMIT) {}

  /** Every admitted event's wait, zero included. */
  add(waitMs: number): void {
    this.#count++;
    const ns = Math.round(waitMs * 1e6);
    if (ns <= 0) {
      this.#zeros++;
      return;
    }
    if (ns > this.#maxNs) this.#maxNs = ns;
    this.#sumNs += ns;
    if (this.#histogram) {
      this.#histogram[histogramIndex(ns)]!++;
      return;
    }
    if (this.#stored === this.exactLimit) {
      this.#histogram = new Float64Array(HISTOGRAM_SIZE);
      for (let i = 0; i < this.#stored; i++) this.#histogram[histogramIndex(this.#values[i]!)]!++;
      this.#values = new Float64Array(0);
      this.#stored = 0;
      this.#histogram[histogramIndex(ns)]!++;
      return;
    }
    if (this.#stored === this.#values.length) {
      const grown = new Float64Array(Math.min(this.#values.length * 2, this.exactLimit));
      grown.set(this.#values);
      this.#values = grown;
    }
    this.#values[this.#stored++] = ns;
  }

  get count(): number {
    return this.#count;
  }

  get maxMs(): number {
    return this.#maxNs / 1e6;
  }

  get meanMs(): number {
    return this.#count === 0 ? 0 : this.#sumNs / this.#count / 1e6;
  }

  /** False once the waits overflowed into the histogram. */
  get exact(): boolean {
    return this.#histogram === undefined;
  }

  /** The nearest-rank quantile (0 < q ≤ 1) of the waits, in ms; 0 when there are none. */
  quantileMs(q: number): number {
    if (this.#count === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.#count - 1e-9));
    if (rank <= this.#zeros) return 0;
    let wanted = rank - this.#zeros;
    if (!this.#histogram) {
      // Selection, not a full sort: each quantile costs one pass over the waits.
      return selectNth(this.#values, this.#stored, wanted - 1) / 1e6;
    }
    for (let i = 0; i < this.#histogram.length; i++) {
      wanted -= this.#histogram[i]!;
      if (wanted <= 0) return Math.min(histogramUpperNs(i), this.#maxNs) / 1e6;
    }
    return this.maxMs;
  }
}

function exponentOf(ns: number): number {
  let exponent = Math.floor(Math.log2(ns));
  if (2 ** exponent > ns) exponent--;
  else if (2 ** (exponent + 1) <= ns) exponent++;
  return exponent;
}

/** Exact below 2048 ns; above, 1024 buckets per power of two. */
export function histogramIndex(ns: number): number {
  if (ns < LINEAR_LIMIT) return ns;
  const shift = exponentOf(ns) - 10;
  const mantissa = Math.floor(ns / 2 ** shift);
  return LINEAR_LIMIT + (shift - 1) * SUB_BUCKETS + (mantissa - SUB_BUCKETS);
}

/** The largest wait that falls in bucket `index`. */
export function histogramUpperNs(index: number): number {
  if (index < LINEAR_LIMIT) return index;
  const shift = Math.floor((index - LINEAR_LIMIT) / SUB_BUCKETS) + 1;
  const mantissa = ((index - LINEAR_LIMIT) % SUB_BUCKETS) + SUB_BUCKETS;
  return (mantissa + 1) * 2 ** shift - 1;
}

/**
 * The value that would be at index `n` if values[0..length) were sorted
 * (Hoare's quickselect, median-of-three pivots); reorders the values.
 */
export function selectNth(values: Float64Array, length: number, n: number): number {
  let low = 0;
  let high = length - 1;
  while (high > low) {
    const middle = (low + high) >>> 1;
    // Median of three as the pivot keeps sorted input (the usual queue) linear.
    const a = values[low]!;
    const b = values[middle]!;
    const c = values[high]!;
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
    let i = low;
    let j = high;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const swap = values[i]!;
        values[i] = values[j]!;
        values[j] = swap;
        i++;
        j--;
      }
    }
    if (n <= j) high = j;
    else if (n >= i) low = i;
    else return values[n]!;
  }
  return values[n]!;
}
