import type { ServerReport } from "./server-report.js";
import type { JobSpec } from "./job-source.js";

/** How one attempt of a job ended. */
export interface JobExit {
  /** The exit code; null when ended by a signal or never started. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /**
   * Why the command could not be started at all: an errno (ENOENT, EACCES, E2BIG, EMFILE...)
   * or EISDIR (a directory), ENOINTERP (the script's #! interpreter is missing, named in
   * `interpreter`), EEMPTY (an empty command name), ENUL (a NUL byte in the command line).
   */
  readonly spawnError?: { readonly code: string; readonly message: string; readonly interpreter?: string };
  /** What the attempt wrote to its `{report}` file, when it wrote one. */
  readonly report?: ServerReport;
}

/** A running attempt: when it ends, and a way to signal it. */
export interface LaunchedJob {
  readonly exited: Promise<JobExit>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts one attempt of a job; the runner never knows whether it is a process or a test double. */
export type Launch = (job: JobSpec, attempt: number) => LaunchedJob;

/** True when an attempt succeeded. */
export function succeeded(exit: JobExit): boolean {
  return exit.code === 0 && exit.signal === null && exit.spawnError === undefined;
}
