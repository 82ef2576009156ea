import { onStopSignal } from "../signals.js";

/**
 * Stopper ends a server on the first SIGINT, SIGTERM or SIGHUP, or when told to: it
 * runs `stop` with the drain time; a second signal stops draining and closes
 * what is left at once.
 *
 * It takes the signals from `listen()`, called before the server starts
 * listening, so that a signal sent as soon as the "listening on" line appears
 * never meets the default action: one that comes before `until` is kept and
 * stops the server as soon as it runs.
 */
export class Stopper {
  #stop: ((drainMs: number) => Promise<void>) | undefined;
  #stopping: Promise<void> | undefined;
  #requested: number | undefined;
  #signalled = false;
  /** Gives the signals back; undefined while not listening. */
  #stopListening: (() => void) | undefined;
  #done: { resolve(): void; reject(error: unknown): void } | undefined;

  readonly #onSignal = () => {
    if (this.#stop) this.stop(this.#drainMs);
    else this.#signalled = true;
  };
  #drainMs = 0;

  /** Takes the stop signals (SIGINT, SIGTERM, SIGHUP) from now on. */
  listen(): void {
    this.#stopListening ??= onStopSignal(this.#onSignal);
  }

  /** Resolves once `stop` has run after a signal or a call to `stop`. */
  until(drainMs: number, stop: (drainMs: number) => Promise<void>): Promise<void> {
    this.#stop = stop;
    this.#drainMs = drainMs;
    this.listen();
    return new Promise<void>((resolve, reject) => {
      this.#done = { resolve, reject };
      if (this.#requested !== undefined) this.stop(this.#requested);
      else if (this.#signalled) this.stop(drainMs);
    });
  }

  /** Gives the signals back (a start that failed). */
  unlisten(): void {
    this.#stopListening?.();
    this.#stopListening = undefined;
  }

  stop(drainMs: number): void {
    if (!this.#stop || !this.#done) {
      this.#requested = Math.min(this.#requested ?? drainMs, drainMs);
      return;
    }
    if (this.#stopping) {
      // Impatient: what is still open is closed now.
      void this.#stop(0);
      return;
    }
    const done = this.#done;
    this.#stopping = this.#stop(drainMs).then(() => {
      this.unlisten();
      done.resolve();
    }, done.reject);
  }
}
