import type { LimitSpec } from "../core/limit-spec.js";
import type { KeySet, KeySetTake, LimitLevel } from "./key-set.js";

/**
 * A set whose ok take can be given back whole, due or not, as if it had cost
 * nothing (`cancel` gives back only what is not yet due, and a take at once
 * is due at once): PrivateKeySet and a store's set are.
 */
export interface RefundableKeySet extends KeySet {
  refund(take: KeySetTake): void | Promise<void>;
}

/** A take of a client's set and the total's together. */
export interface TotalTake extends KeySetTake {
  /** The total's limits, numbered from 1 within the total, that refused the request or set its wait (`limitedBy` is the client's). */
  readonly totalLimitedBy: readonly number[];
  /** The two takes, each to be given back to its own set. */
  readonly client: KeySetTake;
  readonly total: KeySetTake | undefined;
}

/**
 * One client's set with the set for everyone beside it (DESIGN section 14:
 * `--total`): a request is let through only when both admit it, and a
 * refusal by either costs nothing in the other.
 *
 * The client is taken first, then the total; when the total refuses, the
 * client's take is given back whole (`refund`: a settle to 0, which restores
 * a bucket to what it would hold had the request never come, and takes the
 * record out of a window). With private sets the three steps run in one
 * synchronous turn, so no other request sees the state between them: the
 * pair is atomic. With a store the two
 * are two round trips, the client's then the total's: the store's set
 * script takes one key's set, and two keys in one script would have to
 * share a Redis Cluster slot with every client; so between them another
 * server may find the client's token taken for the time of one round trip.
 * Nothing is lost either way: what the total refused is given back.
 *
 * Queueing, each set waits its own time and the request goes at the later
 * one; each set counts it at its own instant, which for the earlier one is
 * before the request goes (a bucket banks at most what it would have lost
 * to its cap meanwhile).
 *
 * The total holds no concurrency limit, so slots are the client's alone.
 */
export class TotalKeySet implements KeySet {
  readonly #client: RefundableKeySet;
  readonly #total: KeySet;

  constructor(client: KeySet, total: KeySet) {
    // A capability of the sets the gate makes (private and store), checked once: without it a refusal by the total would cost the client.
    if (typeof (client as Partial<RefundableKeySet>).refund !== "function") throw new TypeError("TotalKeySet: the client's set cannot give a take back whole (no `refund`)");
    this.#client = client as RefundableKeySet;
    this.#total = total;
  }

  /** The client's own set (what a source closes when the key leaves the table). */
  get client(): KeySet {
    return this.#client;
  }

  get limits(): readonly LimitSpec[] {
    return this.#client.limits;
  }

  get slotPollMs(): number | undefined {
    return this.#client.slotPollMs;
  }

  /** Takes the request's `cost` in the client's set, then the same cost in the total. */
  take(maxWaitMs: number, cost = 1): TotalTake | Promise<TotalTake> {
    const client = this.#client.take(maxWaitMs, cost);
    if (client instanceof Promise) return client.then((settled) => this.#thenTotal(settled, maxWaitMs, cost));
    return this.#thenTotal(client, maxWaitMs, cost);
  }

  #thenTotal(client: KeySetTake, maxWaitMs: number, cost: number): TotalTake | Promise<TotalTake> {
    if (!client.ok) {
      // Refused by the client's set: the total is not asked, and the retry waits for the total too.
      const retryMs = client.noSlot ? client.retryMs : Math.max(client.retryMs, retryFromLevels(this.#total.levels()));
      return { ok: false, waitMs: Infinity, limitedBy: client.limitedBy, noSlot: client.noSlot, retryMs, totalLimitedBy: [], client, total: undefined };
    }
    let total: KeySetTake | Promise<KeySetTake>;
    try {
      total = this.#total.take(maxWaitMs, cost);
    } catch (error) {
      void this.#client.refund(client);
      throw error;
    }
    if (total instanceof Promise) {
      return total.then(
        (settled) => this.#both(client, settled),
        async (error: unknown) => {
          await this.#client.refund(client);
          throw error;
        },
      );
    }
    return this.#both(client, total);
  }

  #both(client: KeySetTake, total: KeySetTake): TotalTake | Promise<TotalTake> {
    if (!total.ok) {
      const refused: TotalTake = { ok: false, waitMs: Infinity, limitedBy: [], noSlot: false, retryMs: total.retryMs, totalLimitedBy: total.limitedBy, client, total };
      const refunded = this.#client.refund(client);
      return refunded instanceof Promise ? refunded.then(() => refused) : refused;
    }
    const waitMs = Math.max(client.waitMs, total.waitMs);
    // Which set the wait is the later one's: the other let the request through at once or sooner.
    const limitedBy = client.waitMs >= total.waitMs ? client.limitedBy : [];
    const totalLimitedBy = total.waitMs >= client.waitMs && total.waitMs > 0 ? total.limitedBy : [];
    return { ok: true, waitMs, limitedBy, noSlot: false, retryMs: 0, totalLimitedBy, client, total };
  }

  cancel(take: KeySetTake): void {
    const { client, total } = take as TotalTake;
    this.#client.cancel(client);
    if (total?.ok) this.#total.cancel(total);
  }

  release(take: KeySetTake): void {
    this.#client.release((take as TotalTake).client);
  }

  levels(): LimitLevel[] {
    return this.#client.levels();
  }

  /** The client's own spread: the total spreads the clients it refuses by its own rate (RequestGate). */
  retryBehindMs(ahead: number, cost: number): number {
    return this.#client.retryBehindMs?.(ahead, cost) ?? 0;
  }

  /** The total's limits and their levels now, for the RateLimit fields. */
  totalLevels(): LimitLevel[] {
    return this.#total.levels();
  }

  /** Whether the client's set is as a new one: the total is not the key's to forget. */
  isIdle(): boolean {
    return this.#client.isIdle();
  }
}

/**
 * How long until a set at these levels would admit one request, as far as
 * the levels tell: a bucket below 1 refills to it at its rate; a window's
 * records are not in its level, so it adds nothing (the client's own retry
 * stands, and a retry the total refuses again is told the total's time).
 */
export function retryFromLevels(levels: readonly LimitLevel[]): number {
  let retryMs = 0;
  for (const limit of levels) {
    if (limit.kind !== "bucket" || limit.level >= 1) continue;
    retryMs = Math.max(retryMs, limit.rate > 0 ? ((1 - limit.level) * 1000) / limit.rate : Infinity);
  }
  return retryMs;
}
