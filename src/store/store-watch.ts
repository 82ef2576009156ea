import { type Clock, systemClock } from "../core/clock.js";
import { type BucketStore, StoreError } from "./bucket-store.js";
import { isLimitSetStore, type LimitSetStore } from "./limit-set-store.js";

/** Failures of one key or one limiter, not of the store: the others go on asking. */
const KEY_FAILURES: ReadonlySet<string> = new Set(["deleted", "closed", "holds-a-set", "classes"]);

/** True for a failure of the store itself (lost, locked, refused), which every key shares; false for one key's (deleted, closed, holds-a-set). */
export function isStoreFailure(error: unknown): error is StoreError {
  return error instanceof StoreError && !KEY_FAILURES.has(error.failure);
}

/** The first probe comes this soon after the store is lost; each failed one doubles the pause, up to the cap. */
export const FIRST_PROBE_MS = 100;
/**
 * The longest pause between probes: the store's return is seen within about
 * this plus one round trip, so well within a second (the cap is 1 s;
 * half of it leaves the round trip and a busy machine room).
 */
export const MAX_PROBE_MS = 500;

/** What the watch knows of an outage. */
export interface StoreOutage {
  /** What the store first failed with. */
  error: StoreError;
  /** When it was lost, on the watch's clock. */
  sinceMs: number;
}

export interface StoreWatchOptions {
  clock?: Clock;
  /** Told once per outage, at its start. */
  onLost?: (error: StoreError) => void;
  /** Told once per outage, when the store answers again: how long it was gone. */
  onBack?: (lostForMs: number, error: StoreError) => void;
}

/**
 * StoreWatch is a store that knows when it is lost, and finds it again. It
 * passes every call through until one fails with a failure of the store
 * (Redis gone or refusing writes, a SQLite file locked or gone): from then
 * on every call rejects at once with that failure, so that no key waits a
 * busy timeout or a command timeout to find out, and a probe (a take of
 * nothing on the key that failed, the same write a wait makes) asks the store
 * again after 100 ms, then at pauses doubling up to 500 ms, for as long as the
 * watch is open. The first probe that is answered ends the outage.
 *
 * Limiters on the watch (FailoverLimiter) read `lost` at each wait and wait
 * on `whenBack`; the owner hears of each outage once, at both ends.
 */
export class StoreWatch implements BucketStore, LimitSetStore {
  readonly url: string;
  readonly #store: BucketStore;
  readonly #clock: Clock;
  readonly #options: StoreWatchOptions;
  #outage: StoreOutage | undefined;
  /** The key last asked for, for a probe of a call that named none. */
  #lastKey = "";
  #back: { promise: Promise<void>; resolve: () => void } | undefined;
  readonly #closing = new AbortController();

  constructor(store: BucketStore, options: StoreWatchOptions = {}) {
    this.#store = store;
    this.url = store.url;
    this.#clock = options.clock ?? systemClock;
    this.#options = options;
    const takeMany = store.takeMany?.bind(store);
    if (takeMany) this.takeMany = (key, takes) => this.#guard(key, () => takeMany(key, takes));
    const open = store.open?.bind(store);
    if (open) this.open = (key, config, options) => this.#guard(key, () => open(key, config, options));
  }

  /** The outage under way; undefined while the store answers. */
  get lost(): StoreOutage | undefined {
    return this.#outage;
  }

  /**
   * Resolves true once the store answers again (at once if it does now), or
   * false when the clock reaches `untilMs` first; rejects when `signal`
   * aborts, with its reason.
   */
  async whenBack(untilMs: number, signal?: AbortSignal): Promise<boolean> {
    if (!this.#outage) return true;
    signal?.throwIfAborted();
    const back = this.#back!.promise;
    const stop = new AbortController();
    const onAbort = (): void => stop.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const aborted = new Promise<never>((_resolve, reject) => stop.signal.addEventListener("abort", () => reject(stop.signal.reason), { once: true }));
    const late = untilMs === Infinity ? new Promise<boolean>(() => {}) : this.#clock.sleep(untilMs - this.#clock.now(), stop.signal).then(() => false);
    // Whichever loses the race rejects on the abort below: nobody waits for it.
    late.catch(() => {});
    aborted.catch(() => {});
    try {
      return await Promise.race([back.then(() => true), late, aborted]);
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (!stop.signal.aborted) stop.abort();
    }
  }

  take: BucketStore["take"] = (key, n, options) => this.#guard(key, () => this.#store.take(key, n, options));
  /** Only when the store has it: callers send several calls at once only to a store that answers each whole. */
  readonly takeMany: BucketStore["takeMany"];
  /** Only when the store has it, as takeMany. */
  readonly open: BucketStore["open"];
  cancel: BucketStore["cancel"] = (key, reservation) => this.#guard(key, () => this.#store.cancel(key, reservation));
  read: BucketStore["read"] = (key) => this.#guard(key, () => this.#store.read(key));
  configure: BucketStore["configure"] = (key, config, options) => this.#guard(key, () => this.#store.configure(key, config, options));
  list: BucketStore["list"] = () => this.#guard(undefined, () => this.#store.list());
  delete: BucketStore["delete"] = (key) => this.#guard(key, () => this.#store.delete(key));
  configureSet: LimitSetStore["configureSet"] = (key, limits, options) => this.#guard(key, () => this.#sets.configureSet(key, limits, options));
  takeSet: LimitSetStore["takeSet"] = (key, costs, options) => this.#guard(key, () => this.#sets.takeSet(key, costs, options));
  cancelSet: LimitSetStore["cancelSet"] = (key, reservation) => this.#guard(key, () => this.#sets.cancelSet(key, reservation));
  settleSet: LimitSetStore["settleSet"] = (key, reservation, actual) => this.#guard(key, () => this.#sets.settleSet(key, reservation, actual));
  releaseSet: LimitSetStore["releaseSet"] = (key, reservation) => this.#guard(key, () => this.#sets.releaseSet(key, reservation));
  renewSet: LimitSetStore["renewSet"] = (key, reservation, leaseMs) => this.#guard(key, () => this.#sets.renewSet(key, reservation, leaseMs));
  readSet: LimitSetStore["readSet"] = (key) => this.#guard(key, () => this.#sets.readSet(key));
  listSets: LimitSetStore["listSets"] = () => this.#guard(undefined, () => this.#sets.listSets());
  deleteSet: LimitSetStore["deleteSet"] = (key) => this.#guard(key, () => this.#sets.deleteSet(key));
  configureClasses: NonNullable<LimitSetStore["configureClasses"]> = (key, classes) => this.#guard(key, () => this.#classes.configureClasses!(key, classes));
  takeClass: NonNullable<LimitSetStore["takeClass"]> = (key, className, costs) => this.#guard(key, () => this.#classes.takeClass!(key, className, costs));

  /** Whether the store keeps classes (the callers check before they name one). */
  get keepsClasses(): boolean {
    return isLimitSetStore(this.#store) && typeof this.#store.takeClass === "function";
  }

  get #classes(): LimitSetStore {
    if (!this.keepsClasses) throw new TypeError(`StoreWatch: the store ${this.url} keeps no classes`);
    return this.#sets;
  }

  /** The store's limit sets; a backend without them is refused before (the callers check isLimitSetStore). */
  get #sets(): LimitSetStore {
    if (!isLimitSetStore(this.#store)) throw new TypeError(`StoreWatch: the store ${this.url} keeps no limit sets`);
    return this.#store;
  }

  /** Stops probing, then closes the store. */
  async close(): Promise<void> {
    this.stop();
    await this.#store.close();
  }

  /** Stops probing, leaving the store open (it is someone else's to close). */
  stop(): void {
    this.#closing.abort();
  }

  #guard<T>(key: string | undefined, call: () => Promise<T>): Promise<T> {
    if (this.#outage) return Promise.reject(this.#outage.error);
    if (key !== undefined) this.#lastKey = key;
    return call().catch((error: unknown) => {
      if (isStoreFailure(error)) this.#lose(error, key ?? this.#lastKey);
      throw error;
    });
  }

  #lose(error: StoreError, key: string): void {
    // Several calls under way fail together: the first failure is the outage's.
    if (this.#outage || this.#closing.signal.aborted) return;
    this.#outage = { error, sinceMs: this.#clock.now() };
    let resolve!: () => void;
    const promise = new Promise<void>((done) => (resolve = done));
    this.#back = { promise, resolve };
    this.#options.onLost?.(error);
    void this.#probe(key);
  }

  /** Asks the store again, at growing pauses, until it answers or the watch closes. */
  async #probe(key: string): Promise<void> {
    const signal = this.#closing.signal;
    for (let pauseMs = FIRST_PROBE_MS; ; pauseMs = Math.min(pauseMs * 2, MAX_PROBE_MS)) {
      try {
        await this.#clock.sleep(pauseMs, signal);
        await this.#store.take(key, 0);
      } catch (error) {
        if (signal.aborted) return;
        if (isStoreFailure(error) && error.failure !== "restarted") continue;
        // The store answered, about this key only (it was deleted meanwhile, or lost in a restart): it is back.
      }
      if (signal.aborted) return;
      break;
    }
    const outage = this.#outage!;
    this.#outage = undefined;
    this.#back!.resolve();
    this.#back = undefined;
    this.#options.onBack?.(this.#clock.now() - outage.sinceMs, outage.error);
  }
}
