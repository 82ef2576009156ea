/** A window's records (time, cost), oldest first, the latest present it was told, and the sum of the costs as it kept it. */
export interface SlidingWindowState {
  clockMs: number;
  times: number[];
  costs: number[];
  /**
   * The running sum, as the window added and took away (with fractional
   * costs it may differ from a fresh sum in the last bit): a window made again
   * from its state decides exactly as the one it came from. Summed afresh when absent.
   */
  sum?: number;
}

/**
 * SlidingWindow admits at most `limit` units in any interval of length
 * `windowMs`: sliding and exact, not a fixed window and not a bucket of burst
 * `limit` (both let 2 x limit through across a boundary).
 *
 * It keeps a record (time, cost) of every admission that can still matter,
 * oldest first, in a ring that grows by doubling (never shrinking: its
 * capacity is at most twice the most records it held). An item of cost c admits at
 * t when the costs recorded in (t - windowMs, t] plus c are at most `limit`.
 * A record stops mattering at its time + windowMs and is dropped by
 * `pruneAt` once the present is past that; records at the same instant
 * are merged and zero costs are not recorded, so with costs of at least 1
 * no window length holds more than `limit` records: at most `limit` records
 * in all while nothing is queued, and `limit` per window length between the
 * present and the latest reservation while a queue reaches ahead (those are
 * promises a cancel must be able to take back).
 *
 * Records are made in time order (a limit set takes its items first come,
 * first served, at non-decreasing instants), so an item never fits before
 * the latest record. Asked about a time earlier than one it was asked about
 * before, the window answers for the later one: its time never runs backwards.
 */
export class SlidingWindow {
  readonly limit: number;
  readonly windowMs: number;
  #times = new Float64Array(4);
  #costs = new Float64Array(4);
  /** Index of the oldest record; the ring's capacity is a power of two. */
  #head = 0;
  #count = 0;
  /** The costs of every record held. */
  #sum = 0;
  /**
   * How many of the oldest records, and what they cost, have already left
   * the window as of the latest record: no item can be admitted before that
   * record (first come, first served), so they count for none. Without it a
   * queue reaching far ahead would make every decision walk every record.
   */
  #frontier = 0;
  #outSum = 0;
  /** The latest present the window was pruned at. */
  #clockMs = -Infinity;

  constructor(limit: number, windowMs: number, state?: SlidingWindowState) {
    if (typeof limit !== "number" || !Number.isFinite(limit) || limit < 0) {
      throw new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${limit}\` (${typeof limit})`);
    }
    if (typeof windowMs !== "number" || !(windowMs > 0) || !Number.isFinite(windowMs)) {
      throw new RangeError(`Expected \`windowMs\` to be a positive finite number, got \`${windowMs}\` (${typeof windowMs})`);
    }
    this.limit = limit;
    this.windowMs = windowMs;
    if (state) this.#restore(state);
  }

  /** The window's records, oldest first, and its present: to make it again with the constructor's `state` (a store keeps it between steps). */
  state(): SlidingWindowState {
    const mask = this.#times.length - 1;
    const times: number[] = [];
    const costs: number[] = [];
    for (let i = 0; i < this.#count; i++) {
      times.push(this.#times[(this.#head + i) & mask]!);
      costs.push(this.#costs[(this.#head + i) & mask]!);
    }
    return { clockMs: this.#clockMs, times, costs, sum: this.#sum };
  }

  #restore(state: SlidingWindowState): void {
    const { clockMs, times, costs } = state;
    if (typeof clockMs !== "number" || Number.isNaN(clockMs) || !Array.isArray(times) || !Array.isArray(costs) || times.length !== costs.length) {
      throw new RangeError("Expected a window's `state` to have a `clockMs` and as many `times` as `costs`");
    }
    this.#clockMs = clockMs;
    for (let i = 0; i < times.length; i++) {
      const time = times[i]!;
      const cost = costs[i]!;
      if (!Number.isFinite(time) || !Number.isFinite(cost) || cost < 0 || (i > 0 && time <= times[i - 1]!)) {
        throw new RangeError(`Expected a window's records in time order with finite costs, got (${time}, ${cost}) at ${i}`);
      }
      if (this.#count === this.#times.length) this.#grow();
      this.#times[this.#count] = time;
      this.#costs[this.#count] = cost;
      this.#count++;
      this.#sum += cost;
    }
    if (state.sum !== undefined) {
      if (typeof state.sum !== "number" || !Number.isFinite(state.sum)) throw new RangeError(`Expected a window's \`sum\` to be a finite number, got \`${state.sum}\``);
      this.#sum = state.sum;
    }
  }

  /** How many records are held (the memory bound's measure). */
  get records(): number {
    return this.#count;
  }

  /** The time of the latest record; -Infinity when there is none. */
  get latestMs(): number {
    return this.#count === 0 ? -Infinity : this.#times[(this.#head + this.#count - 1) & (this.#times.length - 1)]!;
  }

  /**
   * The earliest time from `nowMs` on at which an item of `cost` fits:
   * `nowMs` itself when it fits now, else the time the oldest records that
   * must leave have left; Infinity when cost exceeds the limit. Since records
   * only leave as time goes on, once it fits it fits at every later time.
   * A pure read: `nowMs` may be in the future.
   */
  earliestAt(nowMs: number, cost: number): number {
    if (cost > this.limit) return Infinity;
    // No earlier than the latest record: items are taken first come, first served.
    const latest = this.latestMs;
    let t = nowMs > this.#clockMs ? nowMs : this.#clockMs;
    if (latest > t) t = latest;
    // The sum may still hold records gone by t when t is past the latest record: the walk skips them.
    let remaining = this.#sum - this.#outSum;
    if (remaining + cost <= this.limit) return t;
    const mask = this.#times.length - 1;
    for (let i = this.#frontier; i < this.#count; i++) {
      const index = (this.#head + i) & mask;
      remaining -= this.#costs[index]!;
      // The window (s - W, s] no longer holds this record from s = its time + W on.
      if (remaining + cost <= this.limit) {
        const leftMs = this.#times[index]! + this.windowMs;
        return leftMs > t ? leftMs : t;
      }
    }
    return Infinity;
  }

  /**
   * The earliest time from `nowMs` on at which the window would have room
   * for `amount`, taking nothing: `earliestAt` while `amount` fits in the
   * window at all; beyond its limit, each further `limit` units one window
   * length later (n + 1 items in a row span more than a window). For cost-1
   * items, `roomAt(t, k)` is when the k-th next one could go: the k-th next
   * of its oldest records leaves, and no sooner whatever else is taken.
   */
  roomAt(nowMs: number, amount: number): number {
    if (!(amount > 0)) return Math.max(nowMs, this.#clockMs);
    if (!(this.limit > 0)) return Infinity;
    const periods = amount > this.limit ? Math.ceil(amount / this.limit) - 1 : 0;
    return this.earliestAt(nowMs, amount - periods * this.limit) + periods * this.windowMs;
  }

  /** Records `cost` at `atMs`, which is no earlier than the latest record. */
  recordAt(atMs: number, cost: number): void {
    if (!(cost > 0)) return;
    const mask = this.#times.length - 1;
    if (this.#count > 0) {
      const last = (this.#head + this.#count - 1) & mask;
      if (this.#times[last] === atMs) {
        this.#costs[last] = this.#costs[last]! + cost;
        this.#sum += cost;
        return;
      }
    }
    if (this.#count === this.#times.length) this.#grow();
    const index = (this.#head + this.#count) & (this.#times.length - 1);
    this.#times[index] = atMs;
    this.#costs[index] = cost;
    this.#count++;
    this.#sum += cost;
    this.#advanceFrontier(atMs);
  }

  /**
   * Corrects the record at `atMs` by `delta` (an item settled or cancelled):
   * never below zero; nothing when the record has already left the window.
   */
  adjustAt(atMs: number, delta: number): void {
    const index = this.#find(atMs);
    if (index < 0) return;
    const before = this.#costs[index]!;
    const after = Math.max(0, before + delta);
    this.#costs[index] = after;
    this.#sum += after - before;
    const mask = this.#times.length - 1;
    if (((index - this.#head) & mask) < this.#frontier) this.#outSum += after - before;
    // A forgotten latest record no longer holds later items back: the window as of the new latest takes back what it holds.
    let popped = false;
    while (this.#count > 0 && this.#costs[(this.#head + this.#count - 1) & mask] === 0) {
      this.#count--;
      popped = true;
    }
    if (popped) {
      // What is popped costs nothing, so what it added to the records out of the window was nothing.
      if (this.#frontier > this.#count) this.#frontier = this.#count;
      const latest = this.latestMs;
      while (this.#frontier > 0 && this.#times[(this.#head + this.#frontier - 1) & mask]! + this.windowMs > latest) {
        this.#frontier--;
        this.#outSum -= this.#costs[(this.#head + this.#frontier) & mask]!;
      }
    }
    if (this.#count === 0 || this.#sum < 0) this.#sum = this.#outSum = this.#frontier = 0;
  }

  /** The room left at `nowMs`: the limit less every record still in the window then, including ones due later. */
  remainingAt(nowMs: number): number {
    const t = Math.max(nowMs, this.#clockMs);
    const mask = this.#times.length - 1;
    let held = this.#sum;
    for (let i = 0; i < this.#count; i++) {
      const index = (this.#head + i) & mask;
      if (this.#times[index]! + this.windowMs > t) break;
      held -= this.#costs[index]!;
    }
    return this.limit - held;
  }

  /**
   * Drops the records that left the window by `nowMs`, the present (clamped
   * to the latest present it was told), and answers that time. Only the
   * present counts: pruning at a reservation's later time would lose records
   * the window needs again if that reservation is refused or cancelled.
   */
  pruneAt(nowMs: number): number {
    const t = nowMs > this.#clockMs ? nowMs : this.#clockMs;
    this.#clockMs = t;
    const mask = this.#times.length - 1;
    while (this.#count > 0 && this.#times[this.#head]! + this.windowMs <= t) {
      const cost = this.#costs[this.#head]!;
      this.#sum -= cost;
      if (this.#frontier > 0) {
        this.#frontier--;
        this.#outSum -= cost;
      }
      this.#head = (this.#head + 1) & mask;
      this.#count--;
    }
    // Subtraction can leave a trace of rounding when costs are fractional; an empty window holds nothing.
    if (this.#count === 0) this.#sum = this.#outSum = 0;
    return t;
  }

  /** Moves the frontier past the records that left the window as of a new latest record at `latestMs`. */
  #advanceFrontier(latestMs: number): void {
    const mask = this.#times.length - 1;
    while (this.#frontier < this.#count) {
      const index = (this.#head + this.#frontier) & mask;
      if (this.#times[index]! + this.windowMs > latestMs) return;
      this.#outSum += this.#costs[index]!;
      this.#frontier++;
    }
  }

  /** The ring index of the record made at `atMs`, by binary search; -1 when none is held. */
  #find(atMs: number): number {
    const mask = this.#times.length - 1;
    let low = 0;
    let high = this.#count - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const time = this.#times[(this.#head + middle) & mask]!;
      if (time === atMs) return (this.#head + middle) & mask;
      if (time < atMs) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  #grow(): void {
    const capacity = this.#times.length * 2;
    const times = new Float64Array(capacity);
    const costs = new Float64Array(capacity);
    const mask = this.#times.length - 1;
    for (let i = 0; i < this.#count; i++) {
      times[i] = this.#times[(this.#head + i) & mask]!;
      costs[i] = this.#costs[(this.#head + i) & mask]!;
    }
    this.#times = times;
    this.#costs = costs;
    this.#head = 0;
  }
}
