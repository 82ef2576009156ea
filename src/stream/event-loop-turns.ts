/**
 * How often a loop that never has to wait gives the event loop a turn: a
 * signal or the progress line is then never held longer than this.
 */
const EVENT_LOOP_TURN_MS = 10;

/** Gives the event loop a turn now and then in a loop that may never have to wait. */
export interface EventLoopTurns {
  /**
   * To await once a round: resolves at once, except once EVENT_LOOP_TURN_MS
   * have passed without a turn, when it waits for one (setImmediate). Awaiting
   * a promise that is already resolved runs no timers, I/O callbacks or signal handlers.
   */
  next(): Promise<void> | undefined;
  /** Tells it the loop just waited on a timer or I/O: the event loop had its turn. */
  mark(): void;
}

/** Real time on purpose, not an injected clock: it is the real event loop that must not starve. */
export function eventLoopTurns(): EventLoopTurns {
  let turnAtMs = performance.now();
  let turn: Promise<void> | undefined;
  return {
    next() {
      const nowMs = performance.now();
      if (nowMs - turnAtMs < EVENT_LOOP_TURN_MS) return undefined;
      turn ??= new Promise<void>((resolve) =>
        setImmediate(() => {
          turn = undefined;
          turnAtMs = performance.now();
          resolve();
        }),
      );
      return turn;
    },
    mark() {
      turnAtMs = performance.now();
    },
  };
}
