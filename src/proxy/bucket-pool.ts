import { type Clock, systemClock } from "../core/clock.js";
import { KeyTable } from "../core/key-table.js";
import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";
import { LimitSetLimiter } from "../core/limit-set-limiter.js";
import type { BucketSpec, WindowSpec } from "../core/limit-spec.js";
import { type BucketScope, TCP_SCOPES, type TcpScopeRow } from "./key-scopes.js";

export type { BucketScope };

/** A direction of a proxied connection: `up` from the client to the backend, `down` back. */
export type Direction = "up" | "down";

/** A limit of bytes one way: a token bucket (`--rate`, `--up`, `--down`) or a sliding window (`--window`). */
export type ByteLimit = BucketSpec | WindowSpec;

/** One direction's limits, in command-line order (numbered from 1 in that order); every one holds. */
export interface ByteBucketSpec {
  limits: readonly ByteLimit[];
}

/** The bucket of a direction limited by one bucket alone (the form a store keeps as a plain key); undefined for a set. */
export function singleBucket(spec: ByteBucketSpec): BucketSpec | undefined {
  const [first, ...rest] = spec.limits;
  return rest.length === 0 && first?.kind === "bucket" ? first : undefined;
}

/** `{ limits: [a bucket of rate and burst] }`: the usual direction of one byte rate. */
export function byteBucket(bytesPerSecond: number, burstBytes: number): ByteBucketSpec {
  return { limits: [{ kind: "bucket", unit: "bytes", rate: bytesPerSecond, burst: burstBytes }] };
}

export interface OpenedLimiter {
  limiter: Limiter;
  /** Releases what the limiter holds (a store's lease); the pool calls it when it drops the bucket. */
  close(): Promise<void>;
}

/**
 * Opens the bucket of one direction for one key: `""` for the link, the
 * client's address, or `#<n>` for a connection. A store-backed factory names
 * its shared keys from it; the default makes a private TokenBucket.
 */
export type LimiterFactory = (key: string, direction: Direction, spec: ByteBucketSpec) => OpenedLimiter | Promise<OpenedLimiter>;

export interface BucketPoolOptions {
  scope: BucketScope;
  /** Each direction's bucket; an absent direction is not limited. */
  up?: ByteBucketSpec;
  down?: ByteBucketSpec;
  open?: LimiterFactory;
  /** The private buckets' clock and the sweep's; default the system clock. */
  clock?: Clock;
}

/** The buckets one connection pays into, until it calls `release`. */
export interface ConnectionBuckets {
  up: Limiter | undefined;
  down: Limiter | undefined;
  release(): void;
}

interface OpenedPair {
  up: OpenedLimiter | undefined;
  down: OpenedLimiter | undefined;
}

interface Entry {
  opening: Promise<OpenedPair>;
  /** Once opened: every connection given the entry has it, so every idle entry does. */
  opened: OpenedPair | undefined;
  /** Connections paying into it now. */
  users: number;
}

/** Private buckets, full at the start, on `clock`: one bucket alone a TokenBucket, more limits a set. */
export function privateBuckets(clock: Clock): LimiterFactory {
  return (_key, _direction, spec) => {
    const bucket = singleBucket(spec);
    return {
      limiter: bucket ? new TokenBucket({ rate: bucket.rate, burst: bucket.burst, clock }) : new LimitSetLimiter(spec.limits, { unit: "bytes", clock }),
      close: async () => {},
    };
  };
}

/** A private bucket, full at the start, on the system clock. */
export const openPrivateBucket: LimiterFactory = privateBuckets(systemClock);

/**
 * BucketPool hands each connection the buckets of its scope. A client's
 * buckets live while the client has a connection open, and after that until
 * they are full again: a full bucket is the same as a new one, so dropping it
 * then changes nothing for the client and keeps the table small. A
 * connection's buckets go with it; the link's stay.
 *
 * Buckets without a connection that are not full yet wait in a KeyTable,
 * the one every keyed surface uses, in the order their last connection
 * closed; it drops them as they are spent (full), swept by one timer set for
 * when the oldest will be.
 */
export class BucketPool {
  readonly #scope: TcpScopeRow;
  readonly #up: ByteBucketSpec | undefined;
  readonly #down: ByteBucketSpec | undefined;
  readonly #open: LimiterFactory;
  readonly #clock: Clock;
  /** Buckets with a connection open (and the link's, always). */
  readonly #inUse = new Map<string, Entry>();
  /** Buckets whose last connection closed, until they are full; opened, since a connection had them. */
  readonly #idle: KeyTable<Entry>;
  readonly #closing = new Set<Promise<void>>();
  /** The idle table's sweep, when one is due: its time, and how to stop it. */
  #sweep: { atMs: number; stop: AbortController } | undefined;
  #connections = 0;

  constructor(options: BucketPoolOptions) {
    this.#scope = TCP_SCOPES[options.scope];
    this.#up = options.up;
    this.#down = options.down;
    this.#clock = options.clock ?? systemClock;
    this.#open = options.open ?? privateBuckets(this.#clock);
    this.#idle = new KeyTable<Entry>({
      // Bounded by the connections open and how fast they close: a bucket leaves once full.
      maxKeys: Number.MAX_SAFE_INTEGER,
      isSpent: (entry) => this.#msUntilFull(entry) === 0,
      // An entry leaves the table when a connection takes it back, too: then it stays open.
      onRemove: (_key, entry) => {
        if (entry.users === 0) this.#closeEntry(entry);
      },
    });
  }

  /** Buckets held now (one key holds a bucket per limited direction). */
  get liveKeys(): number {
    return this.#inUse.size + this.#idle.size;
  }

  /** The buckets for a new connection from `clientAddress`. */
  async acquire(clientAddress: string): Promise<ConnectionBuckets> {
    const key = this.#scope.keyOf(clientAddress, ++this.#connections);
    const entry = this.#inUse.get(key) ?? this.#idle.peek(key) ?? this.#newEntry(key);
    entry.users++;
    this.#idle.delete(key);
    this.#inUse.set(key, entry);
    let opened;
    try {
      opened = await entry.opening;
    } catch (error) {
      if (this.#inUse.get(key) === entry) this.#inUse.delete(key);
      throw error;
    }
    let released = false;
    return {
      up: opened.up?.limiter,
      down: opened.down?.limiter,
      release: () => {
        if (released) return;
        released = true;
        // The link's buckets ("") stay while the proxy runs.
        if (--entry.users > 0 || key === "" || this.#inUse.get(key) !== entry) return;
        this.#inUse.delete(key);
        // Spent already (full, or a connection's own): gone at once, not after the idle ones older than it.
        if (this.#msUntilFull(entry) === 0) return this.#closeEntry(entry);
        this.#idle.set(key, entry);
        this.#sweepIdle();
      },
    };
  }

  /** Drops every bucket at once (the proxy is closing). */
  async close(): Promise<void> {
    this.#sweep?.stop.abort();
    this.#sweep = undefined;
    for (const entry of this.#inUse.values()) this.#closeEntry(entry);
    this.#inUse.clear();
    this.#idle.clear();
    await Promise.all(this.#closing);
  }

  #newEntry(key: string): Entry {
    const entry: Entry = { opening: this.#openBoth(key).then((opened) => (entry.opened = opened)), opened: undefined, users: 0 };
    return entry;
  }

  async #openBoth(key: string): Promise<OpenedPair> {
    const [up, down] = await Promise.all([
      this.#up ? this.#open(key, "up", this.#up) : undefined,
      this.#down ? this.#open(key, "down", this.#down) : undefined,
    ]);
    return { up, down };
  }

  /**
   * Drops the idle buckets that are full, from the oldest, and sets the
   * sweep for when the oldest left will be. One that never refills (rate 0:
   * a paused client keeps its empty bucket) moves to the young end, so that
   * it holds up no other.
   */
  #sweepIdle(): void {
    for (let looked = 0; looked < this.#idle.size; looked++) {
      this.#idle.sweep();
      const oldest = this.#idle.entries().next();
      if (oldest.done) return;
      const [key, entry] = oldest.value;
      const untilFullMs = this.#msUntilFull(entry);
      if (untilFullMs === Infinity) {
        this.#idle.get(key);
        continue;
      }
      return this.#sweepIn(untilFullMs);
    }
  }

  #sweepIn(ms: number): void {
    const atMs = this.#clock.now() + ms;
    if (this.#sweep && this.#sweep.atMs <= atMs) return;
    this.#sweep?.stop.abort();
    const sweep = { atMs, stop: new AbortController() };
    this.#sweep = sweep;
    this.#clock.sleep(ms, sweep.stop.signal).then(
      () => {
        if (this.#sweep !== sweep) return;
        this.#sweep = undefined;
        this.#sweepIdle();
      },
      () => {},
    );
  }

  /**
   * How long until an idle entry's buckets are full again, in whole ms: 0 when
   * they are, or when their level is not known here (a shared bucket lives on
   * in its store anyway); Infinity when one never refills (rate 0). A
   * connection's buckets are spent as soon as it is gone.
   */
  #msUntilFull(entry: Entry): number {
    if (this.#scope.ownBuckets) return 0;
    return Math.ceil(Math.max(msUntilFull(entry.opened?.up?.limiter), msUntilFull(entry.opened?.down?.limiter)));
  }

  #closeEntry(entry: Entry): void {
    const closing = (async () => {
      const opened = await entry.opening.catch(() => undefined);
      await Promise.all([opened?.up?.close(), opened?.down?.close()].map((closed) => closed?.catch(() => {})));
    })();
    this.#closing.add(closing);
    void closing.finally(() => this.#closing.delete(closing));
  }
}

/**
 * How long until the limiter is full again: 0 when it is, or when its level
 * is not known here; Infinity when it never refills (rate 0).
 */
function msUntilFull(limiter: Limiter | undefined): number {
  if (limiter instanceof LimitSetLimiter) return msUntilIdle(limiter);
  if (!limiter || !limiter.tokens || limiter.rate === Infinity) return 0;
  const missing = limiter.burst - limiter.tokens();
  if (missing <= 0) return 0;
  if (limiter.rate === 0) return Infinity;
  return (missing / limiter.rate) * 1000;
}

/**
 * How long until a set is the same as a new one: its bucket full and every
 * window empty. A window that holds anything is empty within its length
 * (its latest record leaves by then), which is when the sweep looks again.
 */
function msUntilIdle(limiter: LimitSetLimiter): number {
  const nowMs = limiter.clock.now();
  let most = 0;
  limiter.set.specs.forEach((spec, index) => {
    const level = limiter.set.levelAt(nowMs, index);
    if (spec.kind === "bucket" && spec.rate !== Infinity && level < spec.burst) most = Math.max(most, spec.rate === 0 ? Infinity : ((spec.burst - level) / spec.rate) * 1000);
    if (spec.kind === "window" && level < spec.n) most = Math.max(most, spec.windowMs);
  });
  return most;
}
