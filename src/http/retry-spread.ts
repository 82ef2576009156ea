/**
 * Retry-After without a stampede (design section 14): clients refused by one
 * bucket are told different times, the k-th of those still expected back
 * the time at which the k-th next token comes, so that honest clients come
 * back about once each, when there is room for them. Nothing is reserved: a
 * promise only counts the clients told to come back; any request may still
 * take a token that is there. A promise lapses a grace after its time (the
 * client did not return); an admitted request redeems the oldest that is due
 * (most likely the client it was made to).
 */
export class RetrySpread {
  /** The instants (ms) at which refused clients were told to come back, in order. */
  readonly #backAtMs: number[] = [];

  /** How long after its time a promise still counts: a client comes back a little late (its own timer, the network). */
  static readonly GRACE_MS = 1000;
  /** The most promises held per bucket: beyond, the later clients are told the last time (memory stays bounded). */
  static readonly MAX_PROMISES = 10_000;

  /** Clients told to come back whose time (and grace) is not past at `nowMs`. */
  expectedAt(nowMs: number): number {
    this.#prune(nowMs);
    return this.#backAtMs.length;
  }

  /**
   * How far ahead a promise may be and still count. A client that ignores
   * Retry-After and asks again and again is refused each time, and each
   * refusal would be one more client expected back: on a key shared by
   * everyone (`--per all`) it would push every other client's Retry-After
   * later without end. Beyond this, refusals are told their time and not
   * counted, so the spread reaches at most a minute past the bucket's own time.
   */
  static readonly MOST_AHEAD_MS = 60_000;

  /** Notes a client told at `nowMs` to come back at `backAtMs`. */
  promise(nowMs: number, backAtMs: number): void {
    if (this.#backAtMs.length >= RetrySpread.MAX_PROMISES || backAtMs - nowMs > RetrySpread.MOST_AHEAD_MS) return;
    // Whole seconds only grow with k, so the list stays in order; a change of rate may break that, and sorting keeps it.
    const last = this.#backAtMs.at(-1);
    this.#backAtMs.push(backAtMs);
    if (last !== undefined && backAtMs < last) this.#backAtMs.sort((a, b) => a - b);
  }

  /** An admitted request at `nowMs`: it redeems the oldest promise already due, if any. */
  redeem(nowMs: number): void {
    this.#prune(nowMs);
    if (this.#backAtMs.length > 0 && this.#backAtMs[0]! <= nowMs) this.#backAtMs.shift();
  }

  get size(): number {
    return this.#backAtMs.length;
  }

  #prune(nowMs: number): void {
    let lapsed = 0;
    while (lapsed < this.#backAtMs.length && this.#backAtMs[lapsed]! + RetrySpread.GRACE_MS <= nowMs) lapsed++;
    if (lapsed > 0) this.#backAtMs.splice(0, lapsed);
  }
}
