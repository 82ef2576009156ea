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
 * whose time has come, in order of wake-up time.
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

  /** Moves time forward by `ms`, waking sleepers due by then; awaits their continuations. */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`Expected \`ms\` to be a non-negative number, got \`${ms}\``);
    const target = this.#now + ms;
    for (;;) {
      const due = this.#sleepers
        .filter((s) => s.wakeAt <= target)
        .sort((a, b) => a.wakeAt - b.wakeAt)[0];
      if (!due) break;
      this.#sleepers = this.#sleepers.filter((s) => s !== due);
      this.#now = Math.max(this.#now, due.wakeAt);
      due.resolve();
      await flushMicrotasks();
    }
    this.#now = target;
    await flushMicrotasks();
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
    await flushMicrotasks();
  }

  /** Sets the time directly (backwards too), without waking anyone: for clamping tests. */
  set(ms: number): void {
    this.#now = ms;
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}
