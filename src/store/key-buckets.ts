import type { Clock } from "../core/clock.js";
import { LimitSetLimiter } from "../core/limit-set-limiter.js";
import { type CostUnit, type Costs, type LimitSpec, lowestRate, mostAtOnce } from "../core/limit-spec.js";
import { TokenBucket } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import { type BucketConfig, type BucketState, type BucketStore, StoreError } from "./bucket-store.js";
import { FailoverLimiter, type StoreBackedLimiter, type WhileLost } from "./failover-limiter.js";
import { type LimitSetStore, type SetState, specOf } from "./limit-set-store.js";
import { openSharedKey, sharedKeyLimiter } from "./shared-key.js";
import { SharedSetLimiter } from "./shared-set-limiter.js";
import { SharedLimiter } from "./shared-limiter.js";
import { SharedClassLimiter } from "./shared-class-limiter.js";
import { ClassLimiter } from "../core/class-limiter.js";
import { isStoreFailure, StoreWatch } from "./store-watch.js";

/**
 * The one naming rule for the keys a program makes: the name the user gave,
 * then what the key is for, each after a colon: `api` (pipe, run), `api:up`
 * and `api:down:10.0.0.1` (the proxy's link and a client), `api:10.0.0.1`
 * (the middleware's client).
 */
export function keyName(name: string, ...scope: readonly string[]): string {
  return [name, ...scope].join(":");
}

/** A key's bucket as KeyBuckets opens it: shared with failover, or private; `close` gives back what it holds (a lease not yet due). */
export type KeyBucket = StoreBackedLimiter;

export interface KeyBucketsOptions {
  /** The store the keys live in, or the failure that kept it from opening: then every key gets a private bucket of its settings. */
  store: BucketStore | StoreError;
  /** What a key's waits do while the store is lost (FailoverLimiter). */
  whileLost: WhileLost;
  /** Told once per outage, at its start. */
  onLost?: (error: StoreError) => void;
  /** Told once per outage, when the store answers again: how long it was gone. */
  onBack?: (lostForMs: number) => void;
  /**
   * Read each key's settings on a timer while no take does, so that a long
   * transfer follows a `tbucket key set` (pipe, run, the proxy); a server's
   * takes, one per request, bring them often enough.
   */
  poll?: boolean;
  /** What a failure of the key itself (deleted while in use) is thrown as; by default the StoreError. */
  keyFailure?: (error: StoreError) => unknown;
  clock?: Clock;
}

/** How one key is opened. */
export type KeyRequest = {
  /** The key is made for a client, not set by a user: the store may forget it once full again (ConfigureOptions). */
  expireWhenFull?: boolean;
} & (
  | {
      /** What the key is made with when the store lacks it, and what a private bucket gets. */
      settings: BucketConfig;
      /**
       * How the key is first set up on the store, instead of "the settings the
       * store holds stand, else it is made with `settings`": resolves to the
       * key's state after (the proxy's link keys take the command line's). A
       * set-up the store failed is run again when it answers; once done, a
       * key opened again after an outage takes the settings the store holds.
       */
      setUp?: (store: BucketStore) => Promise<BucketState>;
      required?: false;
    }
  | {
      settings?: BucketConfig;
      setUp: (store: BucketStore) => Promise<BucketState>;
      /**
       * The key must be set up on the store now: a failure is thrown rather
       * than left to `whileLost` (a command that cannot start without its key).
       */
      required: true;
    }
);

/** A key's set as openSet opens it: a KeyBucket that also holds concurrency slots for items that run a while. */
export interface SetKeyBucket extends KeyBucket {
  /** Waits as tryWait for an item of `costs` and holds its slots until the returned release; undefined when refused. */
  acquire(costs: Costs, maxWaitMs: number, signal?: AbortSignal): Promise<(() => Promise<void>) | undefined>;
  /** An item admitted at `admitted` cost `actual`: the difference is held for, or owed by, the next items (SharedSetLimiter.settle). */
  settle(admitted: Costs, actual: Costs): void;
  /** Keeps the key's launch buckets empty until `pauseMs` from now, for every process (SharedSetLimiter.emptyFor); false when it could not. */
  emptyFor(pauseMs: number): Promise<boolean>;
  /** Lowers the key's buckets counting `unit` to at most `most`, for every process (SharedSetLimiter.capLevel); false when it did not. */
  capLevel(unit: CostUnit, most: number): Promise<boolean>;
}

/** How a key that holds a set of limits is opened (`openSet`). */
export interface SetKeyRequest {
  /** What `n` counts for the command: its main unit. */
  unit: RateKind;
  /**
   * How the key's set is first set up on the store (the command line's
   * limits, or the set the store holds): resolves to its state after. It
   * stands until it is done once: a key opened while the store is lost is
   * served as `whileLost` says (`limits` as its settings), and set up once
   * the store is back.
   */
  setUp: (store: LimitSetStore) => Promise<SetState>;
  /** The set-up must succeed now (a command's own key at its start): a failure is thrown rather than left to `whileLost`. */
  required?: boolean;
  /** The limits of a private set when there is no store. */
  limits: readonly LimitSpec[];
  /** Told of each take's wait on the store and the limits (numbered from 1) that set it: for --stats. */
  onWait?: (limitedBy: readonly number[], waitMs: number) => void;
}

/** How a key shared by classes is opened (`openClass`). */
export interface ClassKeyRequest {
  unit: RateKind;
  className: string;
  /** The key with its classes, as read at the start. */
  state: SetState;
  /** The key is made for a client: made again after an outage, it may be forgotten once full (ConfigureOptions). */
  expireWhenFull?: boolean;
  /**
   * The private limiter of an outage (`local`), when several classes of the key are taken in this
   * process (a server's): one for all of them, so that they share it as they share the key. By
   * default one of this class alone (a pipe's, a run's).
   */
  privateClasses?: () => ClassLimiter;
}

/** Closing gives up after this long: a store that went away must not hold a program's exit. */
const CLOSE_WITHIN_MS = 1000;

/**
 * KeyBuckets opens the buckets of keys in one store, the same way for every
 * surface (pipe and run `--key`, both proxy modes, the middleware): each key
 * is a FailoverLimiter over one StoreWatch shared by every key, so that once
 * the store fails no key asks it again until a probe finds it back, and a
 * key opened while it is lost waits for its return as `whileLost` says. A
 * key that comes back from an outage is opened afresh with the settings the
 * store holds (a store restarted empty gets the key again, as it was).
 * Without a store (it could not be opened) each key is a private bucket.
 * What a program says about it (messages, flags) stays the program's.
 */
export class KeyBuckets {
  readonly #options: KeyBucketsOptions;
  readonly #watch: StoreWatch | undefined;

  constructor(options: KeyBucketsOptions) {
    this.#options = options;
    const { store } = options;
    this.#watch = store instanceof StoreError ? undefined : new StoreWatch(store, { clock: options.clock, onLost: options.onLost, onBack: options.onBack });
  }

  /** The store's address as the user wrote it (for messages). */
  get url(): string {
    const { store } = this.#options;
    return store instanceof StoreError ? store.storeUrl : store.url;
  }

  /** Opens `key`: shared with failover, or private when there is no store. */
  async open(key: string, request: KeyRequest): Promise<KeyBucket> {
    const watch = this.#watch;
    if (!watch) {
      if (!request.settings) throw new Error(`KeyBuckets: key "${key}" needs settings for a private bucket`);
      return new PrivateKeyBucket(request.settings, this.#options.clock);
    }
    const { clock, poll, keyFailure, whileLost } = this.#options;
    const expireWhenFull = request.expireWhenFull === true;
    // A key's own set-up stands until it is done once (a store lost at the start does not lose the command line's settings); then the store's settings do.
    let setUp = request.setUp;
    const reopen = async (settings: BucketConfig | undefined): Promise<StoreBackedLimiter> => {
      if (!setUp) return openSharedKey(watch, key, settings!, { expireWhenFull, poll, clock });
      const limiter = sharedKeyLimiter(watch, key, await setUp(watch), { poll, clock });
      setUp = undefined;
      return limiter;
    };
    let primary: StoreBackedLimiter | undefined;
    if (!watch.lost || request.required) {
      try {
        primary = await reopen(request.settings);
      } catch (error) {
        if (!isStoreFailure(error) || request.required) throw error;
      }
    }
    const settings = primary ? { rate: primary.rate, burst: primary.burst, kind: primary.kind } : request.settings!;
    const failover = new FailoverLimiter({ watch, key, settings, primary, reopen, whileLost, keyFailure, clock });
    // As a set's (openSet): while the store is lost, the private bucket is this process's, held by the runner's pause.
    const emptyFor = (pauseMs: number) => failover.run(async (limiter) => limiter instanceof SharedLimiter && limiter.emptyFor(pauseMs), false);
    // A one-bucket key counts launches.
    const capLevel = (unit: CostUnit, most: number) => failover.run(async (limiter) => unit === "count" && limiter instanceof SharedLimiter && limiter.capLevel(most), false);
    return Object.assign(failover, { emptyFor, capLevel });
  }

  /**
   * Opens a key that holds a set of limits: a SharedSetLimiter with
   * failover, or a private set when there is no store. While the store is
   * lost, `local` goes on with a private set of the key's limits as last
   * read; a key opened again after an outage takes the set the store holds
   * (a store restarted empty gets the key again, as it was).
   */
  async openSet(key: string, request: SetKeyRequest): Promise<SetKeyBucket> {
    const watch = this.#watch;
    const { clock, keyFailure, whileLost, poll } = this.#options;
    if (!watch) return privateSetBucket(request.limits, request.unit, clock);
    let limits: readonly LimitSpec[] = request.limits;
    let latest: SharedSetLimiter | undefined;
    const open = (state: SetState): SharedSetLimiter => {
      latest = new SharedSetLimiter({ store: watch, key, state, unit: request.unit, clock, onWait: request.onWait });
      if (poll) latest.startPolling();
      return latest;
    };
    const lastLimits = (): readonly LimitSpec[] => (latest ? latest.limits : limits);
    let setUp: SetKeyRequest["setUp"] | undefined = request.setUp;
    const reopen = async (): Promise<StoreBackedLimiter> => {
      if (setUp) {
        const state = await setUp(watch);
        setUp = undefined;
        return open(state);
      }
      limits = lastLimits();
      return open((await watch.readSet(key)) ?? (await watch.configureSet(key, limits)));
    };
    // As open() does: a key opened while the store is lost waits for it (or goes local) with its own limits.
    let primary: StoreBackedLimiter | undefined;
    if (!watch.lost || request.required) {
      try {
        primary = await reopen();
      } catch (error) {
        if (!isStoreFailure(error) || request.required) throw error;
      }
    }
    const settingsOf = (specs: readonly LimitSpec[]): BucketConfig => ({ rate: lowestRate(specs, request.unit), burst: mostAtOnce(specs, request.unit), kind: request.unit });
    let privateSet: LimitSetLimiter | undefined;
    const failover = new FailoverLimiter({
      watch,
      key,
      settings: settingsOf(lastLimits()),
      primary,
      reopen,
      whileLost,
      keyFailure,
      clock,
      makePrivate: () => (privateSet = new LimitSetLimiter(lastLimits(), { unit: request.unit, clock })),
    });
    const acquire: SetKeyBucket["acquire"] = (costs, maxWaitMs, signal) =>
      failover.run(
        async (limiter) => {
          // The limiter serving is the outage's private set, or the store's (the one opened last).
          if (limiter === privateSet) {
            const set = privateSet;
            const held = await set.acquire(costs, maxWaitMs, signal);
            return held && (async () => set.release(held));
          }
          const shared = limiter as SharedSetLimiter;
          const held = await shared.acquire(costs, maxWaitMs, signal);
          return held && (() => shared.release(held));
        },
        async () => {},
        signal,
      );
    // While the store is lost the private set serves: what its items really cost is not corrected there.
    const settle: SetKeyBucket["settle"] = (admitted, actual) => latest?.settle(admitted, actual);
    // While the store is lost, the outage's private set is this process's alone: the runner's own pause holds it.
    const emptyFor: SetKeyBucket["emptyFor"] = (pauseMs) =>
      failover.run(async (limiter) => (limiter === privateSet ? false : (limiter as SharedSetLimiter).emptyFor(pauseMs)), false);
    const capLevel: SetKeyBucket["capLevel"] = (unit, most) =>
      failover.run(async (limiter) => (limiter === privateSet ? false : (limiter as SharedSetLimiter).capLevel(unit, most)), false);
    return Object.assign(failover, { acquire, settle, emptyFor, capLevel });
  }

  /**
   * Opens a key shared by classes, taking as class `className`: a
   * SharedClassLimiter with failover. The key and its classes must be in the
   * store now (`state`, read at the start). While the store is lost,
   * `local` goes on with a private ClassLimiter of the key's limits and
   * classes as last read, this process's class alone in it.
   */
  async openClass(key: string, request: ClassKeyRequest): Promise<KeyBucket> {
    const watch = this.#watch;
    const { clock, keyFailure, whileLost } = this.#options;
    if (!watch) throw new Error(`KeyBuckets: key "${key}" is shared by classes and needs a store`);
    let latest = new SharedClassLimiter({ store: watch, key, className: request.className, state: request.state, unit: request.unit, clock });
    let limits = request.state.limits.map(specOf);
    const reopen = async (): Promise<StoreBackedLimiter> => {
      // A store restarted empty gets the key again, as it was last read: its limits and its classes.
      let state = await watch.readSet(key);
      if (!state) {
        await watch.configureSet(key, limits, request.expireWhenFull ? { expireWhenFull: true } : undefined);
        state = await watch.configureClasses(key, latest.classes);
      }
      if (!state) throw new StoreError("deleted", `key "${key}": deleted from ${watch.url} while in use`, { storeUrl: watch.url, key });
      limits = state.limits.map(specOf);
      latest = new SharedClassLimiter({ store: watch, key, className: request.className, state, unit: request.unit, clock });
      return latest;
    };
    return new FailoverLimiter({
      watch,
      key,
      settings: { rate: latest.rate, burst: latest.burst, kind: request.unit },
      primary: latest,
      reopen,
      whileLost,
      keyFailure,
      clock,
      makePrivate: () => (request.privateClasses?.() ?? new ClassLimiter(limits, latest.classes, { clock })).limiterFor(request.className),
    });
  }

  /** Stops watching the store, leaving it open (it is someone else's to close). */
  stop(): void {
    this.#watch?.stop();
  }

  /** Closes `first` (their leases given back), then the store; gives up after a second. */
  close(first: Iterable<KeyBucket> = []): Promise<void> {
    return closeQuietly(async () => {
      for (const bucket of first) await bucket.close().catch(() => {});
      await this.#watch?.close();
    });
  }
}

/** Runs `close`, ignoring its failure and giving up after a second: a store that went away must not hold a program's exit. */
export async function closeQuietly(close: () => Promise<unknown>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([close().catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WITHIN_MS).unref()))]);
  clearTimeout(timer);
}

/** A key's bucket when there is no store: the key's settings, held by this process alone. */
class PrivateKeyBucket extends TokenBucket implements KeyBucket {
  readonly kind: RateKind;
  constructor(settings: BucketConfig, clock: Clock | undefined) {
    super({ rate: settings.rate, burst: settings.burst, clock });
    this.kind = settings.kind;
  }
  async close(): Promise<void> {}
}

/** A key's set when there is no store: its limits, held by this process alone. */
function privateSetBucket(limits: readonly LimitSpec[], kind: RateKind, clock: Clock | undefined): SetKeyBucket {
  const set = new LimitSetLimiter(limits, { unit: kind, clock });
  return {
    kind,
    get rate() {
      return set.rate;
    },
    get burst() {
      return set.burst;
    },
    tokens: () => set.tokens(),
    wait: (n, signal, costs) => set.wait(n, signal, costs),
    tryWait: (n, maxWaitMs, signal, costs) => set.tryWait(n, maxWaitMs, signal, costs),
    acquire: async (costs, maxWaitMs, signal) => {
      const held = await set.acquire(costs, maxWaitMs, signal);
      return held && (async () => set.release(held));
    },
    settle: () => {},
    emptyFor: async () => false,
    capLevel: async () => false,
    close: async () => {},
  };
}
