import type { Clock } from "./clock.js";
import { durationMsFromTokens, type TokenBucket } from "./token-bucket.js";

/**
 * What became of a take: a token at once, one after waiting its turn, none
 * (refused: the wait would pass the limit), or given up while it waited.
 */
export type TurnDecision = "admitted" | "queued" | "refused" | "cancelled";

/** How a wait in the queue ended: its turn came (`queued`), or it was given up first (`cancelled`). */
export interface TurnWait {
  decision: "queued" | "cancelled";
  /** From the take to its turn (queued), or to the moment it was given up (cancelled). */
  waitMs: number;
}

/** What a take came to at once: a token, a refusal (nothing taken), or a wait for a turn. */
export type Turn = "admitted" | "refused" | Promise<TurnWait>;

export interface TurnQueueOptions {
  /** The bucket the turns are reserved on; the queue must be the only one to take from it. */
  bucket: TokenBucket;
  /** The longest a take may wait for its turn: 0 refuses what cannot go at once. */
  maxWaitMs: number;
  clock: Clock;
}

/** A take waiting for its turn. */
interface Waiter {
  startMs: number;
  /** Its wait has ended (given up, or its turn came): the line steps over it. */
  done: boolean;
  /** Ends the wait: at its turn, or when given up. */
  end(wait: TurnWait): void;
}

/**
 * TurnQueue hands out one bucket's tokens a token per take, in turns: a take
 * the bucket cannot meet at once reserves the next turn (x/time/rate's Reserve
 * with a limit) and waits for it; one that would wait past the limit is
 * refused, having taken nothing.
 *
 * A waiter that is given up (its signal aborts: a client hung up) gives its
 * turn back at once, and every one behind it moves up a turn, first come
 * first served. The bucket can give back only the latest turn (earlier tokens
 * are spoken for by the reservations after them, as in x/time/rate), and
 * that is the turn no one holds once the line has moved up: it returns to the
 * bucket. A thousand waiters leaving give back a thousand tokens.
 *
 * One timer serves the whole line: it sleeps until the first turn, and a
 * waiter leaving moves no timer (the first turn stays where it was), so a
 * long line costs one sleep, not one each, and leaving costs the same
 * wherever the waiter stood.
 */
export class TurnQueue {
  /** The bucket the turns are reserved on. */
  readonly bucket: TokenBucket;
  readonly #maxWaitMs: number;
  readonly #clock: Clock;
  /** The waiters in the order they came, some done (stepped over); the i-th still waiting has the i-th turn. */
  #waiters: Waiter[] = [];
  /** The turns still held, earliest first (times on the clock): one per waiter not done. */
  #turnsMs: number[] = [];
  /** The latest turn as the bucket holds it (turns computed one by one differ from it in the last bits), to give it back exactly. */
  #lastTurnMs = -Infinity;
  /** Stops the timer's sleep when the line empties. */
  #serving: AbortController | undefined;

  constructor(options: TurnQueueOptions) {
    this.bucket = options.bucket;
    this.#maxWaitMs = options.maxWaitMs;
    this.#clock = options.clock;
  }

  /** Takes waiting for their turn. */
  get waiting(): number {
    return this.#turnsMs.length;
  }

  /** Takes one token, at once or at a turn; aborting `signal` while waiting gives the turn back. */
  take(signal?: AbortSignal): Turn {
    const nowMs = this.#clock.now();
    const reservation = this.bucket.reserveAt(nowMs, 1, this.#maxWaitMs);
    if (!reservation.ok) return "refused";
    this.#lastTurnMs = reservation.timeToActMs;
    if (reservation.waitMs === 0) return "admitted";
    return new Promise<TurnWait>((resolve) => {
      const leave = (): void => this.#leave(waiter);
      const waiter: Waiter = {
        startMs: nowMs,
        done: false,
        end: (wait) => {
          waiter.done = true;
          signal?.removeEventListener("abort", leave);
          resolve(wait);
        },
      };
      this.#waiters.push(waiter);
      this.#turnsMs.push(reservation.timeToActMs);
      if (signal?.aborted) return leave();
      signal?.addEventListener("abort", leave, { once: true });
      if (this.#serving === undefined) void this.#serve();
    });
  }

  /** Gives a waiter's turn back, whatever its place in line. */
  #leave(waiter: Waiter): void {
    if (waiter.done) return;
    // Those behind it move up a turn each: the latest turn is left over.
    this.#turnsMs.pop();
    const nowMs = this.#clock.now();
    const rate = this.bucket.rate;
    this.bucket.cancelAt(nowMs, { ok: true, tokens: 1, timeToActMs: this.#lastTurnMs, rate });
    const previousTurnMs = this.#lastTurnMs - durationMsFromTokens(1, rate);
    if (previousTurnMs >= nowMs) this.#lastTurnMs = previousTurnMs;
    waiter.end({ decision: "cancelled", waitMs: nowMs - waiter.startMs });
    if (this.#turnsMs.length === 0) {
      this.#waiters = [];
      // A take that comes next starts a timer of its own.
      this.#serving?.abort();
      this.#serving = undefined;
    }
  }

  /** Sleeps until the first turn, ends its wait and every other one due, and so on until the line is empty. */
  async #serve(): Promise<void> {
    const serving = new AbortController();
    this.#serving = serving;
    try {
      while (this.#turnsMs.length > 0) {
        await this.#clock.sleep(Math.max(0, this.#turnsMs[0]! - this.#clock.now()), serving.signal);
        const nowMs = this.#clock.now();
        // The first turn is due: the sleep was for it (a clock may wake a hair early).
        do {
          let waiter = this.#waiters.shift()!;
          while (waiter.done) waiter = this.#waiters.shift()!;
          const turnMs = this.#turnsMs.shift()!;
          waiter.end({ decision: "queued", waitMs: Math.max(0, turnMs - waiter.startMs) });
        } while (this.#turnsMs.length > 0 && this.#turnsMs[0]! <= nowMs);
      }
    } catch {
      // The line emptied while the timer slept.
    } finally {
      if (this.#serving === serving) this.#serving = undefined;
    }
  }
}
