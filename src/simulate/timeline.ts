/**
 * Per-step totals over a timeline whose length is not known in advance (a
 * trace is read once, as a stream). Events are counted in fine slots of a
 * power-of-ten width; when the slots would pass FINE_SLOTS the width grows
 * tenfold and neighbours merge. At the end the fine slots are summed into
 * steps of a "nice" width (1, 2 or 5 times a power of ten) that gives 20 to
 * 60 rows, always a whole number of slots, so no event is split or moved.
 */

/** The most fine slots kept: one more and they widen tenfold. */
const FINE_SLOTS = 4000;

/**
 * The most rows a timeline is cut into: more than anyone reads, and each row
 * costs memory and output. A fixed step that would need more is refused
 * before the rows are made (see rowCount and smallestStepMs).
 */
export const MAX_ROWS = 100_000;

/**
 * A step too fine for the timeline: `rows` rows of `stepMs` over [0, endMs]
 * is more than MAX_ROWS; `smallestStepMs` is the smallest step that fits.
 */
export class TooManyRowsError extends RangeError {
  readonly code = "ETOOMANYROWS";
  readonly smallestStepMs: number;
  constructor(
    readonly endMs: number,
    readonly stepMs: number,
    readonly rows: number,
  ) {
    super(`Expected at most ${MAX_ROWS} rows, got ${rows} (step ${stepMs} ms over ${endMs} ms)`);
    this.name = "TooManyRowsError";
    this.smallestStepMs = smallestStepMs(endMs);
  }
}

/** Refuses `rows` rows of `stepMs` over [0, endMs] when they are more than MAX_ROWS. */
export function checkRowCount(endMs: number, stepMs: number, rows: number): void {
  if (rows > MAX_ROWS) throw new TooManyRowsError(endMs, stepMs, rows);
}

/** How many rows of `stepMs` cover [0, endMs]. */
export function rowCount(endMs: number, stepMs: number): number {
  return Math.max(1, Math.ceil(endMs / stepMs - 1e-9));
}

/**
 * The smallest step of one significant digit (4 s, 20 ms, 0.5 ms) that
 * covers [0, endMs] in at most `maxRows` rows, counting the row that an
 * event at endMs itself opens.
 */
export function smallestStepMs(endMs: number, maxRows = MAX_ROWS): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(endMs, 1e-9) / maxRows));
  for (let digit = 1; ; digit++) {
    const step = Number((digit * power).toPrecision(1));
    if (Math.floor(endMs / step) + 1 <= maxRows) return step;
  }
}

/** One row of the table, chart and plot. */
export interface Step {
  startMs: number;
  endMs: number;
  arrived: number;
  admitted: number;
  refused: number;
  admittedCost: number;
  refusedCost: number;
  /** The longest wait of an event admitted in the step (queue). */
  maxWaitMs: number;
  /** The last decision in the step: when and the level it left, for the level at the step's end. */
  lastDecisionMs: number;
  lastTokens: number;
}

export class Timeline {
  #widthMs: number;
  readonly #fixed: boolean;
  /** One more than the highest slot an event fell in, even past MAX_ROWS where nothing is kept. */
  #slotsNeeded = 0;
  #arrived: number[] = [];
  #admitted: number[] = [];
  #refused: number[] = [];
  #admittedCost: number[] = [];
  #refusedCost: number[] = [];
  #maxWaitMs: number[] = [];
  #lastDecisionMs: number[] = [];
  #lastTokens: number[] = [];

  /** With `stepMs` the slots are the steps; without, the width adapts. */
  constructor(stepMs?: number) {
    this.#fixed = stepMs !== undefined;
    this.#widthMs = stepMs ?? 1;
  }

  record(timeMs: number, cost: number, admitted: boolean, waitMs: number, tokens: number): void {
    let slot = Math.floor(timeMs / this.#widthMs);
    while (!this.#fixed && slot >= FINE_SLOTS) {
      this.#widen();
      slot = Math.floor(timeMs / this.#widthMs);
    }
    if (slot >= this.#slotsNeeded) this.#slotsNeeded = slot + 1;
    // A fixed step this fine is refused before the rows are made: memory stays bounded until then.
    if (slot >= MAX_ROWS) return;
    while (this.#arrived.length <= slot) this.#pushEmpty();
    this.#arrived[slot]!++;
    if (admitted) {
      this.#admitted[slot]!++;
      this.#admittedCost[slot]! += cost;
      if (waitMs > this.#maxWaitMs[slot]!) this.#maxWaitMs[slot] = waitMs;
    } else {
      this.#refused[slot]!++;
      this.#refusedCost[slot]! += cost;
    }
    this.#lastDecisionMs[slot] = timeMs;
    this.#lastTokens[slot] = tokens;
  }

  /** The width of the fine slots: any step must be a multiple of it. */
  get slotMs(): number {
    return this.#widthMs;
  }

  /** How many rows `steps` makes: [0, endMs], and the row of an event at endMs itself. */
  rows(endMs: number, stepMs: number): number {
    const perStep = Math.max(1, Math.round(stepMs / this.#widthMs));
    return Math.max(rowCount(endMs, stepMs), Math.ceil(this.#slotsNeeded / perStep));
  }

  /** Rows of `stepMs` (default: chosen for 20–60 rows) covering [0, endMs]; at most MAX_ROWS of them. */
  steps(endMs: number, stepMs = this.#fixed ? this.#widthMs : chooseStepMs(endMs, this.#widthMs)): Step[] {
    const perStep = Math.max(1, Math.round(stepMs / this.#widthMs));
    const rows = this.rows(endMs, stepMs);
    checkRowCount(endMs, stepMs, rows);
    const steps: Step[] = [];
    for (let row = 0; row < rows; row++) {
      const step: Step = {
        startMs: row * stepMs,
        endMs: (row + 1) * stepMs,
        arrived: 0,
        admitted: 0,
        refused: 0,
        admittedCost: 0,
        refusedCost: 0,
        maxWaitMs: 0,
        lastDecisionMs: NaN,
        lastTokens: NaN,
      };
      for (let slot = row * perStep; slot < (row + 1) * perStep && slot < this.#arrived.length; slot++) {
        if (this.#arrived[slot] === 0) continue;
        step.arrived += this.#arrived[slot]!;
        step.admitted += this.#admitted[slot]!;
        step.refused += this.#refused[slot]!;
        step.admittedCost += this.#admittedCost[slot]!;
        step.refusedCost += this.#refusedCost[slot]!;
        step.maxWaitMs = Math.max(step.maxWaitMs, this.#maxWaitMs[slot]!);
        step.lastDecisionMs = this.#lastDecisionMs[slot]!;
        step.lastTokens = this.#lastTokens[slot]!;
      }
      steps.push(step);
    }
    return steps;
  }

  #pushEmpty(): void {
    this.#arrived.push(0);
    this.#admitted.push(0);
    this.#refused.push(0);
    this.#admittedCost.push(0);
    this.#refusedCost.push(0);
    this.#maxWaitMs.push(0);
    this.#lastDecisionMs.push(NaN);
    this.#lastTokens.push(NaN);
  }

  #widen(): void {
    const merge = (values: number[], combine: (a: number, b: number) => number): number[] => {
      const merged: number[] = [];
      for (let i = 0; i < values.length; i += 10) {
        let value = values[i]!;
        for (let j = i + 1; j < Math.min(i + 10, values.length); j++) value = combine(value, values[j]!);
        merged.push(value);
      }
      return merged;
    };
    const sum = (a: number, b: number) => a + b;
    const last = (a: number, b: number) => (Number.isNaN(b) ? a : b);
    this.#arrived = merge(this.#arrived, sum);
    this.#admitted = merge(this.#admitted, sum);
    this.#refused = merge(this.#refused, sum);
    this.#admittedCost = merge(this.#admittedCost, sum);
    this.#refusedCost = merge(this.#refusedCost, sum);
    this.#maxWaitMs = merge(this.#maxWaitMs, Math.max);
    this.#lastDecisionMs = merge(this.#lastDecisionMs, last);
    this.#lastTokens = merge(this.#lastTokens, last);
    this.#widthMs *= 10;
    this.#slotsNeeded = Math.ceil(this.#slotsNeeded / 10);
  }
}

/** The smallest nice step (1, 2, 5 × 10^k ms, a multiple of `slotMs`) that covers `durationMs` in at most 60 rows. */
export function chooseStepMs(durationMs: number, slotMs = 1): number {
  const span = Math.max(durationMs, 1);
  for (let power = 1; ; power *= 10) {
    for (const factor of [1, 2, 5]) {
      const step = factor * power;
      if (step >= slotMs && Math.ceil(span / step - 1e-9) <= 60) return step;
    }
  }
}
