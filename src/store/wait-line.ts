/**
 * Operations run one at a time, in the order they came: a shared limiter's
 * waits, so that concurrent callers share leases instead of racing for them.
 * A caller whose signal aborts before its turn leaves the line at once (its
 * operation, when its turn comes, sees the aborted signal and asks nothing).
 */
export class WaitLine {
  #tail: Promise<unknown> = Promise.resolve();
  /** Operations queued or under way. */
  size = 0;

  /** Runs `operation` after those before it; `ready`, awaited first, still lets the caller leave. */
  run<T>(operation: () => Promise<T>, signal?: AbortSignal, ready?: () => Promise<void>): Promise<T> {
    let started = false;
    const start = async (): Promise<T> => {
      if (ready) await ready();
      started = true;
      return operation();
    };
    this.size++;
    const next = this.#tail.then(start, start);
    this.#tail = next.catch(() => {});
    void next.finally(() => this.size--).catch(() => {});
    if (!signal) return next;
    return new Promise<T>((resolve, reject) => {
      const leave = (): void => {
        if (!started) reject(signal.reason);
      };
      signal.addEventListener("abort", leave, { once: true });
      next.then(resolve, reject).finally(() => signal.removeEventListener("abort", leave));
    });
  }
}
