import { type ClassAnswer, ClassLimiter, type ClassTaker } from "../core/class-limiter.js";
import { type ClassSpec, resolveClasses } from "../core/class-spec.js";
import { type Clock, systemClock } from "../core/clock.js";
import type { LimitSpec } from "../core/limit-spec.js";
import { StoreError } from "../store/bucket-store.js";
import type { FailoverLimiter } from "../store/failover-limiter.js";
import { KeyBuckets, keyName } from "../store/key-buckets.js";
import type { LimitSetStore, SetState } from "../store/limit-set-store.js";
import { isStoreFailure } from "../store/store-watch.js";
import type { KeyClasses, KeyClassesSource } from "./key-classes.js";
import { isLimitSetStore } from "./store-key-sets.js";
import type { StoreBuckets } from "./store-limiters.js";

/** What a request gets while the store is lost in `open` mode: let through. */
const LET_THROUGH: ClassAnswer = { ok: true, retryMs: 0 };

/**
 * Per-client keys shared by classes in a store (design section 12), so
 * that several servers share each client's limit between its classes
 * together. A client's key is `NAME:<client>`, made with the middleware's
 * limits and classes at its first request (a key that exists keeps its own,
 * so `tbucket key set NAME:<client> --class ...` gives one client other
 * classes) and forgotten by the store once full. Each request is one
 * takeClass; a refusal carries the store's instant, its Retry-After.
 *
 * Each class of a key is a limiter of KeyBuckets.openClass: while the
 * store is lost, `onStoreError` says what requests get (503, a private
 * ClassLimiter of the same limits and classes, or let through).
 */
export function storeKeyClasses(buckets: StoreBuckets, settings: { limits: readonly LimitSpec[]; classes: readonly ClassSpec[]; clock?: Clock }): KeyClassesSource {
  const store = buckets.store;
  if (!isLimitSetStore(store) || typeof store.takeClass !== "function") {
    throw new TypeError(`Expected \`store.store\` to keep classes (memory, SQLite or Redis), got a store of ${store.url} without takeClass`);
  }
  const clock = settings.clock ?? systemClock;
  const keys = new KeyBuckets({ store, clock, onLost: buckets.onError, onBack: buckets.onBack, whileLost: { mode: buckets.onStoreError ?? "fail" } });
  const shared: SharedClasses = { store, keys, clock, limits: settings.limits, classes: settings.classes };
  return {
    open: (client) => new StoreKeyClasses(keyName(buckets.name, client), shared),
    dispose: () => keys.stop(),
  };
}

interface SharedClasses {
  store: LimitSetStore;
  keys: KeyBuckets;
  clock: Clock;
  limits: readonly LimitSpec[];
  classes: readonly ClassSpec[];
}

/** One client's key in the store, a limiter per class opened at the class's first request. */
class StoreKeyClasses implements KeyClasses {
  readonly #key: string;
  readonly #shared: SharedClasses;
  readonly #limiters = new Map<string, Promise<FailoverLimiter>>();
  /** Requests under way: the gate may forget the key only with none. */
  #busy = 0;
  /** While the store is lost (`local`): one private limiter that the key's classes share. */
  #private: ClassLimiter | undefined;

  constructor(key: string, shared: SharedClasses) {
    this.#key = key;
    this.#shared = shared;
  }

  async take(className: string, maxWaitMs: number, signal?: AbortSignal, cost = 1): Promise<ClassAnswer> {
    this.#busy++;
    try {
      try {
        return await this.#ask(className, maxWaitMs, signal, cost);
      } catch (error) {
        // The store forgot the client's key once it was full: it is made again, as at the first request.
        if (!(error instanceof StoreError && error.failure === "deleted")) throw error;
        this.#forget(className);
        return await this.#ask(className, maxWaitMs, signal, cost);
      }
    } finally {
      this.#busy--;
    }
  }

  level(): undefined {
    return undefined;
  }

  isIdle(): boolean {
    return this.#busy === 0 && (this.#private === undefined || this.#private.isIdle());
  }

  close(): void {
    this.#private?.close();
    for (const className of [...this.#limiters.keys()]) this.#forget(className);
  }

  async #ask(className: string, maxWaitMs: number, signal: AbortSignal | undefined, cost: number): Promise<ClassAnswer> {
    const limiter = await this.#limiter(className);
    return limiter.run((serving) => (serving as ClassTaker).tryTake(cost, maxWaitMs, signal), LET_THROUGH, signal);
  }

  #limiter(className: string): Promise<FailoverLimiter> {
    let opening = this.#limiters.get(className);
    if (!opening) {
      opening = this.#open(className);
      this.#limiters.set(className, opening);
      opening.catch(() => this.#limiters.get(className) === opening && this.#limiters.delete(className));
    }
    return opening;
  }

  #forget(className: string): void {
    const opening = this.#limiters.get(className);
    this.#limiters.delete(className);
    void opening?.then((limiter) => limiter.close()).catch(() => {});
  }

  async #open(className: string): Promise<FailoverLimiter> {
    const { keys } = this.#shared;
    const state = await this.#state().catch((error: unknown) => {
      // The store is away at the first request: the key is opened with the middleware's settings and made once the store is back.
      if (!isStoreFailure(error)) throw error;
      return this.#asConfigured();
    });
    const privateClasses = (): ClassLimiter => (this.#private ??= new ClassLimiter(this.#shared.limits, this.#shared.classes, { clock: this.#shared.clock }));
    return (await keys.openClass(this.#key, { unit: "count", className, state, expireWhenFull: true, privateClasses })) as FailoverLimiter;
  }

  /** The key as the store holds it, made with the middleware's limits and classes when it holds none. */
  async #state(): Promise<SetState> {
    const { store, limits, classes } = this.#shared;
    const state = await store.readSet(this.#key);
    if (state?.classes) return state;
    // A key set by hand without classes keeps its limits; the classes are shared under them.
    if (!state) await store.configureSet(this.#key, limits, { expireWhenFull: true });
    const made = await store.configureClasses!(this.#key, classes);
    if (!made) throw new StoreError("deleted", `key "${this.#key}": deleted from ${store.url} as it was made`, { storeUrl: store.url, key: this.#key });
    return made;
  }

  /** The key as a new one of the middleware's settings, for a limiter opened while the store is away. */
  #asConfigured(): SetState {
    const { limits, classes } = this.#shared;
    const share = limits.find((spec) => spec.kind === "bucket")!;
    return {
      key: this.#key,
      limits: limits.map((spec) => ({ ...spec, level: spec.kind === "bucket" ? spec.burst : spec.n })),
      updatedAtMs: this.#shared.clock.now(),
      classes: resolveClasses(classes, share.rate, share.kind === "bucket" ? share.burst : 1).map((c) => ({ ...c, level: c.burst, usedRate: 0 })),
    };
  }
}
