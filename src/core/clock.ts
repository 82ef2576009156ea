/**
 * A clock tells the time in milliseconds and sleeps. Production code uses
 * `systemClock`; tests and the simulator use `FakeClock`, which never sleeps
 * for real.
 */
export interface Clock {
  /** Milliseconds since an arbitrary origin; never decreases on `systemClock`. */
  now(): number;
  /** Resolves after `ms` milliseconds, or rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** setTimeout overflows past 2^31 - 1 ms and fires at once; longer sleeps are chained. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) => sleepWithTimers(ms, signal, () => performance.now()),
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The operation was aborted", "AbortError");
}

function sleepWithTimers(ms: number, signal: AbortSignal | undefined, now: () => number): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  if (!(ms > 0)) return Promise.resolve();
  const deadline = now() + ms;
  return new Promise((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout>;
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const arm = () => {
      const left = deadline - now();
      if (left <= 0) {
        signal?.removeEventListener("abort", onAbort);
        resolve();
        return;
      }
      // Timers fire on whole milliseconds; rounding up never wakes us early.
      timer = setTimeout(arm, Math.min(Math.ceil(left), MAX_TIMER_MS));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    arm();
  });
}

interface Sleeper {
  wakeAt: number;
  resolve: () => void;
}

/**
 * A clock that moves only when told to. `advance(ms)` wakes every sleeper
 * whose time has come, in order of wake-up time, and lets the work each one
 * resumes run until it settles (ends, or sleeps again) before the next wakes:
 * what a test sees after `await clock.advance(ms)` does not depend on how many
 * promise hops that work takes. Work waiting on real I/O or real timers is
 * not waited for. It settles on the event loop's setImmediate, so a test
 * framework's fake timers must leave that one real.
 */
export class FakeClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  /** The number of sleeps still waiting. */
  get pendingSleeps(): number {
    return this.#sleepers.length;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (!(ms > 0)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const sleeper: Sleeper = {
        wakeAt: this.#now + ms,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
        reject(abortReason(signal!));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  /** Moves time forward by `ms`, waking sleepers due by then one at a time, each once the work before it has settled. */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`Expected \`ms\` to be a non-negative number, got \`${ms}\``);
    const target = this.#now + ms;
    // Work started just before (a wait that is about to sleep) registers its sleep first.
    await settle();
    let instantMs = this.#now;
    let wokenAtInstant = 0;
    for (;;) {
      const due = this.#sleepers
        .filter((s) => s.wakeAt <= target)
        .sort((a, b) => a.wakeAt - b.wakeAt)[0];
      if (!due) break;
      this.#sleepers = this.#sleepers.filter((s) => s !== due);
      this.#now = Math.max(this.#now, due.wakeAt);
      if (this.#now !== instantMs) [instantMs, wokenAtInstant] = [this.#now, 0];
      // A sleep too short to move the clock (1e-9 ms at 1.7e12) would loop here forever.
      if (++wokenAtInstant > MAX_WAKES_PER_INSTANT) {
        throw new Error(`FakeClock: more than ${MAX_WAKES_PER_INSTANT} sleeps woke at ${instantMs} ms without time moving; some work keeps rescheduling itself at the same instant`);
      }
      due.resolve();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  /**
   * Moves time forward by `ms` at once and only then wakes every sleeper due
   * by the new time: like a coarse or late timer, a sleeper sees the clock
   * already past its wake-up time.
   */
  async tick(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`Expected \`ms\` to be a non-negative number, got \`${ms}\``);
    this.#now += ms;
    const due = this.#sleepers.filter((s) => s.wakeAt <= this.#now).sort((a, b) => a.wakeAt - b.wakeAt);
    this.#sleepers = this.#sleepers.filter((s) => s.wakeAt > this.#now);
    for (const sleeper of due) sleeper.resolve();
    await settle();
  }

  /** Sets the time directly (backwards too), without waking anyone: for clamping tests. */
  set(ms: number): void {
    this.#now = ms;
  }
}

/** How many sleepers `advance` wakes at one instant before it decides the work never settles. */
const MAX_WAKES_PER_INSTANT = 10_000;

/**
 * Resolves once every promise reaction and process.nextTick callback queued
 * so far has run, and those they queue in turn: Node drains both queues
 * completely before it runs the next macrotask.
 */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
