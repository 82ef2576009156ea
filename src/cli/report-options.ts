import type { Command } from "commander";
import { choiceOption } from "./choice-option.js";
import { UsageError } from "./errors.js";

/** Whether to show progress: asked for, refused, or decided by whether standard error is a terminal. */
export type ProgressMode = "auto" | "on" | "off";
export const STATS_FORMATS = ["text", "json"] as const;
export type StatsFormat = (typeof STATS_FORMATS)[number];

export interface ReportOptions {
  progress: ProgressMode;
  stats: StatsFormat | undefined;
  /** -N: the progress line's name. */
  name: string | undefined;
}

/** -p/--progress, -q/--quiet, -N/--name, --stats and --stats-format as commander hands them over. */
export interface ReportFlags {
  progress?: boolean;
  quiet?: boolean;
  stats?: boolean;
  statsFormat?: string;
  name?: string;
}

/**
 * Declares -p/--progress, -q/--quiet, -N/--name, --stats and --stats-format, the same on
 * every command that reports. `--stats` takes no value, so the word after it
 * is always a file or a command (`tbucket --stats json` reads the file json);
 * the format has a flag of its own, which implies --stats.
 */
export function addReportOptions(command: Command): Command {
  return command
    .option("-p, --progress", "show progress on standard error (default: when it is a terminal and standard output is not)")
    .option("-q, --quiet", "no progress")
    .option("-N, --name <name>", "prefix the progress line with <name>; named tbuckets in one pipeline keep a line each")
    .option("--stats", "print a summary on standard error at the end (text; --stats-format json for JSON)")
    .addOption(choiceOption("--stats-format <format>", "the summary's format, text or json (implies --stats)", STATS_FORMATS, "a format"));
}

/** Checks -p/--progress, -q/--quiet, -N/--name, --stats and --stats-format, the same on every command that has them. */
export function parseReportOptions(flags: ReportFlags): ReportOptions {
  if (flags.progress && flags.quiet) throw new UsageError(`--progress and --quiet: choose one`);
  let stats: StatsFormat | undefined = flags.stats ? "text" : undefined;
  // choiceOption has checked it.
  if (flags.statsFormat !== undefined) stats = flags.statsFormat as StatsFormat;
  // An empty name would show as ": " before the figures.
  if (flags.name !== undefined && flags.name.trim() === "") throw new UsageError(`--name: empty; give the progress line a name, e.g. -N upload`);
  return { progress: flags.progress ? "on" : flags.quiet ? "off" : "auto", stats, name: flags.name };
}
