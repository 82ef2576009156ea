import { DistinctCounter } from "./distinct-counter.js";

/** How one key fared, for the "most refused" list. */
export interface KeyTally {
  key: string;
  arrived: number;
  refused: number;
}

interface Entry extends KeyTally {
  /** When the key first arrived (a sequence number): ties are listed in that order. */
  order: number;
}

/**
 * Per-key counts with memory bounded by the buckets the simulator keeps:
 * a key has a live tally while it has a bucket. When its bucket is evicted
 * (--max-keys) the tally is retired: only the `keep` most refused retired
 * tallies are kept, merged by key, so that a run over millions of distinct
 * keys holds one small entry per bucket plus a fixed amount. The counts of a
 * key that was evicted and came back are then summed over its lifetimes only
 * when they are among the most refused.
 */
export class KeyTallies {
  readonly #live = new Map<string, Entry>();
  #retired: Entry[] = [];
  readonly #distinct = new DistinctCounter();
  #arrivals = 0;
  #retirements = 0;

  constructor(readonly keep = 10) {}

  add(key: string, admitted: boolean): void {
    let entry = this.#live.get(key);
    if (!entry) {
      entry = { key, arrived: 0, refused: 0, order: this.#arrivals };
      this.#live.set(key, entry);
      this.#distinct.add(key);
    }
    this.#arrivals++;
    entry.arrived++;
    if (!admitted) entry.refused++;
  }

  /** The key's bucket was evicted: keep its tally only if it is among the most refused. */
  retire(key: string): void {
    const entry = this.#live.get(key);
    if (!entry) return;
    this.#live.delete(key);
    this.#retirements++;
    const retired = this.#retired;
    if (retired.length >= this.keep) {
      const last = retired[retired.length - 1]!;
      const below = entry.refused < last.refused || (entry.refused === last.refused && entry.order > last.order);
      if (below && !holdsKey(retired, key)) return;
    }
    this.#retired = mostRefusedOf([...retired, entry], this.keep);
  }

  /** Tallies held now: one per key with a bucket. */
  get liveCount(): number {
    return this.#live.size;
  }

  /** Distinct keys seen, and whether that is exact (once keys were evicted, an estimate within about 1 % past 100,000 keys). */
  get seen(): { count: number; exact: boolean } {
    if (this.#retirements === 0) return { count: this.#live.size, exact: true };
    return { count: this.#distinct.count, exact: this.#distinct.exact };
  }

  /** The keys with the most refusals, most first; ties in order of first arrival. */
  mostRefused(limit = this.keep): KeyTally[] {
    const top = mostRefusedOf([...this.#live.values()].filter((entry) => entry.refused > 0), limit);
    return mostRefusedOf([...top, ...this.#retired.filter((entry) => entry.refused > 0)], limit).map(({ key, arrived, refused }) => ({ key, arrived, refused }));
  }
}

/** The `limit` most refused of these entries, those of one key summed. */
function mostRefusedOf(entries: readonly Entry[], limit: number): Entry[] {
  const byKey = new Map<string, Entry>();
  for (const entry of entries) {
    const same = byKey.get(entry.key);
    if (same) byKey.set(entry.key, { ...same, arrived: same.arrived + entry.arrived, refused: same.refused + entry.refused, order: Math.min(same.order, entry.order) });
    else byKey.set(entry.key, entry);
  }
  return [...byKey.values()].sort((a, b) => b.refused - a.refused || a.order - b.order).slice(0, limit);
}

/** Whether one of the entries is the key's: a loop, as this runs at every eviction. */
function holdsKey(entries: readonly Entry[], key: string): boolean {
  for (const entry of entries) if (entry.key === key) return true;
  return false;
}
