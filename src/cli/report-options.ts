import type { Command } from "commander";
import { UsageError } from "./errors.js";

/** Whether to show progress: asked for, refused, or decided by whether standard error is a terminal. */
export type ProgressMode = "auto" | "on" | "off";
export type StatsFormat = "text" | "json";

export interface ReportOptions {
  progress: ProgressMode;
  stats: StatsFormat | undefined;
}

/** -p/--progress, -q/--quiet, --stats and --stats-format as commander hands them over. */
export interface ReportFlags {
  progress?: boolean;
  quiet?: boolean;
  stats?: boolean;
  statsFormat?: string;
}

/**
 * Declares -p/--progress, -q/--quiet, --stats and --stats-format, the same on
 * every command that reports. `--stats` takes no value, so the word after it
 * is always a file or a command (`tbucket --stats json` reads the file json);
 * the format has a flag of its own, which implies --stats.
 */
export function addReportOptions(command: Command): Command {
  return command
    .option("-p, --progress", "show progress on standard error (default: when it is a terminal and standard output is not)")
    .option("-q, --quiet", "no progress")
    .option("--stats", "print a summary on standard error at the end (text; --stats-format json for JSON)")
    .option("--stats-format <text|json>", "the summary's format, text or json (implies --stats)");
}

/** Checks -p/--progress, -q/--quiet, --stats and --stats-format, the same on every command that has them. */
export function parseReportOptions(flags: ReportFlags): ReportOptions {
  if (flags.progress && flags.quiet) throw new UsageError(`--progress and --quiet: choose one`);
  let stats: StatsFormat | undefined = flags.stats ? "text" : undefined;
  if (flags.statsFormat !== undefined) {
    if (flags.statsFormat !== "text" && flags.statsFormat !== "json") {
      throw new UsageError(`--stats-format: "${flags.statsFormat}" is not a format; try "--stats-format text" or "--stats-format json"`);
    }
    stats = flags.statsFormat;
  }
  return { progress: flags.progress ? "on" : flags.quiet ? "off" : "auto", stats };
}
