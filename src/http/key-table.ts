/**
 * KeyTable holds one value per key (a client's bucket), at most `maxKeys` of
 * them, in order of last use.
 *
 * A full table evicts the least recently used key. Before that, and on every
 * `sweep`, values that `isSpent` calls spent go first, oldest first: a bucket
 * that has refilled completely is the same as the new one a returning
 * client would get, so dropping it changes nothing but the memory it held.
 * A Map keeps insertion order, so moving a key to the end on each use makes
 * its first entry the least recently used.
 */
export interface KeyTableOptions<V> {
  /** The most keys held at once; at least 1. */
  maxKeys: number;
  /** True when `value` can be dropped without anyone noticing (a full bucket, no one waiting). */
  isSpent(value: V): boolean;
  /** Told of every value that leaves the table, spent or evicted (to release what it holds). */
  onRemove?(key: string, value: V): void;
}

/** How many old entries one `set` examines for spent values: amortised, never a scan of the table. */
const SWEEP_PER_SET = 2;

export class KeyTable<V> {
  readonly #map = new Map<string, V>();
  readonly #maxKeys: number;
  readonly #isSpent: (value: V) => boolean;
  readonly #onRemove: ((key: string, value: V) => void) | undefined;
  /** Keys evicted while not spent: their clients start afresh (for metrics and tests). */
  evictions = 0;

  constructor(options: KeyTableOptions<V>) {
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) {
      throw new RangeError(`Expected \`maxKeys\` to be a positive integer, got \`${options.maxKeys}\` (${typeof options.maxKeys})`);
    }
    this.#maxKeys = options.maxKeys;
    this.#isSpent = options.isSpent;
    this.#onRemove = options.onRemove;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The value for `key`, which becomes the most recently used. */
  get(key: string): V | undefined {
    const value = this.#map.get(key);
    if (value === undefined) return undefined;
    this.#map.delete(key);
    this.#map.set(key, value);
    return value;
  }

  /** The value without touching its place in the order. */
  peek(key: string): V | undefined {
    return this.#map.get(key);
  }

  /** Adds or replaces `key` as the most recently used, making room first. */
  set(key: string, value: V): void {
    if (this.#map.has(key)) {
      this.#map.delete(key);
    } else {
      this.sweep(SWEEP_PER_SET);
      while (this.#map.size >= this.#maxKeys) this.#evictOldest();
    }
    this.#map.set(key, value);
  }

  /** Drops `key`; says whether it was there. */
  delete(key: string): boolean {
    const value = this.#map.get(key);
    if (value === undefined) return false;
    this.#map.delete(key);
    this.#onRemove?.(key, value);
    return true;
  }

  /**
   * Drops spent values from the old end, looking at no more than `budget`
   * entries and stopping at the first that is not spent (newer ones are
   * unlikely to be). Returns how many were dropped.
   */
  sweep(budget = Infinity): number {
    let dropped = 0;
    let looked = 0;
    for (const [key, value] of this.#map) {
      if (looked++ >= budget || !this.#isSpent(value)) break;
      this.#map.delete(key);
      this.#onRemove?.(key, value);
      dropped++;
    }
    return dropped;
  }

  /** Every entry, least recently used first. */
  entries(): IterableIterator<[string, V]> {
    return this.#map.entries();
  }

  /** Drops everything, telling `onRemove` of each. */
  clear(): void {
    const entries = [...this.#map];
    this.#map.clear();
    for (const [key, value] of entries) this.#onRemove?.(key, value);
  }

  #evictOldest(): void {
    const oldest = this.#map.entries().next();
    if (oldest.done) return;
    const [key, value] = oldest.value;
    if (!this.#isSpent(value)) this.evictions++;
    this.#map.delete(key);
    this.#onRemove?.(key, value);
  }
}
