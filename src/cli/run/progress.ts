import { performance } from "node:perf_hooks";
import type { Limiter } from "../../core/limiter.js";
import type { JobRunner } from "../../run/job-runner.js";
import type { ClassShare } from "../../run/run-report.js";
import type { LaunchRateMeter } from "../../run/launch-rate-meter.js";
import { PROGRESS_SEPARATOR, runProgressFields, serverPauseText } from "../../run/run-progress.js";
import { countFileLines } from "../count-lines.js";
import { fitFields, type ProgressLine, startProgressLine } from "../progress-line.js";
import type { ProgressMode } from "../report-options.js";

export interface RunProgress {
  /** Around job output to the same terminal: clears the line before it and draws it again after. */
  aroundWrite: ((write: () => boolean) => boolean) | undefined;
  /**
   * Starts the line once the runner exists. `total` is --count; `input`, an
   * --input file (or - for standard input, if a regular file) whose lines,
   * counted meanwhile, give the total when fewer.
   */
  attach(runner: JobRunner, total: number, input?: string): void;
  /** Draws the last line: with the total once the count of the input file is in (a loaded machine may not have it yet). */
  stop(): Promise<void>;
}

/** Standard input by name, so that countFileLines sees whether it is a regular file. */
const STDIN_PATH = "/dev/stdin";

/** How long the last line waits for a count still under way (a huge file) before it is drawn without it. */
const LAST_COUNT_WAIT_MS = 500;

export interface RunProgressOptions {
  progress: ProgressMode;
  /** --key: said next to the limit. */
  key?: string;
  /** --jobs: the most that can be running, which the line keeps room for. */
  jobs: number;
  /** -N: the line's name. */
  name?: string;
  /** With classes: each class's share of the launches so far. */
  classes?: () => readonly ClassShare[];
  /** --adaptive: the configured rate, the limit being the rate followed now. */
  adaptiveCeiling?: number;
}

/** The run's progress line (progress-line.ts), when asked for or when standard error is a terminal and standard output is not. */
export function startRunProgress(options: RunProgressOptions, limiter: Limiter, meter: LaunchRateMeter): RunProgress | undefined {
  const wanted = options.progress === "on" || (options.progress === "auto" && process.stderr.isTTY && !process.stdout.isTTY);
  if (!wanted) return undefined;
  let line: ProgressLine | undefined;
  let ended = false;
  let counted: Promise<void> | undefined;
  let pause: ServerPauseSpinner | undefined;
  return {
    aroundWrite(write) {
      if (pause?.spinning) return pause.around(write);
      line?.clear();
      const ok = write();
      line?.draw();
      return ok;
    },
    attach(runner, count, input) {
      let total = count;
      if (input !== undefined) {
        // Standard input redirected from a file (`< items.txt`) has a total as --input does; a pipe has none.
        counted = countFileLines(input === "-" ? STDIN_PATH : input).then((lines) => {
          if (lines !== undefined) total = Math.min(total, lines);
        });
      }
      line = startProgressLine({
        stream: process.stderr,
        env: process.env,
        name: options.name,
        describe: (width) =>
          fitFields(
            runProgressFields(runner.counts, {
              launchesPerSecond: meter.ratePerSecond(performance.now()),
              limitPerSecond: limiter.rate,
              total,
              jobs: options.jobs,
              key: options.key,
              classes: options.classes?.(),
              adaptiveCeiling: options.adaptiveCeiling,
              serverPauseMs: ended ? 0 : runner.pausedUntilMs - performance.now(),
              ended,
            }),
            width,
            PROGRESS_SEPARATOR,
          ),
      });
      // On a terminal, a wait with no end but the server's is ora's to show: a spinner in the line's place.
      if (process.stderr.isTTY) pause = new ServerPauseSpinner(runner, line);
    },
    async stop() {
      pause?.stop();
      if (counted) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([counted, new Promise<void>((resolve) => (timer = setTimeout(resolve, LAST_COUNT_WAIT_MS)))]);
        clearTimeout(timer);
      }
      ended = true;
      line?.stop();
    },
  };
}

/** How often the spinner's seconds are brought up to date, and a pause looked for. */
const PAUSE_CHECK_MS = 250;

/**
 * While the server's pause holds every launch, an ora spinner stands where
 * the progress line was, saying the seconds left (`paused by the server:
 * 12 s`); when it ends the line comes back. ora is loaded at the first pause.
 */
class ServerPauseSpinner {
  readonly #runner: JobRunner;
  readonly #line: ProgressLine;
  readonly #timer: NodeJS.Timeout;
  #spinner: import("ora").Ora | undefined;
  #loading = false;

  constructor(runner: JobRunner, line: ProgressLine) {
    this.#runner = runner;
    this.#line = line;
    this.#timer = setInterval(() => this.#check(), PAUSE_CHECK_MS);
    this.#timer.unref();
  }

  get spinning(): boolean {
    return this.#spinner !== undefined;
  }

  /** Job output while spinning: the spinner cleared before it and drawn again after. */
  around(write: () => boolean): boolean {
    this.#spinner?.clear();
    const ok = write();
    this.#spinner?.render();
    return ok;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#end();
  }

  #check(): void {
    const leftMs = this.#runner.pausedUntilMs - performance.now();
    if (leftMs <= 0) {
      this.#end();
      return;
    }
    if (this.#spinner) {
      this.#spinner.text = serverPauseText(leftMs);
      return;
    }
    if (this.#loading) return;
    this.#loading = true;
    void import("ora").then(({ default: ora }) => {
      this.#loading = false;
      const now = this.#runner.pausedUntilMs - performance.now();
      if (now <= 0) return;
      this.#line.clear();
      // ora's own terminal handling, told to leave standard input alone (else it takes over the keyboard),
      // and enabled: stderr is a terminal (checked above), and ora alone would go silent wherever CI is set.
      this.#spinner = ora({ stream: process.stderr, discardStdin: false, isEnabled: true, text: serverPauseText(now) }).start();
    });
  }

  #end(): void {
    if (!this.#spinner) return;
    this.#spinner.stop();
    this.#spinner = undefined;
    this.#line.draw();
  }
}
