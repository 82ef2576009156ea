/**
 * KeyTable holds one value per key (a client's bucket), at most `maxKeys` of
 * them, in order of last use.
 *
 * A full table evicts the least recently used key. Before that, and on every
 * `sweep`, values that `isSpent` calls spent go first, oldest first: a bucket
 * that has refilled completely is the same as the new one a returning
 * client would get, so dropping it changes nothing but the memory it held.
 *
 * The order is a doubly linked list beside a Map from key to node, so every
 * use, insertion and eviction costs the same however many keys came and went.
 * (A Map alone keeps insertion order, but the entries it deletes stay in its
 * storage until it is rebuilt, and reading its oldest entry steps over every
 * one of them: a full table that keeps evicting slowed down with its churn.)
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

interface Node<V> {
  key: string;
  value: V;
  /** Toward the least recently used end. */
  older: Node<V> | undefined;
  /** Toward the most recently used end. */
  newer: Node<V> | undefined;
}

export class KeyTable<V> {
  readonly #nodes = new Map<string, Node<V>>();
  /** The least recently used entry, and the most. */
  #oldest: Node<V> | undefined;
  #newest: Node<V> | undefined;
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
    return this.#nodes.size;
  }

  /** The value for `key`, which becomes the most recently used. */
  get(key: string): V | undefined {
    const node = this.#nodes.get(key);
    if (node === undefined) return undefined;
    this.#unlink(node);
    this.#append(node);
    return node.value;
  }

  /** The value without touching its place in the order. */
  peek(key: string): V | undefined {
    return this.#nodes.get(key)?.value;
  }

  /** Adds or replaces `key` as the most recently used, making room first. */
  set(key: string, value: V): void {
    const present = this.#nodes.get(key);
    if (present !== undefined) {
      present.value = value;
      this.#unlink(present);
      this.#append(present);
      return;
    }
    this.sweep(SWEEP_PER_SET);
    while (this.#nodes.size >= this.#maxKeys) this.#evictOldest();
    const node: Node<V> = { key, value, older: undefined, newer: undefined };
    this.#nodes.set(key, node);
    this.#append(node);
  }

  /** Drops `key`; says whether it was there. */
  delete(key: string): boolean {
    const node = this.#nodes.get(key);
    if (node === undefined) return false;
    this.#remove(node);
    return true;
  }

  /**
   * Drops spent values from the old end, looking at no more than `budget`
   * entries and stopping at the first that is not spent (newer ones are
   * unlikely to be). Returns how many were dropped.
   */
  sweep(budget = Infinity): number {
    let dropped = 0;
    while (dropped < budget && this.#oldest !== undefined && this.#isSpent(this.#oldest.value)) {
      this.#remove(this.#oldest);
      dropped++;
    }
    return dropped;
  }

  /** Every entry, least recently used first. */
  *entries(): IterableIterator<[string, V]> {
    for (let node = this.#oldest; node !== undefined; node = node.newer) yield [node.key, node.value];
  }

  /** Drops everything, telling `onRemove` of each. */
  clear(): void {
    const entries = [...this.entries()];
    this.#nodes.clear();
    this.#oldest = this.#newest = undefined;
    for (const [key, value] of entries) this.#onRemove?.(key, value);
  }

  #evictOldest(): void {
    const oldest = this.#oldest;
    if (oldest === undefined) return;
    if (!this.#isSpent(oldest.value)) this.evictions++;
    this.#remove(oldest);
  }

  #remove(node: Node<V>): void {
    this.#nodes.delete(node.key);
    this.#unlink(node);
    this.#onRemove?.(node.key, node.value);
  }

  #append(node: Node<V>): void {
    node.older = this.#newest;
    node.newer = undefined;
    if (this.#newest) this.#newest.newer = node;
    else this.#oldest = node;
    this.#newest = node;
  }

  #unlink(node: Node<V>): void {
    if (node.older) node.older.newer = node.newer;
    else this.#oldest = node.newer;
    if (node.newer) node.newer.older = node.older;
    else this.#newest = node.older;
    node.older = node.newer = undefined;
  }
}
