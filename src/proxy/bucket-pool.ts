import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";

/** Who shares a bucket: every connection of the listener, each connection alone, or the connections of one client address. */
export type BucketScope = "link" | "connection" | "client";

/** A direction of a proxied connection: `up` from the client to the backend, `down` back. */
export type Direction = "up" | "down";

export interface ByteBucketSpec {
  /** Bytes per second. */
  bytesPerSecond: number;
  burstBytes: number;
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
}

/** The buckets one connection pays into, until it calls `release`. */
export interface ConnectionBuckets {
  up: Limiter | undefined;
  down: Limiter | undefined;
  release(): void;
}

interface Entry {
  opening: Promise<{ up: OpenedLimiter | undefined; down: OpenedLimiter | undefined }>;
  users: number;
  dropTimer: ReturnType<typeof setTimeout> | undefined;
}

/** A private bucket, full at the start. */
export const openPrivateBucket: LimiterFactory = (_key, _direction, spec) => ({
  limiter: new TokenBucket({ rate: spec.bytesPerSecond, burst: spec.burstBytes }),
  close: async () => {},
});

/**
 * BucketPool hands each connection the buckets of its scope. A client's
 * buckets live while the client has a connection open, and after that until
 * they are full again: a full bucket is the same as a new one, so dropping it
 * then changes nothing for the client and keeps the table small. A
 * connection's buckets go with it.
 */
export class BucketPool {
  readonly #scope: BucketScope;
  readonly #up: ByteBucketSpec | undefined;
  readonly #down: ByteBucketSpec | undefined;
  readonly #open: LimiterFactory;
  readonly #entries = new Map<string, Entry>();
  #connections = 0;

  constructor(options: BucketPoolOptions) {
    this.#scope = options.scope;
    this.#up = options.up;
    this.#down = options.down;
    this.#open = options.open ?? openPrivateBucket;
  }

  /** Buckets held now (one key holds a bucket per limited direction). */
  get liveKeys(): number {
    return this.#entries.size;
  }

  /** The buckets for a new connection from `clientAddress`. */
  async acquire(clientAddress: string): Promise<ConnectionBuckets> {
    const key = this.#scope === "link" ? "" : this.#scope === "client" ? clientAddress : `#${++this.#connections}`;
    let entry = this.#entries.get(key);
    if (!entry) {
      entry = { opening: this.#openBoth(key), users: 0, dropTimer: undefined };
      this.#entries.set(key, entry);
    }
    entry.users++;
    if (entry.dropTimer) clearTimeout(entry.dropTimer);
    entry.dropTimer = undefined;
    const current = entry;
    let opened;
    try {
      opened = await current.opening;
    } catch (error) {
      this.#entries.delete(key);
      throw error;
    }
    let released = false;
    return {
      up: opened.up?.limiter,
      down: opened.down?.limiter,
      release: () => {
        if (released) return;
        released = true;
        current.users--;
        if (current.users === 0) this.#dropWhenFull(key, current);
      },
    };
  }

  /** Drops every bucket at once (the proxy is closing). */
  async close(): Promise<void> {
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map((entry) => this.#closeEntry(entry)));
  }

  async #openBoth(key: string): Promise<{ up: OpenedLimiter | undefined; down: OpenedLimiter | undefined }> {
    const [up, down] = await Promise.all([
      this.#up ? this.#open(key, "up", this.#up) : undefined,
      this.#down ? this.#open(key, "down", this.#down) : undefined,
    ]);
    return { up, down };
  }

  #dropWhenFull(key: string, entry: Entry): void {
    if (this.#scope === "link" || this.#entries.get(key) !== entry) return;
    void entry.opening.then(
      (opened) => {
        if (entry.users > 0 || this.#entries.get(key) !== entry) return;
        const untilFullMs = this.#scope === "connection" ? 0 : Math.max(msUntilFull(opened.up?.limiter), msUntilFull(opened.down?.limiter));
        if (untilFullMs === Infinity) return;
        if (untilFullMs > 0) {
          entry.dropTimer = setTimeout(() => this.#dropWhenFull(key, entry), Math.ceil(untilFullMs));
          entry.dropTimer.unref();
          return;
        }
        this.#entries.delete(key);
        void this.#closeEntry(entry);
      },
      () => {},
    );
  }

  async #closeEntry(entry: Entry): Promise<void> {
    if (entry.dropTimer) clearTimeout(entry.dropTimer);
    const opened = await entry.opening.catch(() => undefined);
    await Promise.all([opened?.up?.close(), opened?.down?.close()].map((closing) => closing?.catch(() => {})));
  }
}

/**
 * How long until the limiter is full again: 0 when it is, or when its level
 * is not known here (a shared bucket lives on in its store anyway); Infinity
 * when it never refills (rate 0), so a paused client keeps its empty bucket.
 */
function msUntilFull(limiter: Limiter | undefined): number {
  if (!limiter || !limiter.tokens || limiter.rate === Infinity) return 0;
  const missing = limiter.burst - limiter.tokens();
  if (missing <= 0) return 0;
  if (limiter.rate === 0) return Infinity;
  return (missing / limiter.rate) * 1000;
}
