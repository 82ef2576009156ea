/**
 * Who may write to job output right now. A job whose line is too long to hold
 * streams it through in pieces, and holds the lock until its newline: until
 * then the other jobs wait (their sources paused), so no other byte lands
 * inside the line. Standard output and error share one lock, held by a job
 * (both of its streams), so two jobs never wait for each other.
 */
export class OutputLock {
  #holder: object | undefined;
  #waiting: Array<() => void> = [];

  /** True when `owner` may write: nobody is in the middle of a line, or `owner` is. */
  isFreeFor(owner: object): boolean {
    return this.#holder === undefined || this.#holder === owner;
  }

  take(owner: object): void {
    this.#holder = owner;
  }

  /** Ends `owner`'s hold and wakes the writers that waited, in the order they came. */
  release(owner: object): void {
    if (this.#holder !== owner) return;
    this.#holder = undefined;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  /** Calls back once the lock is free (the caller checks again: another waiter may have taken it). */
  whenFree(callback: () => void): void {
    if (this.#holder === undefined) callback();
    else this.#waiting.push(callback);
  }
}
