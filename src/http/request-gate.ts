import { type Clock, systemClock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import { type TurnDecision, TurnQueue } from "../core/turn-queue.js";
import type { KeyLimiter, KeyLimiterSource } from "./key-limiter.js";
import { KeyTable } from "../core/key-table.js";
import { MAX_RETRY_AFTER_SECONDS, retryAfterSeconds } from "./rate-limit-fields.js";
import { RetrySpread } from "./retry-spread.js";
import type { LimitSpec } from "../core/limit-spec.js";
import { type KeySet, type KeySetSource, type KeySetTake, type LimitLevel, PrivateKeySet } from "./key-set.js";
import type { ClassAnswer } from "../core/class-limiter.js";
import type { ClassSpec } from "../core/class-spec.js";
import { type KeyClasses, type KeyClassesSource, PrivateKeyClasses } from "./key-classes.js";
import { TotalKeySet, type TotalTake } from "./total-key-set.js";

/**
 * What became of a request: let through at once, let through after waiting
 * its turn, refused (429), or given up by its client while it waited.
 */
export type GateDecision = TurnDecision;

export interface GateResult {
  decision: GateDecision;
  /** How long the request waited for its turn, in ms (0 unless queued or cancelled). */
  waitMs: number;
  /** Refused: whole seconds after which the same request would be let through (or queued within the wait limit). */
  retryAfterSeconds: number;
  /** Refused: the same in milliseconds, before rounding up to whole seconds (the `retry-after-ms` field). */
  retryAfterMs?: number;
  /** The bucket's level after the decision, and its settings (which a shared store may change live). */
  level: number;
  rate: number;
  burst: number;
  /** The limits, numbered from 1, that refused the request or set its wait (with one bucket: [1] or none). */
  limitedBy: readonly number[];
  /** With a set of limits: each limit and its level after the decision (`rate`, `burst` and `level` then describe the first bucket or window). */
  limits?: readonly LimitLevel[];
  /** With a concurrency limit, on a request let through: frees its slot (call it when the response ends; once is enough). */
  release?: () => void;
  /** With classes: the class the request was taken as. */
  className?: string;
  /**
   * With a total beside each client's set: the total's limits and their
   * levels after the decision, and those of them (from 1 within the total)
   * that refused the request or set its wait (`limitedBy` is then the client's).
   */
  total?: { limits: readonly LimitLevel[]; limitedBy: readonly number[] };
}

/** Classes sharing each key's limits (design section 12): every request names its class. */
export interface GateClasses {
  specs: readonly ClassSpec[];
  /** The limits the classes share: the gate's set, or its one bucket as a set. */
  limits: readonly LimitSpec[];
  /** Where the keys' classes come from (a store); default private ones. */
  source?: KeyClassesSource;
}

export interface RequestGateOptions {
  rate: number;
  burst: number;
  /** A set of limits per key instead of one bucket of `rate` and `burst`: private ones unless `keySets` says otherwise. */
  limits?: readonly LimitSpec[];
  /** Where the keys' sets come from with `limits` (a store, once it keeps sets); default private ones. */
  keySets?: KeySetSource;
  /** How long a request may wait for its turn: 0 refuses at once (the drop policy). */
  maxWaitMs: number;
  maxKeys: number;
  /** Buckets from elsewhere (a shared store) instead of private ones. */
  source?: KeyLimiterSource;
  /** Classes sharing each key's limits instead of one bucket or set per key. */
  classes?: GateClasses;
  /**
   * One set for every request together, beside each key's (`limits`, which it
   * needs): a request goes only when both admit it, and a refusal by either
   * costs nothing in the other (TotalKeySet). No concurrency limit in it.
   */
  total?: KeySet;
  clock?: Clock;
}

interface Entry {
  limiter: KeyLimiter | undefined;
  /** A private bucket's turns; undefined for a bucket from a source. */
  turns: TurnQueue | undefined;
  /** The key's set of limits, when the gate has a set rather than one bucket. */
  keySet: KeySet | undefined;
  /** The key's limits shared by classes, when the gate has classes. */
  keyClasses: KeyClasses | undefined;
  /** Requests waiting for a concurrency slot of the set, in turn: the first asks again when a slot frees. */
  slotTurns: Array<() => void>;
  /** While a shared bucket is being opened, requests for the key wait on it. */
  opening: Promise<KeyLimiter> | undefined;
  /** Requests waiting for their turn: the entry is not spent while any does. */
  waiting: number;
  /** Refused clients told to come back, so that the next are told later (no stampede); made at the first refusal. */
  spread?: RetrySpread;
  /** The same for each class, with classes (spread by the class's guarantee). */
  classSpreads?: Map<string, RetrySpread>;
}

/**
 * RequestGate keeps one token bucket per key and decides, for each request,
 * whether it goes now, after a wait, or not at all. Private buckets are
 * decided synchronously (no promise when no wait is needed); buckets from a
 * source are asked through their `tryWait`. A request that waits and is given
 * up (its signal aborts) gives its token back.
 */
export class RequestGate {
  readonly #options: RequestGateOptions;
  readonly #clock: Clock;
  readonly #table: KeyTable<Entry>;
  /** Clients the total refused, told to come back, so that the next are told later (no stampede on the total either). */
  readonly #totalSpread = new RetrySpread();
  /** The rate of the total's first bucket, by which its refusals are spread; undefined without one. */
  readonly #totalRate: number | undefined;

  constructor(options: RequestGateOptions) {
    if (options.total && (!options.limits || options.classes)) throw new TypeError("RequestGate: a total goes beside each key's set of limits (`limits`), without classes");
    if (options.total?.limits.some((limit) => limit.kind === "concurrency")) throw new TypeError("RequestGate: a total counts rates and windows, not concurrency");
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    const totalBucket = options.total?.limits.find((limit) => limit.kind === "bucket");
    this.#totalRate = totalBucket?.kind === "bucket" && totalBucket.rate > 0 && totalBucket.rate !== Infinity ? totalBucket.rate : undefined;
    const source = options.source;
    this.#table = new KeyTable<Entry>({
      maxKeys: options.maxKeys,
      isSpent: (entry) =>
        entry.waiting === 0 &&
        (entry.keyClasses ? entry.keyClasses.isIdle() : entry.keySet ? entry.keySet.isIdle() : entry.limiter !== undefined && entry.limiter.tokens() >= entry.limiter.burst),
      onRemove: (_key, entry) => {
        if (entry.limiter && source) source.close(entry.limiter);
        if (entry.keySet) options.keySets?.close?.(entry.keySet instanceof TotalKeySet ? entry.keySet.client : entry.keySet);
        entry.keyClasses?.close?.();
      },
    });
  }

  /** Keys held now. */
  get liveKeys(): number {
    return this.#table.size;
  }

  /** Keys evicted before their bucket was full (their clients started afresh). */
  get evictions(): number {
    return this.#table.evictions;
  }

  /** Drops buckets that are full, at most `budget` of them from the least recently used end. */
  sweep(budget?: number): number {
    return this.#table.sweep(budget);
  }

  /**
   * Decides for one request of `key` (as class `className`, with classes: an
   * UnknownClassError for one not defined) costing `cost` tokens of each rate
   * and window; aborting `signal` gives up a wait (decision "cancelled",
   * token given back). A private one-bucket gate takes 1 a request: a cost
   * other than 1 needs the bucket as a set (`limits`).
   */
  admit(key: string, signal?: AbortSignal, className?: string, cost = 1): GateResult | Promise<GateResult> {
    const { rate, burst, classes } = this.#options;
    const limits = this.#options.limits;
    if (rate === Infinity && !this.#options.source && !limits && !classes) return { decision: "admitted", waitMs: 0, retryAfterSeconds: 0, level: burst, rate, burst, limitedBy: [] };
    let entry = this.#table.get(key);
    if (!entry) {
      entry = { limiter: undefined, turns: undefined, keySet: undefined, keyClasses: undefined, slotTurns: [], opening: undefined, waiting: 0 };
      if (classes) {
        entry.keyClasses = classes.source ? classes.source.open(key) : new PrivateKeyClasses(classes.limits, classes.specs, this.#clock);
      } else if (limits) {
        const keySet = this.#options.keySets ? this.#options.keySets.open(key, limits) : new PrivateKeySet(limits, this.#clock);
        entry.keySet = this.#options.total ? new TotalKeySet(keySet, this.#options.total) : keySet;
      } else if (!this.#options.source) {
        const bucket = new TokenBucket({ rate, burst, clock: this.#clock });
        entry.limiter = bucket;
        entry.turns = new TurnQueue({ bucket, maxWaitMs: this.#options.maxWaitMs, clock: this.#clock });
      }
      this.#table.set(key, entry);
    }
    if (entry.keyClasses) {
      if (className === undefined) throw new TypeError("RequestGate: a gate with classes needs each request's class");
      return this.#admitClass(entry, entry.keyClasses, className, signal, cost);
    }
    if (entry.keySet) return this.#admitSet(entry, entry.keySet, signal, cost);
    if (entry.turns) {
      if (cost !== 1) throw new RangeError("RequestGate: a private bucket takes 1 a request; give the bucket as a set for other costs");
      return this.#admitPrivate(entry, entry.turns, signal);
    }
    return this.#admitShared(key, entry, signal, cost);
  }

  /** Forgets every key, releasing shared buckets' leases. */
  close(): void {
    this.#table.clear();
  }

  #admitPrivate(entry: Entry, turns: TurnQueue, signal: AbortSignal | undefined): GateResult | Promise<GateResult> {
    const bucket = turns.bucket;
    const turn = turns.take(signal);
    if (turn === "refused") return this.#refused(bucket, bucket.tokensAt(this.#clock.now()), entry, 1);
    entry.spread?.redeem(this.#clock.now());
    if (turn === "admitted") return this.#result("admitted", 0, bucket, bucket.tokensAt(this.#clock.now()));
    entry.waiting++;
    return turn.then(({ decision, waitMs }) => {
      entry.waiting--;
      return this.#result(decision, waitMs, bucket, bucket.tokensAt(this.#clock.now()));
    });
  }

  async #admitShared(key: string, entry: Entry, signal: AbortSignal | undefined, cost: number): Promise<GateResult> {
    entry.waiting++;
    const startMs = this.#clock.now();
    try {
      const limiter = entry.limiter ?? (await this.#open(key, entry));
      let granted: boolean;
      try {
        granted = await limiter.tryWait(cost, this.#options.maxWaitMs, signal);
      } catch (error) {
        if (signal?.aborted) return this.#result("cancelled", this.#clock.now() - startMs, limiter, limiter.tokens());
        // A bucket whose store failed is opened afresh by the key's next request.
        if (this.#table.peek(key) === entry) this.#table.delete(key);
        throw error;
      }
      if (!granted) return this.#refused(limiter, limiter.tokens(), entry, cost);
      entry.spread?.redeem(this.#clock.now());
      const waitedMs = this.#clock.now() - startMs;
      return this.#result(this.#options.maxWaitMs > 0 && waitedMs >= 1 ? "queued" : "admitted", waitedMs, limiter, limiter.tokens());
    } finally {
      entry.waiting--;
    }
  }

  #open(key: string, entry: Entry): Promise<KeyLimiter> {
    entry.opening ??= (async () => {
      try {
        const limiter = await this.#options.source!.open(key);
        entry.limiter = limiter;
        return limiter;
      } catch (error) {
        if (this.#table.peek(key) === entry) this.#table.delete(key);
        throw error;
      } finally {
        entry.opening = undefined;
      }
    })();
    return entry.opening;
  }

  /**
   * A refusal, with the whole seconds after which the same request would be
   * let through: once the level reaches 1 (dropping), or the level from which
   * a token comes within the wait limit (queueing); and, with other refused
   * clients still expected back, once the level reaches one more than their
   * number (RetrySpread: they take the tokens before it, so they are not all
   * told the same second).
   */
  #refused(limiter: KeyLimiter, level: number, entry: Entry, cost: number): GateResult {
    const { rate } = limiter;
    const nowMs = this.#clock.now();
    entry.spread ??= new RetrySpread();
    const ahead = entry.spread.expectedAt(nowMs);
    const neededTokens = cost + ahead - (rate * this.#options.maxWaitMs) / 1000 - level;
    const waitMs = rate > 0 && limiter.burst >= cost ? Math.max(0, (neededTokens * 1000) / rate) : Infinity;
    const seconds = retryAfterSeconds(waitMs);
    if (waitMs !== Infinity) entry.spread.promise(nowMs, nowMs + seconds * 1000);
    return { ...this.#result("refused", 0, limiter, level), retryAfterSeconds: seconds, retryAfterMs: refusedMs(waitMs) };
  }

  #result(decision: GateDecision, waitMs: number, limiter: KeyLimiter, level: number): GateResult {
    const limitedBy = decision === "admitted" || decision === "cancelled" ? [] : [1];
    return { decision, waitMs, retryAfterSeconds: 0, level, rate: limiter.rate, burst: limiter.burst, limitedBy };
  }

  /**
   * A request as class `className` of the key's classes: at once when no
   * request may wait (drop) and the classes are private, else after the
   * class's wait. A refusal's Retry-After is the instant the class could be
   * served (less the wait allowed, queueing), later for each client of the
   * class refused before it and still expected back (#spreadClass).
   */
  #admitClass(entry: Entry, keyClasses: KeyClasses, className: string, signal: AbortSignal | undefined, cost: number): GateResult | Promise<GateResult> {
    const startMs = this.#clock.now();
    const answer = keyClasses.take(className, this.#options.maxWaitMs, signal, cost);
    if (!(answer instanceof Promise)) return this.#classResult(entry, answer, 0, keyClasses, className);
    entry.waiting++;
    return answer.then(
      (settled) => {
        entry.waiting--;
        return this.#classResult(entry, settled, this.#clock.now() - startMs, keyClasses, className);
      },
      (error: unknown) => {
        entry.waiting--;
        if (signal?.aborted) return { ...this.#classResult(undefined, { ok: false, retryMs: 0 }, this.#clock.now() - startMs, keyClasses, className), decision: "cancelled", retryAfterSeconds: 0 };
        throw error;
      },
    );
  }

  #classResult(entry: Entry | undefined, answer: ClassAnswer, waitMs: number, keyClasses: KeyClasses, className: string): GateResult {
    const { maxWaitMs } = this.#options;
    const share = this.#options.classes!.limits.find((spec) => spec.kind === "bucket");
    const rate = share?.kind === "bucket" ? share.rate : Infinity;
    const burst = share?.kind === "bucket" ? share.burst : Infinity;
    const level = keyClasses.level() ?? NaN;
    const spread = entry ? this.#classSpread(entry, className) : undefined;
    if (!answer.ok) {
      const waitMs = spread ? this.#spreadClass(spread, answer.retryMs, className) : Math.max(0, answer.retryMs - maxWaitMs);
      return { decision: "refused", waitMs: 0, retryAfterSeconds: retryAfterSeconds(waitMs), retryAfterMs: refusedMs(waitMs), level, rate, burst, limitedBy: [], className };
    }
    spread?.redeem(this.#clock.now());
    const decision = maxWaitMs > 0 && waitMs >= 1 ? "queued" : "admitted";
    return { decision, waitMs, retryAfterSeconds: 0, level, rate, burst, limitedBy: [], className };
  }

  /** The class's refused clients still expected back; none kept for a class without a guarantee to spread them by. */
  #classSpread(entry: Entry, className: string): RetrySpread | undefined {
    let spread = entry.classSpreads?.get(className);
    if (spread) return spread;
    const guarantee = this.#options.classes!.specs.find((spec) => spec.name === className)?.rate;
    if (!(guarantee !== undefined && guarantee > 0 && guarantee !== Infinity)) return undefined;
    spread = new RetrySpread();
    (entry.classSpreads ??= new Map()).set(className, spread);
    return spread;
  }

  /**
   * The wait to tell the next client the class refused: one unit of the
   * class's guarantee later for each refused before it still expected back.
   * The guarantee is what the class gets whatever the others ask, so the
   * clients told come back to room; a class borrowing more (the others
   * idle) could have been served sooner than told: a little time lost
   * rather than a second refusal.
   */
  #spreadClass(spread: RetrySpread, retryMs: number, className: string): number {
    const nowMs = this.#clock.now();
    const guarantee = this.#options.classes!.specs.find((spec) => spec.name === className)!.rate;
    const ahead = spread.expectedAt(nowMs);
    const waitMs = Math.max(0, retryMs + (ahead * 1000) / guarantee - this.#options.maxWaitMs);
    if (Number.isFinite(waitMs)) spread.promise(nowMs, nowMs + retryAfterSeconds(waitMs) * 1000);
    return waitMs;
  }

  /**
   * A request against the key's set: decided at once when it can go now or
   * is refused (no wait would do), else it waits, first come first served,
   * for the instant every limit admits it, or, no concurrency slot being
   * free, for a slot to be freed, within `maxWaitMs` from its arrival.
   */
  #admitSet(entry: Entry, keySet: KeySet, signal: AbortSignal | undefined, cost: number): GateResult | Promise<GateResult> {
    const { maxWaitMs } = this.#options;
    if (entry.slotTurns.length === 0) {
      const take = keySet.take(maxWaitMs, cost);
      if (!(take instanceof Promise)) {
        if (take.ok && take.waitMs <= 0) return this.#setResult("admitted", 0, entry, keySet, take);
        if (!take.ok && (!take.noSlot || maxWaitMs === 0)) return this.#setRefused(entry, keySet, take, cost);
      }
      return this.#waitInSet(entry, keySet, take, signal, cost);
    }
    // Others wait for a slot already: this one waits behind them.
    return this.#waitInSet(entry, keySet, undefined, signal, cost);
  }

  async #waitInSet(entry: Entry, keySet: KeySet, first: KeySetTake | Promise<KeySetTake> | undefined, signal: AbortSignal | undefined, cost: number): Promise<GateResult> {
    const startMs = this.#clock.now();
    entry.waiting++;
    try {
      let take = await first;
      // Waiting for a slot, the concurrency limits set the wait too.
      let slotLimits: readonly number[] = [];
      if (take === undefined || (!take.ok && take.noSlot)) {
        const slot = await this.#waitForSlot(entry, keySet, startMs, signal, cost);
        if (slot === "cancelled") return this.#setResult("cancelled", this.#clock.now() - startMs, entry, keySet, undefined);
        take = slot;
        slotLimits = concurrencyLimits(keySet.limits);
      }
      if (!take.ok) return this.#setRefused(entry, keySet, take, cost);
      if (take.waitMs > 0) {
        try {
          await this.#clock.sleep(take.waitMs, signal);
        } catch {
          keySet.cancel(take);
          entry.slotTurns[0]?.();
          return this.#setResult("cancelled", this.#clock.now() - startMs, entry, keySet, undefined);
        }
      }
      const waitedMs = this.#clock.now() - startMs;
      const limitedBy = [...new Set([...slotLimits, ...take.limitedBy])].sort((a, b) => a - b);
      // Dropping, a store's round trips are no wait for a turn: the request was admitted.
      return this.#setResult(this.#options.maxWaitMs > 0 && waitedMs >= 1 ? "queued" : "admitted", waitedMs, entry, keySet, take, limitedBy);
    } finally {
      entry.waiting--;
    }
  }

  /**
   * Waits in the key's slot queue until a take at its head finds a slot
   * (then that take, ok or refused by another limit's wait), the wait limit
   * passes (refused), or the client leaves ("cancelled").
   */
  async #waitForSlot(entry: Entry, keySet: KeySet, startMs: number, signal: AbortSignal | undefined, cost: number): Promise<KeySetTake | "cancelled"> {
    const deadlineMs = startMs + this.#options.maxWaitMs;
    let wake!: () => void;
    let woken = new Promise<void>((resolve) => (wake = resolve));
    const turn = (): void => wake();
    entry.slotTurns.push(turn);
    signal?.addEventListener("abort", turn, { once: true });
    const timer = new AbortController();
    this.#clock.sleep(Math.max(0, deadlineMs - this.#clock.now()), timer.signal).then(turn, () => {});
    if (keySet.slotPollMs !== undefined) void this.#pollSlots(keySet.slotPollMs, turn, timer.signal);
    try {
      for (;;) {
        if (signal?.aborted) return "cancelled";
        const leftMs = deadlineMs - this.#clock.now();
        if (entry.slotTurns[0] === turn) {
          const take = await keySet.take(Math.max(0, leftMs), cost);
          if (!take.noSlot || leftMs <= 0) return take;
        } else if (leftMs <= 0) {
          return noSlotTake(keySet.limits);
        }
        await woken;
        woken = new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      timer.abort();
      signal?.removeEventListener("abort", turn);
      entry.slotTurns.splice(entry.slotTurns.indexOf(turn), 1);
      // The next in line may find a slot too (several freed, or this one left).
      entry.slotTurns[0]?.();
    }
  }

  /** Wakes a slot wait every `pollMs` until `signal` aborts: a set in a store is asked again for a slot freed elsewhere. */
  async #pollSlots(pollMs: number, wake: () => void, signal: AbortSignal): Promise<void> {
    try {
      for (;;) {
        await this.#clock.sleep(pollMs, signal);
        wake();
      }
    } catch {
      // The wait ended.
    }
  }

  /**
   * A refusal by the set: Retry-After from the instant every limit would
   * admit the request (less the wait allowed, queueing), and no sooner than
   * the room of the clients refused before it and still expected back
   * (RetrySpread, as one bucket's refusals are): behind a bucket the second
   * its k-th next token comes, behind a window the second its k-th next
   * record leaves (KeySet.retryBehindMs). Refused by the total, later by one
   * token of the total's rate for each client it refused and still expects
   * back. Wanting a concurrency slot: SLOT_RETRY_AFTER_SECONDS, unspread.
   */
  #setRefused(entry: Entry, keySet: KeySet, take: KeySetTake, cost: number): GateResult {
    const byTotal = (take as Partial<TotalTake>).totalLimitedBy?.length ? this.#totalRate : undefined;
    const waitMs = take.noSlot
      ? SLOT_RETRY_AFTER_SECONDS * 1000
      : byTotal !== undefined
        ? this.#spreadTotal(take.retryMs, byTotal)
        : this.#spreadSet(entry, keySet, take.retryMs, cost);
    const result = { ...this.#setResult("refused", 0, undefined, keySet, undefined), limitedBy: take.limitedBy, retryAfterSeconds: retryAfterSeconds(waitMs), retryAfterMs: refusedMs(waitMs) };
    if (result.total) result.total = { ...result.total, limitedBy: (take as TotalTake).totalLimitedBy ?? [] };
    return result;
  }

  /** The wait to tell the next client the key's set refused: after the room the ones told before it will take. */
  #spreadSet(entry: Entry, keySet: KeySet, retryMs: number, cost: number): number {
    const nowMs = this.#clock.now();
    entry.spread ??= new RetrySpread();
    const ahead = entry.spread.expectedAt(nowMs);
    const behindMs = keySet.retryBehindMs?.(ahead, cost) ?? 0;
    const waitMs = Math.max(0, Math.max(retryMs, behindMs) - this.#options.maxWaitMs);
    if (Number.isFinite(waitMs)) entry.spread.promise(nowMs, nowMs + retryAfterSeconds(waitMs) * 1000);
    return waitMs;
  }

  /** The wait to tell the next client the total refused: after the tokens the ones told before it will take. */
  #spreadTotal(retryMs: number, rate: number): number {
    const nowMs = this.#clock.now();
    const ahead = this.#totalSpread.expectedAt(nowMs);
    const waitMs = Math.max(0, retryMs + (ahead * 1000) / rate - this.#options.maxWaitMs);
    if (Number.isFinite(waitMs)) this.#totalSpread.promise(nowMs, nowMs + retryAfterSeconds(waitMs) * 1000);
    return waitMs;
  }

  #setResult(
    decision: GateDecision,
    waitMs: number,
    entry: Entry | undefined,
    keySet: KeySet,
    take: KeySetTake | undefined,
    limitedBy: readonly number[] = take?.limitedBy ?? [],
  ): GateResult {
    const limits = keySet.levels();
    const first = limits.find((limit) => limit.kind !== "concurrency");
    const summary =
      first === undefined
        ? { level: Infinity, rate: Infinity, burst: Infinity }
        : first.kind === "bucket"
          ? { level: first.level, rate: first.rate, burst: first.burst }
          : { level: first.level, rate: (first.n * 1000) / first.windowMs, burst: first.n };
    const result: GateResult = { decision, waitMs, retryAfterSeconds: 0, ...summary, limitedBy, limits };
    if (keySet instanceof TotalKeySet) {
      result.total = { limits: keySet.totalLevels(), limitedBy: (take as TotalTake | undefined)?.totalLimitedBy ?? [] };
      if (take?.ok) this.#totalSpread.redeem(this.#clock.now());
    }
    if (take?.ok) entry?.spread?.redeem(this.#clock.now());
    if (take?.ok && entry && limits.some((limit) => limit.kind === "concurrency")) {
      let released = false;
      result.release = () => {
        if (released) return;
        released = true;
        keySet.release(take);
        entry.slotTurns[0]?.();
      };
    }
    return result;
  }
}

/**
 * Retry-After for a request refused for want of a concurrency slot: a slot
 * comes free when a response ends, which no clock can tell, so the client is
 * asked to come back in the least whole second.
 */
export const SLOT_RETRY_AFTER_SECONDS = 1;

/** A refusal's wait in whole milliseconds, at least 1 (as `retry-after-ms` is written), capped with Retry-After's cap. */
function refusedMs(waitMs: number): number {
  return Math.min(MAX_RETRY_AFTER_SECONDS * 1000, Math.max(1, Math.ceil(waitMs)));
}

/** A refusal at the wait limit for a request still behind others in the slot queue: the concurrency limits bound it. */
function noSlotTake(limits: readonly LimitSpec[]): KeySetTake {
  return { ok: false, waitMs: Infinity, limitedBy: concurrencyLimits(limits), noSlot: true, retryMs: Infinity };
}

/** The numbers (from 1) of a set's concurrency limits. */
function concurrencyLimits(limits: readonly LimitSpec[]): number[] {
  return limits.flatMap((limit, index) => (limit.kind === "concurrency" ? [index + 1] : []));
}
