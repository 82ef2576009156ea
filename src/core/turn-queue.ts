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
 * turn back at once. The bucket can give back only the latest turn (earlier
 * tokens are spoken for by the reservations after them, as in x/time/rate),
 * so the turns move instead: the last in line takes the turn left free, and
 * the latest turn, now no one's, returns to the bucket. A thousand waiters
 * leaving give back a thousand tokens, and no one waits longer than promised.
 *
 * One timer serves the whole line: it sleeps until the first turn, and a
 * waiter leaving moves no timer (the first turn stays where it was), so a
 * long line costs one sleep, not one each.
 */
export class TurnQueue {
  /** The bucket the turns are reserved on. */
  readonly bucket: TokenBucket;
  readonly #maxWaitMs: number;
  readonly #clock: Clock;
  /** The waiters in the order of their turns, and the turns (times on the clock), one each. */
  #waiters: Waiter[] = [];
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
    return this.#waiters.length;
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
        end: (wait) => {
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
    const index = this.#waiters.indexOf(waiter);
    if (index === -1) return;
    const last = this.#waiters.pop()!;
    if (last !== waiter) this.#waiters[index] = last;
    this.#turnsMs.pop();
    const nowMs = this.#clock.now();
    const rate = this.bucket.rate;
    this.bucket.cancelAt(nowMs, { ok: true, tokens: 1, timeToActMs: this.#lastTurnMs, rate });
    const previousTurnMs = this.#lastTurnMs - durationMsFromTokens(1, rate);
    if (previousTurnMs >= nowMs) this.#lastTurnMs = previousTurnMs;
    if (this.#waiters.length === 0) {
      // A take that comes next starts a timer of its own.
      this.#serving?.abort();
      this.#serving = undefined;
    }
    waiter.end({ decision: "cancelled", waitMs: nowMs - waiter.startMs });
  }

  /** Sleeps until the first turn, ends its wait and every other one due, and so on until the line is empty. */
  async #serve(): Promise<void> {
    const serving = new AbortController();
    this.#serving = serving;
    try {
      while (this.#waiters.length > 0) {
        await this.#clock.sleep(Math.max(0, this.#turnsMs[0]! - this.#clock.now()), serving.signal);
        const nowMs = this.#clock.now();
        // The first is due: the sleep was for it (a clock may wake a hair early).
        do {
          const waiter = this.#waiters.shift()!;
          const turnMs = this.#turnsMs.shift()!;
          waiter.end({ decision: "queued", waitMs: Math.max(0, turnMs - waiter.startMs) });
        } while (this.#waiters.length > 0 && this.#turnsMs[0]! <= nowMs);
      }
    } catch {
      // The line emptied while the timer slept.
    } finally {
      if (this.#serving === serving) this.#serving = undefined;
    }
  }
}
