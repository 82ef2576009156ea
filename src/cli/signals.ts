import { constants } from "node:os";

/**
 * Signals, taken here for every command. The commands that run until stopped
 * (pipe, run, proxy) take SIGINT, SIGTERM and SIGHUP: the first stops the
 * command its own way (the pipe says its stats and ends by the signal, run
 * passes it on to its jobs, the proxy drains), and any later one means now. A
 * hang-up (the terminal closed) stops a command as the others do, never
 * killing it mid-transfer. The other commands take none: a signal ends them by
 * its default action. SIGPIPE stays ignored, as Node.js sets it: a reader that
 * went away is an EPIPE on the next write, which each command answers its way.
 */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Hears each stop signal; `again` is false for the first one only. */
export type StopSignalHandler = (signal: NodeJS.Signals, again: boolean) => void;

export interface StopSignalOptions {
  /** Signals that stop the command besides SIGINT, SIGTERM and SIGHUP (run's SIGQUIT). */
  also?: readonly NodeJS.Signals[];
  /**
   * The first signal repeated within this is the same delivery, not a second
   * one, and goes unheard: `timeout` sends its signal twice, to tbucket and to
   * its process group. By default every signal counts.
   */
  sameDeliveryWithinMs?: number;
}

/**
 * Takes the stop signals from now on, handing each to `handler`, until the
 * returned function gives them back (once given back, a signal ends the
 * process by its default action). A command keeps them until its last word
 * is out: a signal that found no listener would end it mid-write.
 */
export function onStopSignal(handler: StopSignalHandler, options: StopSignalOptions = {}): () => void {
  const signals = [...STOP_SIGNALS, ...(options.also ?? [])];
  const sameDeliveryWithinMs = options.sameDeliveryWithinMs ?? 0;
  let first: { signal: NodeJS.Signals; atMs: number } | undefined;
  const listener = (signal: NodeJS.Signals) => {
    if (!first) {
      first = { signal, atMs: performance.now() };
      return handler(signal, false);
    }
    if (signal === first.signal && performance.now() - first.atMs < sameDeliveryWithinMs) return;
    handler(signal, true);
  };
  for (const signal of signals) process.on(signal, listener);
  return () => {
    for (const signal of signals) process.off(signal, listener);
  };
}

/** The status a shell reports for a process ended by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
export function signalExitStatus(signal: NodeJS.Signals): number {
  return 128 + constants.signals[signal];
}

/**
 * Ends the process by `signal` itself, as `cat` ends, once `giveBack` has
 * given the signals back: the shell sees a death by that signal (128 + its
 * number), and a read still waiting for input cannot hold the exit, as it
 * would hold process.exit.
 */
export function endBySignal(signal: NodeJS.Signals, giveBack: () => void): void {
  giveBack();
  process.kill(process.pid, signal);
  // Reached only if some other listener kept the signal from ending the process.
  setImmediate(() => process.exit(signalExitStatus(signal)));
}
