import type { RateKind } from "../core/units.js";

/**
 * A BucketStore keeps named token buckets that several processes share.
 *
 * Every operation that changes a bucket is one atomic read-modify-write in
 * the store (one SQLite transaction, one Redis Lua script), on the store's own
 * clock, with the semantics of golang.org/x/time/rate (src/core/token-bucket.ts):
 * lazy refill, fractional tokens, a clock that steps back is clamped.
 *
 * `take` is Reserve: it takes `n` tokens, letting the level go negative, and
 * says how long the caller must wait before using them. Reservations are
 * served first come, first served, so processes sharing a key take turns.
 * `cancel` is x/time/rate's Cancel: a reservation given up before its time
 * to act (an interrupted wait) gives its tokens back, less those that
 * reservations made after it already count on.
 * A bucket must be configured (rate, burst, kind) before it can be taken from.
 */
export interface BucketStore {
  /** The store's address as the user wrote it (for messages): `sqlite:/path`, `redis://host:6379`. */
  readonly url: string;
  /**
   * Takes `n` tokens from `key`, or says why not. `undefined` when the key is
   * not configured.
   */
  take(key: string, n: number, options?: TakeOptions): Promise<TakeResult | undefined>;
  /**
   * Several takes from `key` in one operation (a Redis script call): answered
   * in order, each exactly as `take` would answer it right after the one
   * before. Optional: `takeInOrder` makes the takes one by one without it.
   */
  takeMany?(key: string, takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined>;
  /**
   * Gives back a reservation `take` made and that will not be used. Nothing
   * comes back once its time to act has passed; otherwise its tokens less
   * those reserved after it (they stay taken, so no later reservation moves).
   * Resolves to the tokens given back; `undefined` when the key is not configured.
   */
  cancel(key: string, reservation: StoreReservation): Promise<number | undefined>;
  /** The bucket's settings and level now, without changing it; `undefined` when unknown. */
  read(key: string): Promise<BucketState | undefined>;
  /**
   * Creates or changes a bucket's settings. A new bucket starts full; a rate
   * change keeps the tokens gained so far; a lower burst caps the level; a
   * change of kind starts the bucket full again.
   */
  configure(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState>;
  /**
   * The key's settings and level as `read` gives them when the store holds it
   * with tokens of `config`'s kind (a `tbucket key set` stands), else the key
   * made as `configure` makes it: in one operation. Optional: `openKey` reads,
   * then configures, without it.
   */
  open?(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState>;
  /** Every bucket, sorted by key. */
  list(): Promise<BucketState[]>;
  /** Forgets a bucket; says whether it existed. */
  delete(key: string): Promise<boolean>;
  /** Releases the connection or file. */
  close(): Promise<void>;
}

export interface BucketConfig {
  /** Tokens per second; Infinity for no limit, 0 to pause (the level is kept, nothing is added). */
  rate: number;
  /** Capacity in tokens. */
  burst: number;
  /** What a token is: a byte, or a count (a line, a launch). */
  kind: RateKind;
}

/**
 * How a key came to be. A program that makes a key per client (a proxy's
 * `NAME:down:<address>`) would keep every client it ever saw; a full bucket
 * is the same as a new one, so such a key may be forgotten once it is full
 * again, and made anew (full) when the client comes back.
 */
export interface ConfigureOptions {
  /**
   * The key is made implicitly, not by a user: the store may forget it once
   * it has been full for `FULL_KEY_MARGIN_MS` (Redis: an expiry; SQLite: a
   * sweep when other such keys are made). Only a new key, or one already so
   * marked, takes the mark; a configure without it (`tbucket key set`) makes
   * the key permanent again, so a key a user set is never forgotten this way.
   */
  expireWhenFull?: boolean;
}

/** How long a key made with `expireWhenFull` stays after it is full again: a client that comes back soon finds it. */
export const FULL_KEY_MARGIN_MS = 60_000;

export interface BucketState extends BucketConfig {
  key: string;
  /** The level now (negative while reservations are waiting). */
  tokens: number;
  /** When the bucket was last changed, in ms since the epoch on the store's clock. */
  updatedAtMs: number;
  /** Set when the key was made with `expireWhenFull` and may be forgotten once full. */
  expiresWhenFull?: true;
}

export interface TakeOptions {
  /** Refuse, changing nothing, when the wait would be longer (Reserve with a limit). */
  maxWaitMs?: number;
  /**
   * Allow `n` above the burst (a lease, not a user's request): the reservation
   * runs the bucket into debt, exactly as `ceil(n / burst)` back-to-back
   * reservations would. Not combined with `maxWaitMs`.
   */
  overBurst?: boolean;
}

/** One take of a batch (`takeMany`). */
export interface TakeRequest {
  n: number;
  options?: TakeOptions;
}

/** Opens a key as `BucketStore.open` says: in one call where the store can, else read, then configured if need be. */
export async function openKey(store: BucketStore, key: string, config: BucketConfig, options: ConfigureOptions): Promise<BucketState> {
  if (store.open) return store.open(key, config, options);
  const stored = await store.read(key);
  return stored?.kind === config.kind ? stored : store.configure(key, config, options);
}

/** The takes in one call where the store can (`takeMany`), else one by one, in order. */
export function takeInOrder(store: BucketStore, key: string, takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined> {
  // No promise of its own where the store takes them in one call: every shared decision comes this way.
  return store.takeMany ? store.takeMany(key, takes) : takeOneByOne(store, key, takes);
}

async function takeOneByOne(store: BucketStore, key: string, takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined> {
  const results: TakeResult[] = [];
  for (const take of takes) {
    const result = await store.take(key, take.n, take.options);
    if (!result) return undefined;
    results.push(result);
  }
  return results;
}

export interface TakeResult {
  /** False when `n` exceeds the burst or the wait would exceed `maxWaitMs`: nothing was taken. */
  ok: boolean;
  /**
   * How long to wait before using the tokens; Infinity when not ok, and when
   * the rate is 0 and the level did not cover them (owed until the rate is raised).
   */
  waitMs: number;
  /** When the tokens may be used, in ms on the store's clock (for `cancel`); Infinity when `waitMs` is. */
  timeToActMs: number;
  /** The level after the take. */
  tokens: number;
  /** The bucket's settings at the time of the take, so callers follow live changes. */
  rate: number;
  burst: number;
  kind: RateKind;
}

/** What `cancel` needs of a take: the `n` tokens it took and its time to act on the store's clock. */
export interface StoreReservation {
  n: number;
  timeToActMs: number;
}

/**
 * What kind of store failure, the same words for every backend: callers
 * choose what to offer by it (another store, a private bucket, setting the
 * key again) without reading the message, which says it in the backend's own
 * words (a SQLite file, a Redis server).
 * - `unreachable`: the store could not be reached, or answered wrongly, at the start.
 * - `refused`: the store refused us (a password, a permission, a database it lacks, a read-only replica).
 * - `lost`: the store went away while in use; `restarted`: it came back without a key in use
 *   (a Redis restarted empty), which its users make again.
 * - `locked`: another program holds the store past the wait for it.
 * - `corrupt`: what is there is not a tbucket store, or is damaged.
 * - `read-only`: the store cannot be written; `cannot-open`: it cannot be opened or made there.
 * - `newer-schema`: written by a newer tbucket.
 * - `not-a-store`: the address names something that cannot hold one (a directory, a device).
 * - `failed`: the store failed otherwise.
 * - `deleted`: the key was deleted while in use; `closed`: the limiter was closed while waiting.
 * - `holds-a-set`: the key holds a set of limits (LimitSetStore), which a one-bucket take cannot take from.
 */
export type StoreFailure =
  | "unreachable"
  | "refused"
  | "lost"
  | "restarted"
  | "locked"
  | "corrupt"
  | "read-only"
  | "cannot-open"
  | "newer-schema"
  | "not-a-store"
  | "failed"
  | "deleted"
  | "closed"
  | "holds-a-set"
  | "classes";

export interface StoreErrorDetails {
  /** The store's address as shown to users (password hidden). */
  storeUrl: string;
  /** The key concerned, when there is one. */
  key?: string;
  cause?: unknown;
}

/**
 * A store failure. The message is one line, `store <url>: <why>[; <what to
 * do>]`, and names no command-line flag: a program that offers other ways
 * out (another store, a private bucket) adds them, by `failure`.
 */
export class StoreError extends Error {
  readonly code = "ESTORE";
  readonly failure: StoreFailure;
  readonly storeUrl: string;
  readonly key: string | undefined;

  constructor(failure: StoreFailure, message: string, details: StoreErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = "StoreError";
    this.failure = failure;
    this.storeUrl = details.storeUrl;
    this.key = details.key;
  }
}

/** Checks a take's arguments the same way in every store. */
export function checkTake(n: number, options: TakeOptions | undefined): void {
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${n}\` (${typeof n})`);
  }
  if (options?.overBurst && options.maxWaitMs !== undefined && options.maxWaitMs !== Infinity) {
    throw new RangeError("Expected `overBurst` without `maxWaitMs`");
  }
}

/** Checks a cancel's arguments the same way in every store. */
export function checkCancel(reservation: StoreReservation): void {
  const { n, timeToActMs } = reservation ?? {};
  if (typeof n !== "number" || !Number.isFinite(n) || n < 0) {
    throw new RangeError(`Expected \`n\` to be a non-negative finite number, got \`${n}\` (${typeof n})`);
  }
  if (typeof timeToActMs !== "number" || Number.isNaN(timeToActMs)) {
    throw new RangeError(`Expected \`timeToActMs\` to be a number, got \`${timeToActMs}\` (${typeof timeToActMs})`);
  }
}

/** Checks a configuration the same way in every store. */
export function checkConfig(config: BucketConfig): void {
  if (typeof config.rate !== "number" || Number.isNaN(config.rate) || config.rate < 0) {
    throw new RangeError(`Expected \`rate\` to be a non-negative number or Infinity, got \`${config.rate}\``);
  }
  if (typeof config.burst !== "number" || !Number.isFinite(config.burst) || config.burst <= 0) {
    throw new RangeError(`Expected \`burst\` to be a positive finite number, got \`${config.burst}\``);
  }
  if (config.kind !== "bytes" && config.kind !== "count") {
    throw new RangeError(`Expected \`kind\` to be "bytes" or "count", got \`${String(config.kind)}\``);
  }
}
