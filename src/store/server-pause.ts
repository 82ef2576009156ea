import type { BucketStore } from "./bucket-store.js";

/** A pause is a bucket of this many tokens a second: one a millisecond, so its debt is the pause in ms. */
const TOKENS_PER_SECOND = 1000;

/**
 * The server's pause of a shared key (DESIGN section 13): when one process
 * is told to wait (a 429 with Retry-After, a limit used up until its reset),
 * every process on the key waits until that instant, and none launches
 * before it. The pause is kept beside the key, as a bucket of its own
 * (`KEY/server-pause`) refilling a token a millisecond, run into debt by the
 * pause: its level tells every process how long is left on the store's own
 * clock, so the hosts' clocks need not agree. Made to expire once full, it
 * leaves nothing behind. A pause only moves later: two processes pausing
 * at once may lengthen it by the other's share, never shorten it.
 */
export class ServerPause {
  readonly key: string;
  readonly #store: BucketStore;

  constructor(store: BucketStore, key: string) {
    this.#store = store;
    this.key = `${key}/server-pause`;
  }

  /** Pauses the key for `ms` from now, unless it is paused for longer already. */
  async pause(ms: number): Promise<void> {
    const wanted = Math.ceil(ms);
    if (!(wanted > 0)) return;
    let state = await this.#store.read(this.key);
    if (state === undefined) state = await this.#store.configure(this.key, { rate: TOKENS_PER_SECOND, burst: 1, kind: "count" }, { expireWhenFull: true });
    const leftMs = pauseLeftMs(state.tokens);
    if (leftMs >= wanted) return;
    await this.#store.take(this.key, wanted - leftMs, { overBurst: true });
  }

  /** How long the key is still paused, in ms (0: not paused). */
  async remainingMs(): Promise<number> {
    const state = await this.#store.read(this.key);
    return state === undefined ? 0 : pauseLeftMs(state.tokens);
  }
}

/** The ms until a pause bucket at `level` has its one token again. */
function pauseLeftMs(level: number): number {
  return Math.max(0, ((1 - level) * 1000) / TOKENS_PER_SECOND);
}
