import { type Clock, systemClock } from "./clock.js";
import { type ClassSpec, resolveClasses, type ResolvedClass, UnknownClassError } from "./class-spec.js";
import { LimitSet, type LimitSetState } from "./limit-set.js";
import type { CostUnit, Costs, LimitSpec } from "./limit-spec.js";
import { TokenBucket, type TokenBucketState } from "./token-bucket.js";

/** How a class was last served, or why not. */
export type ClassPath = "guarantee" | "borrow";
export type ClassRefusal = "ceil" | "parent" | "lending";

export interface ClassSchedulerOptions {
  clock?: Clock;
  /**
   * How long a class counts as asking after its last ask (its guarantee
   * bucket is kept back from lending, its mark holds its turn). Default the
   * larger of 1 s and twice the key's burst / rate: a class asking at its
   * guarantee with items no larger than its burst asks that often.
   */
  activeMs?: number;
  /** The time constant of the counters of what each class borrowed. Default 1 s. */
  decayMs?: number;
  /**
   * A scheduler's `state()`, to go on from it (a store keeps it between
   * steps). A class is matched by name: one new to the classes starts
   * afresh (its buckets full, no asks), one no longer defined is dropped.
   */
  state?: ClassSchedulerState;
}

/** One class's state: its two buckets, its last ask, its mark, and its counter of what it borrowed. */
export interface ClassState {
  name: string;
  guarantee: TokenBucketState;
  ceiling: TokenBucketState;
  askedMs: number;
  markMs: number;
  markCost: number;
  borrowed: number;
  borrowedMs: number;
  /** The decaying counter of all it was admitted (what `key show` and --stats give as its share). */
  used: number;
  usedMs: number;
}

/** All a ClassScheduler holds besides its settings, as plain data. */
export interface ClassSchedulerState {
  lastMs: number;
  parent: LimitSetState;
  classes: ClassState[];
}

/** Rounding slack on comparisons of token amounts. */
const EPSILON = 1e-9;

/**
 * ClassScheduler shares one key's set of limits (the parent) between
 * classes, as Linux's HTB does for a link (design section 12, and the
 * "Classes" section of docs/design.md for why each rule holds).
 *
 * Every class has a guarantee bucket (its rate and burst) and a ceiling
 * bucket (its ceil). A take of n by class c at t is one of:
 * - within the guarantee: c's guarantee bucket holds n, its ceiling holds n
 *   and the parent admits n: all three take n;
 * - a loan: its ceiling holds n, the parent admits n, and the parent's
 *   surplus (its first bucket's level less what the guarantee buckets of
 *   the classes asking hold) is at least n plus the asks of the classes
 *   ahead of c that could take them: lower prio first, then within a prio
 *   the one that borrowed least for its weight (decaying counters). The
 *   ceiling and the parent take n; c's counter grows by n.
 * Otherwise nothing is taken and the answer is no; c leaves a mark (its ask
 * and the time), which puts it ahead of those behind it for a while.
 *
 * Two ways to consume, as for the rest of tbucket:
 * - `allowAt(nowMs, c, costs)` (drop): admitted now, or refused touching
 *   nothing but c's marks.
 * - waiting (queue): `allowAt`, and when refused sleep until
 *   `earliestAt(nowMs, c, costs)` and ask again: the instant at which c's
 *   take would succeed if nothing else happened. The waiting class's mark is
 *   its turn: lower priorities leave its ask in the surplus meanwhile.
 * Each ask is one step over plain data (levels, times, marks, counters),
 * which a store runs in one transaction or one script.
 */
export class ClassScheduler {
  readonly classes: readonly ResolvedClass[];
  readonly parent: LimitSet;
  readonly clock: Clock;
  /** The unit of the key's rate, which classes share. */
  readonly unit: CostUnit;
  readonly activeMs: number;
  readonly decayMs: number;
  /** How the last admitted take was served. */
  lastPath: ClassPath | undefined;
  /** Why the last refused take was refused. */
  lastRefusal: ClassRefusal | undefined;

  /** Where the key's rate (the first bucket) is in the parent's limits. */
  readonly #keyIndex: number;
  readonly #keyRate: number;
  readonly #keyBurst: number;
  readonly #names = new Map<string, number>();
  readonly #guarantees: TokenBucket[];
  readonly #ceilings: TokenBucket[];
  /** Per class: its last ask, its last borrowing ask (the mark) and its cost, and the decaying counter of what it borrowed. */
  readonly #askedMs: Float64Array;
  readonly #markMs: Float64Array;
  readonly #markCost: Float64Array;
  readonly #borrowed: Float64Array;
  readonly #borrowedMs: Float64Array;
  readonly #used: Float64Array;
  readonly #usedMs: Float64Array;
  #lastMs: number;

  constructor(limits: readonly LimitSpec[], classes: readonly ClassSpec[], options: ClassSchedulerOptions = {}) {
    this.clock = options.clock ?? systemClock;
    const state = options.state;
    this.parent = new LimitSet(limits, { clock: this.clock, ...(state && { state: state.parent }) });
    this.#keyIndex = this.parent.specs.findIndex((spec) => spec.kind === "bucket");
    const key = this.parent.specs[this.#keyIndex];
    if (key === undefined || key.kind !== "bucket") throw new RangeError("Expected the limits of a key with classes to hold a bucket: its rate is what the classes share");
    this.unit = key.unit;
    this.#keyRate = key.rate;
    this.#keyBurst = key.burst;
    this.classes = Object.freeze(resolveClasses(classes, key.rate, key.burst).map((c) => Object.freeze(c)));
    this.activeMs = options.activeMs ?? Math.max(1000, (2000 * key.burst) / key.rate);
    this.decayMs = options.decayMs ?? 1000;
    this.classes.forEach((c, i) => this.#names.set(c.name, i));
    const stateOf = new Map(state?.classes.map((c) => [c.name, c]));
    const was = this.classes.map((c) => stateOf.get(c.name));
    // A class whose burst shrank (the key's did, or its own) keeps at most its new burst.
    const capped = (state: TokenBucketState | undefined, burst: number) => state && { state: { ...state, tokens: Math.min(state.tokens, burst) } };
    this.#guarantees = this.classes.map((c, i) => new TokenBucket({ rate: c.rate, burst: c.burst, clock: this.clock, ...capped(was[i]?.guarantee, c.burst) }));
    this.#ceilings = this.classes.map((c, i) => new TokenBucket({ rate: c.ceil, burst: c.ceilBurst, clock: this.clock, ...capped(was[i]?.ceiling, c.ceilBurst) }));
    this.#askedMs = Float64Array.from(was, (w) => w?.askedMs ?? -Infinity);
    this.#markMs = Float64Array.from(was, (w) => w?.markMs ?? -Infinity);
    this.#markCost = Float64Array.from(was, (w) => w?.markCost ?? 0);
    this.#borrowed = Float64Array.from(was, (w) => w?.borrowed ?? 0);
    this.#borrowedMs = Float64Array.from(was, (w) => w?.borrowedMs ?? 0);
    this.#used = Float64Array.from(was, (w) => w?.used ?? 0);
    this.#usedMs = Float64Array.from(was, (w) => w?.usedMs ?? 0);
    this.#lastMs = state?.lastMs ?? this.clock.now();
  }

  /** The scheduler's state, to make it again with the `state` option. */
  state(): ClassSchedulerState {
    return {
      lastMs: this.#lastMs,
      parent: this.parent.state(),
      classes: this.classes.map((c, i) => ({
        name: c.name,
        guarantee: this.#guarantees[i]!.state(),
        ceiling: this.#ceilings[i]!.state(),
        askedMs: this.#askedMs[i]!,
        markMs: this.#markMs[i]!,
        markCost: this.#markCost[i]!,
        borrowed: this.#borrowed[i]!,
        borrowedMs: this.#borrowedMs[i]!,
        used: this.#used[i]!,
        usedMs: this.#usedMs[i]!,
      })),
    };
  }

  /** The index of the class named `name`; an UnknownClassError naming the defined ones if none. */
  classIndex(name: string): number {
    const index = this.#names.get(name);
    if (index === undefined) throw new UnknownClassError(name, this.classes.map((c) => c.name));
    return index;
  }

  /**
   * Admits class `c`'s item at `nowMs` within its guarantee, or as a loan
   * the rules allow, taking its cost; otherwise takes nothing, leaves c's
   * mark and says no (`lastRefusal` says why).
   */
  allowAt(nowMs: number, c: number, costs: Costs): boolean {
    const t = this.#touch(nowMs);
    const n = this.#cost(costs);
    this.#askedMs[c] = t;
    const ceiling = this.#ceilings[c]!;
    const guarantee = this.#guarantees[c]!;
    if (ceiling.tokensAt(t) < n - EPSILON) return this.#refuse("ceil");
    if (guarantee.tokensAt(t) >= n - EPSILON && this.parent.allowAt(t, costs)) {
      guarantee.takeAt(t, t, n);
      ceiling.takeAt(t, t, n);
      this.#use(t, c, n);
      this.lastPath = "guarantee";
      this.lastRefusal = undefined;
      return true;
    }
    // A borrowing ask marks the class, taken or not: those behind it leave its ask in the surplus.
    this.#markMs[c] = t;
    this.#markCost[c] = n;
    if (this.surplusAt(t) - n < this.#aheadOf(t, c, n) - EPSILON) return this.#refuse("lending");
    if (!this.parent.allowAt(t, costs)) return this.#refuse("parent");
    ceiling.takeAt(t, t, n);
    this.#borrowed[c] = this.borrowedAt(t, c) + n;
    this.#borrowedMs[c] = t;
    this.#use(t, c, n);
    this.lastPath = "borrow";
    this.lastRefusal = undefined;
    return true;
  }

  allow(c: number, costs: Costs): boolean {
    return this.allowAt(this.clock.now(), c, costs);
  }

  /**
   * The earliest instant from `nowMs` on at which `allowAt` would admit
   * class c's item if nothing else were taken meanwhile: within its
   * guarantee, or as a loan once the surplus has grown past the asks ahead
   * of it. Reads only. Infinity when it never would (a cost above its
   * ceiling's burst or the parent's).
   */
  earliestAt(nowMs: number, c: number, costs: Costs): number {
    const t0 = nowMs > this.#lastMs ? nowMs : this.#lastMs;
    const n = this.#cost(costs);
    const ceilingMs = this.#ceilings[c]!.earliestAt(t0, n);
    const parentMs = this.parent.earliestAt(t0, costs);
    const own = Math.max(ceilingMs, parentMs);
    if (own === Infinity) return Infinity;
    const guaranteeMs = Math.max(own, this.#guarantees[c]!.earliestAt(t0, n));
    return Math.min(guaranteeMs, this.#loanAt(own, c, n));
  }

  /** What the parent holds beyond the guarantee buckets of the classes asking: what may be lent at `t`. */
  surplusAt(t: number): number {
    let held = 0;
    for (let d = 0; d < this.classes.length; d++) {
      if (t - this.#askedMs[d]! > this.activeMs) continue;
      const level = this.#guarantees[d]!.tokensAt(t);
      if (level > 0) held += level;
    }
    return this.parent.levelAt(t, this.#keyIndex) - held;
  }

  /** Class c's counter of what it borrowed, decayed to `t`. */
  borrowedAt(t: number, c: number): number {
    return this.#decayed(this.#borrowed[c]!, this.#borrowedMs[c]!, t);
  }

  /** What class c was admitted lately, in units a second: its decaying counter over the decay's time constant. */
  usedRateAt(t: number, c: number): number {
    return (this.#decayed(this.#used[c]!, this.#usedMs[c]!, t) * 1000) / this.decayMs;
  }

  #use(t: number, c: number, n: number): void {
    this.#used[c] = this.#decayed(this.#used[c]!, this.#usedMs[c]!, t) + n;
    this.#usedMs[c] = t;
  }

  #decayed(amount: number, sinceMs: number, t: number): number {
    return amount === 0 ? 0 : amount * Math.exp(-Math.max(0, t - sinceMs) / this.decayMs);
  }

  /** Class c's guarantee bucket level and ceiling bucket level at `t`. */
  guaranteeLevelAt(t: number, c: number): number {
    return this.#guarantees[c]!.tokensAt(t);
  }

  ceilingLevelAt(t: number, c: number): number {
    return this.#ceilings[c]!.tokensAt(t);
  }

  /** True when the parent and every class's buckets are full at `t`: nothing to remember but marks and counters that have lapsed. */
  isFullAt(t: number): boolean {
    const parentFull = this.parent.specs.every((spec, i) => this.parent.levelAt(t, i) >= (spec.kind === "bucket" ? spec.burst : spec.n) - EPSILON);
    return parentFull && this.#guarantees.every((bucket) => bucket.tokensAt(t) >= bucket.burst - EPSILON) && this.#ceilings.every((bucket) => bucket.tokensAt(t) >= bucket.burst - EPSILON);
  }

  /** The level of the key's rate bucket at `t`. */
  keyLevelAt(t: number): number {
    return this.parent.levelAt(t, this.#keyIndex);
  }

  /**
   * The asks that must stay in the surplus when class c borrows at t: those
   * of the classes marked within `activeMs` whose ceiling could take their
   * ask, and which come before c (a lower prio, or the same prio and less
   * borrowed for their weight).
   */
  #aheadOf(t: number, c: number, n: number): number {
    const mine = this.classes[c]!;
    // Compared as they would stand halfway through the take: a counter's steps then centre on its share, whatever
    // the weight (before the take favours the small weights by half a step, after it the large ones).
    const myRatio = (this.borrowedAt(t, c) + n / 2) / mine.weight;
    let ahead = 0;
    for (let d = 0; d < this.classes.length; d++) {
      if (d === c || t - this.#markMs[d]! > this.activeMs) continue;
      const other = this.classes[d]!;
      const before = other.prio < mine.prio || (other.prio === mine.prio && (this.borrowedAt(t, d) + this.#markCost[d]! / 2) / other.weight < myRatio);
      if (before && this.#ceilings[d]!.tokensAt(t) >= this.#markCost[d]! - EPSILON) ahead += this.#markCost[d]!;
    }
    return ahead;
  }

  /**
   * The first instant from `fromMs` on at which a loan of n to c would pass
   * the surplus rule, nothing else happening: the surplus grows at the key's
   * rate less the guarantees still filling, and the classes ahead change
   * only as marks and asks age out or ceilings fill. A few rounds of
   * stepping to the next such change or to the deficit's end.
   */
  #loanAt(fromMs: number, c: number, n: number): number {
    let t = fromMs;
    for (let round = 0; round < 32; round++) {
      const deficit = n + this.#aheadOf(t, c, n) - this.surplusAt(t);
      if (deficit <= EPSILON) return t;
      let growth = this.keyLevelAt(t) < this.#keyBurst ? this.#keyRate : 0;
      let nextChangeMs = Infinity;
      for (let d = 0; d < this.classes.length; d++) {
        const askedUntil = this.#askedMs[d]! + this.activeMs;
        const markedUntil = this.#markMs[d]! + this.activeMs;
        if (askedUntil >= t) {
          const level = this.#guarantees[d]!.tokensAt(t);
          if (level < this.classes[d]!.burst) {
            if (level >= 0) growth -= this.classes[d]!.rate;
            nextChangeMs = Math.min(nextChangeMs, this.#guarantees[d]!.earliestAt(t, this.classes[d]!.burst));
          }
          if (askedUntil > t) nextChangeMs = Math.min(nextChangeMs, askedUntil + 1e-6);
        }
        if (d !== c && markedUntil > t) {
          nextChangeMs = Math.min(nextChangeMs, markedUntil + 1e-6);
          // A ceiling filling up to its class's ask puts that class ahead again.
          const ableMs = this.#ceilings[d]!.earliestAt(t, this.#markCost[d]!);
          if (ableMs > t) nextChangeMs = Math.min(nextChangeMs, ableMs);
        }
      }
      const byGrowthMs = growth > 0 ? t + (deficit / growth) * 1000 : Infinity;
      const next = Math.min(byGrowthMs, nextChangeMs);
      if (next === Infinity) return Infinity;
      // Rounding may leave a step that does not move: move a microsecond.
      t = next > t ? next : t + 1e-3;
    }
    return t;
  }

  #refuse(why: ClassRefusal): false {
    this.lastPath = undefined;
    this.lastRefusal = why;
    return false;
  }

  #cost(costs: Costs): number {
    const n = costs[this.unit] ?? 0;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
      throw new RangeError(`Expected \`${this.unit}\` cost to be a non-negative finite number, got \`${n}\` (${typeof n})`);
    }
    return n;
  }

  /** The time of an ask, clamped so that it never runs backwards. */
  #touch(nowMs: number): number {
    if (nowMs > this.#lastMs) this.#lastMs = nowMs;
    return this.#lastMs;
  }
}
