import { UsageError } from "./errors.js";

/** Whether to show progress: asked for, refused, or decided by whether standard error is a terminal. */
export type ProgressMode = "auto" | "on" | "off";
export type StatsFormat = "text" | "json";

export interface ReportOptions {
  progress: ProgressMode;
  stats: StatsFormat | undefined;
}

/** -p/--progress, -q/--quiet and --stats as commander hands them over. */
export interface ReportFlags {
  progress?: boolean;
  quiet?: boolean;
  stats?: string | boolean;
}

/** Checks -p/--progress, -q/--quiet and --stats [text|json], the same on every command that has them. */
export function parseReportOptions(flags: ReportFlags): ReportOptions {
  if (flags.progress && flags.quiet) throw new UsageError(`--progress and --quiet: choose one`);
  let stats: StatsFormat | undefined;
  if (flags.stats === true) stats = "text";
  else if (typeof flags.stats === "string") {
    if (flags.stats !== "text" && flags.stats !== "json") {
      throw new UsageError(`--stats: "${flags.stats}" is not a format; try "--stats text" or "--stats json"`);
    }
    stats = flags.stats;
  }
  return { progress: flags.progress ? "on" : flags.quiet ? "off" : "auto", stats };
}
