import { randomUUID } from "node:crypto";
import { type Clock, systemClock } from "../core/clock.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";
import { SlidingWindow } from "../core/sliding-window.js";
import type { BucketStore } from "../store/bucket-store.js";
import { keyName } from "../store/key-buckets.js";
import { DEFAULT_SLOT_LEASE_MS, type LimitSetStore, sameLimits, type SetReservation, type SetTakeResult } from "../store/limit-set-store.js";
import { isStoreFailure, StoreWatch } from "../store/store-watch.js";
import { type KeySet, type KeySetSource, type KeySetTake, type LimitLevel, PrivateKeySet, requestCosts } from "./key-set.js";
import type { OnStoreError, StoreBuckets } from "./store-limiters.js";

/**
 * How often a request queued for a concurrency slot asks the store again:
 * slots freed by other processes are not announced, so without this it
 * would only hear of this process's releases.
 */
export const SLOT_POLL_MS = 100;

/** A take of a store's set: the store's answer, or one made while the store is lost (a private set's, or one let through). */
interface StoreTake extends KeySetTake {
  /** What to give back to the store; undefined for a take not made in the store. */
  readonly reservation?: SetReservation;
  /** A take of the private set used while the store is lost. */
  readonly local?: KeySetTake;
}

const NOTHING: Costs = { count: 0 };

/** A take let through unlimited while the store is lost (onStoreError "open"). */
const OPEN_TAKE: StoreTake = { ok: true, waitMs: 0, limitedBy: [], noSlot: false, retryMs: 0 };

/** A KeySetSource with a `dispose` that stops watching the store. */
export interface StoreKeySetSource extends KeySetSource {
  /**
   * The set for every request together, beside the clients' (DESIGN section
   * 14): the key `NAME` itself, which no client's `NAME:<client>` can be (a
   * header's value "total" would make `NAME:total`). Watched with theirs:
   * while the store is lost, `onStoreError` applies to it as to them.
   */
  total(limits: readonly LimitSpec[]): KeySet;
  dispose(): void;
}

/** Whether a store keeps sets of limits (memory, SQLite and Redis do). */
export function isLimitSetStore(store: BucketStore): store is BucketStore & LimitSetStore {
  return typeof (store as Partial<LimitSetStore>).takeSet === "function";
}

/**
 * Per-client sets of limits in a shared store, so that several servers hold
 * each client to every limit together (DESIGN section 11). A client's set is
 * the key `NAME:<client>`, made with the middleware's limits at its first
 * take (a key that holds a set already keeps its own, so `tbucket key set
 * NAME:<client>` gives one client other limits) and marked `expireWhenFull`,
 * so the store forgets it once it is as a new one. Each request is one
 * takeSet; a concurrency slot is held under a holder id of its own, renewed
 * while the response runs, released when it ends.
 *
 * The store is watched as the one-bucket path's is: StoreWatch has no set
 * calls, so a set call that fails with a failure of the store asks the
 * watch to read the key, which confirms the outage and probes until the
 * store answers. While it is lost, `onStoreError` says what requests get.
 */
export function storeKeySets(buckets: StoreBuckets, options: { clock?: Clock; leaseMs?: number } = {}): StoreKeySetSource {
  const store = buckets.store;
  if (!isLimitSetStore(store)) throw new TypeError(`Expected \`store.store\` to keep sets of limits (memory, SQLite or Redis), got a store of ${store.url} without takeSet`);
  const clock = options.clock ?? systemClock;
  const watch = new StoreWatch(store, { clock, onLost: buckets.onError, onBack: buckets.onBack });
  const shared: SharedSets = { store, watch, clock, mode: buckets.onStoreError ?? "fail", leaseMs: options.leaseMs ?? DEFAULT_SLOT_LEASE_MS };
  return {
    open: (client, limits) => new StoreKeySet(keyName(buckets.name, client), limits, shared),
    total: (limits) => new StoreKeySet(buckets.name, limits, shared),
    dispose: () => watch.stop(),
  };
}

interface SharedSets {
  store: LimitSetStore;
  watch: StoreWatch;
  clock: Clock;
  mode: OnStoreError;
  leaseMs: number;
}

/** One client's set in the store, as the request gate takes from it. */
class StoreKeySet implements KeySet {
  readonly slotPollMs = SLOT_POLL_MS;
  readonly #key: string;
  readonly #shared: SharedSets;
  #limits: readonly LimitSpec[];
  /**
   * The levels as known without a round trip: a bucket's as the last take
   * left it; a window's from what this process took (its own SlidingWindow
   * of them) and, at each refusal's read, what the others did, recorded as
   * taken then (so it leaves no sooner than it truly does: the room left is
   * never overstated by what was read); free slots as last read, less and
   * plus this process's.
   */
  #levels: LimitLevel[];
  #windows = new Map<number, SlidingWindow>();
  /** Takes under way and slots held by this process: the gate may forget the key only with none. */
  #busy = 0;
  /** The set used while the store is lost and onStoreError is "local". */
  #local: PrivateKeySet | undefined;

  constructor(key: string, limits: readonly LimitSpec[], shared: SharedSets) {
    this.#key = key;
    this.#shared = shared;
    this.#limits = limits;
    this.#levels = fullLevels(limits);
  }

  get limits(): readonly LimitSpec[] {
    return this.#limits;
  }

  async take(maxWaitMs: number, cost = 1): Promise<KeySetTake> {
    if (this.#shared.watch.lost) return this.#whileLost(maxWaitMs, cost);
    this.#busy++;
    try {
      // A holder id of the request's own: its slot is its alone to renew and release.
      const takeOptions = { maxWaitMs, holder: randomUUID(), leaseMs: this.#shared.leaseMs };
      const { store } = this.#shared;
      const costs = requestCosts(cost);
      let result = await store.takeSet(this.#key, costs, takeOptions);
      if (result === undefined) {
        await store.configureSet(this.#key, this.#limits, { expireWhenFull: true });
        result = await store.takeSet(this.#key, costs, takeOptions);
        if (result === undefined) throw new Error(`store ${store.url}: key ${this.#key} was deleted as it was made`);
      }
      return await this.#taken(result, maxWaitMs, cost);
    } catch (error) {
      if (!isStoreFailure(error)) throw error;
      // The watch reads the key: a store that fails again is lost until a probe finds it back.
      void this.#shared.watch.read(this.#key).catch(() => {});
      return this.#whileLost(maxWaitMs, cost, error);
    } finally {
      this.#busy--;
    }
  }

  cancel(take: KeySetTake): void {
    const { local, reservation } = take as StoreTake;
    if (local) return this.#local!.cancel(local);
    if (!reservation) return;
    this.#unhold(take as HeldTake);
    for (const window of this.#windows.values()) window.adjustAt((take as HeldTake).recordedAtMs!, -1);
    void this.#shared.store.cancelSet(this.#key, reservation).catch(() => {});
  }

  release(take: KeySetTake): void {
    const { local, reservation } = take as StoreTake;
    if (local) return this.#local!.release(local);
    if (!reservation || !this.#unhold(take as HeldTake)) return;
    void this.#shared.store.releaseSet(this.#key, reservation).catch(() => {});
  }

  /**
   * Gives an ok take back whole, due or not (a settle to 0 in the store:
   * `cancel` gives back only what is not yet due), and frees its slot: for a
   * take the total then refused. Resolves once the store has it back.
   */
  async refund(take: KeySetTake): Promise<void> {
    const { local, reservation } = take as StoreTake;
    if (local) return this.#local!.refund(local);
    if (!reservation) return;
    const held = this.#unhold(take as HeldTake);
    for (const window of this.#windows.values()) window.adjustAt((take as HeldTake).recordedAtMs!, -1);
    this.#levels = this.#levels.map((limit) => (limit.kind === "bucket" ? { ...limit, level: Math.min(limit.burst, limit.level + 1) } : limit));
    const { store } = this.#shared;
    try {
      await store.settleSet(this.#key, reservation, NOTHING);
      if (held) await store.releaseSet(this.#key, reservation);
    } catch {
      // A store that fails now gives the slot back at its lease's end, and the token by refilling.
    }
  }

  /** Stops renewing a take's slot and stops counting it as held; false when it held none. */
  #unhold(take: HeldTake): boolean {
    if (!take.renewing) return false;
    take.renewing.abort();
    take.renewing = undefined;
    this.#busy--;
    this.#levels = this.#levels.map((limit) => (limit.kind === "concurrency" ? { ...limit, level: Math.min(limit.n, limit.level + 1) } : limit));
    return true;
  }

  levels(): LimitLevel[] {
    const nowMs = this.#shared.clock.now();
    return this.#levels.map((limit, i) => {
      const window = limit.kind === "window" ? this.#windows.get(i) : undefined;
      if (!window) return { ...limit };
      window.pruneAt(nowMs);
      return { ...limit, level: Math.max(0, window.remainingAt(nowMs)) };
    });
  }

  /**
   * The spread of refusals from what is known without a round trip (the
   * levels the refusal's read left, this process's windows): a bucket's
   * k-th next token at its rate, a window's k-th next record to leave.
   * With other servers taking from the key it is a lower bound, as the
   * refusal's own retry is: a client told too soon is refused again.
   */
  retryBehindMs(ahead: number, cost = 1): number {
    if (this.#local && this.#shared.watch.lost) return this.#local.retryBehindMs(ahead, cost);
    const nowMs = this.#shared.clock.now();
    const amount = ahead + cost;
    let behindMs = 0;
    this.#levels.forEach((limit, i) => {
      if (limit.kind === "bucket" && limit.unit === "count" && limit.rate !== Infinity && amount > limit.level) {
        behindMs = Math.max(behindMs, limit.rate > 0 ? ((amount - limit.level) * 1000) / limit.rate : Infinity);
      } else if (limit.kind === "window" && limit.unit === "count") {
        const window = this.#windows.get(i);
        if (window) behindMs = Math.max(behindMs, window.roomAt(nowMs, amount) - nowMs);
      }
    });
    return behindMs;
  }

  /** The window of limit `i` as this process counts it, made afresh when the set changed. */
  #window(i: number, spec: LimitSpec): SlidingWindow | undefined {
    if (spec.kind !== "window") return undefined;
    let window = this.#windows.get(i);
    if (!window || window.limit !== spec.n || window.windowMs !== spec.windowMs) {
      window = new SlidingWindow(spec.n, spec.windowMs);
      this.#windows.set(i, window);
    }
    return window;
  }

  isIdle(): boolean {
    return this.#busy === 0 && (this.#local === undefined || this.#local.isIdle());
  }

  /** The store's answer as the gate takes it: a refusal with the instant a retry would be let through, a slot held and renewed. */
  async #taken(result: SetTakeResult, maxWaitMs: number, cost: number): Promise<StoreTake> {
    // The key's own set, which `tbucket key set` may have given it or changed since.
    if (!sameLimits(result.limits, this.#limits)) this.#limits = result.limits;
    if (!result.ok) {
      const retryMs = result.noSlot ? Infinity : await this.#retryMs(result, maxWaitMs, cost);
      return { ok: false, waitMs: Infinity, limitedBy: result.limitedBy, noSlot: result.noSlot, retryMs };
    }
    const reservation = result.reservation!;
    const waitMs = Math.max(0, result.waitMs);
    const atMs = this.#shared.clock.now() + waitMs;
    this.#levels = result.limits.map((spec, i): LimitLevel => {
      if (spec.kind === "bucket") return { ...spec, level: reservation.bucketLevels[i]! };
      const window = this.#window(i, spec);
      if (window) window.recordAt(Math.max(atMs, window.latestMs), 1);
      const known = this.#levels[i]?.kind === spec.kind ? this.#levels[i]!.level : levelOfNew(spec);
      return { ...spec, level: spec.kind === "concurrency" ? Math.max(0, known - 1) : known };
    });
    const take: HeldTake = { ok: true, waitMs, limitedBy: result.limitedBy, noSlot: false, retryMs: 0, reservation, recordedAtMs: atMs };
    if (result.limits.some((limit) => limit.kind === "concurrency")) {
      this.#busy++;
      take.renewing = this.#renew(reservation);
    }
    return take;
  }

  /**
   * How long until the same request would be let through, from the levels
   * the store reads now: a bucket refills to the cost at its rate; a
   * window's records leave it when this process's count of them says (what
   * others took is counted as taken at the read, so never sooner than
   * truly), else within its length.
   */
  async #retryMs(result: SetTakeResult, maxWaitMs: number, cost: number): Promise<number> {
    const state = await this.#shared.store.readSet(this.#key);
    if (!state) return maxWaitMs;
    this.#learn(state.limits);
    let retryMs = maxWaitMs;
    const nowMs = this.#shared.clock.now();
    for (const number of result.limitedBy) {
      const limit = state.limits[number - 1];
      if (!limit || limit.level >= cost) continue;
      if (limit.kind === "bucket") retryMs = Math.max(retryMs, limit.rate > 0 ? ((cost - limit.level) * 1000) / limit.rate : Infinity);
      else if (limit.kind === "window") {
        const window = this.#windows.get(number - 1);
        retryMs = Math.max(retryMs, window ? window.earliestAt(nowMs, cost) - nowMs : limit.windowMs);
      }
    }
    return retryMs;
  }

  /** Takes the levels the store read: what the others took from a window is recorded as taken now. */
  #learn(read: readonly LimitLevel[]): void {
    const nowMs = this.#shared.clock.now();
    read.forEach((limit, i) => {
      const window = this.#window(i, limit);
      if (!window) return;
      const unseen = window.remainingAt(nowMs) - limit.level;
      if (unseen > 0) window.recordAt(Math.max(nowMs, window.latestMs), unseen);
    });
    this.#levels = read.map((limit) => ({ ...limit }));
  }

  /** Renews a slot's lease each third of it while the response runs; aborted by its release. */
  #renew(reservation: SetReservation): AbortController {
    const stop = new AbortController();
    const { clock, store, leaseMs } = this.#shared;
    void (async () => {
      const firstMs = Math.max(0, reservation.timeToActMs - clock.now());
      try {
        await clock.sleep(firstMs, stop.signal);
        for (;;) {
          await clock.sleep(leaseMs / 3, stop.signal);
          const held = await store.renewSet(this.#key, reservation, leaseMs).catch(() => true);
          if (held === false) return;
        }
      } catch {
        // Released.
      }
    })();
    return stop;
  }

  /** What a request gets while the store is lost: the outage's failure (503), a private set's take, or let through. */
  #whileLost(maxWaitMs: number, cost: number, error?: unknown): StoreTake {
    const { mode, watch } = this.#shared;
    if (mode === "open") return OPEN_TAKE;
    if (mode === "fail") throw watch.lost?.error ?? error;
    this.#local ??= new PrivateKeySet(this.#limits, this.#shared.clock);
    const local = this.#local.take(maxWaitMs, cost);
    return { ok: local.ok, waitMs: local.waitMs, limitedBy: local.limitedBy, noSlot: local.noSlot, retryMs: local.retryMs, local };
  }
}

interface HeldTake extends StoreTake {
  /** Renewing its slot's lease, while it holds one. */
  renewing?: AbortController;
  /** When this process's windows recorded it. */
  recordedAtMs?: number;
}

function fullLevels(limits: readonly LimitSpec[]): LimitLevel[] {
  return limits.map((spec) => ({ ...spec, level: levelOfNew(spec) }));
}

function levelOfNew(spec: LimitSpec): number {
  return spec.kind === "bucket" ? spec.burst : spec.n;
}
