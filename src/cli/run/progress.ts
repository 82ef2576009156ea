import { performance } from "node:perf_hooks";
import type { Limiter } from "../../core/limiter.js";
import type { JobRunner } from "../../run/job-runner.js";
import type { ClassShare } from "../../run/run-report.js";
import type { LaunchRateMeter } from "../../run/launch-rate-meter.js";
import { PROGRESS_SEPARATOR, runProgressFields } from "../../run/run-progress.js";
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
  return {
    aroundWrite(write) {
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
              ended,
            }),
            width,
            PROGRESS_SEPARATOR,
          ),
      });
    },
    async stop() {
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
