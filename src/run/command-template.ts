import { fillShellTemplate, parseShellTemplate } from "./shell-quote.js";
import type { JobSpec } from "./job-source.js";

const ITEM = "{}";
const NUMBER = "{#}";
/** The path of the attempt's report file (DESIGN 13), also in `$TBUCKET_REPORT`. */
const REPORT = "{report}";

/** True when some argument takes an input item: then each input line is one job. */
export function takesItems(args: readonly string[]): boolean {
  return args.some((arg) => arg.includes(ITEM));
}

/** What to execute for one job: a file and its arguments, ready for spawn without a shell. */
export interface CommandLine {
  readonly file: string;
  readonly args: readonly string[];
}

/**
 * Makes the command line of each job: `{}` becomes the item and `{#}` the
 * job's number. Without a shell each argument stays one argument whatever the
 * item holds. With `shell`, the words are joined into one script for
 * `/bin/sh -c` and each item is quoted for the place it lands in (outside
 * quotes, in '…' or in "…"), so an item can never inject shell syntax; a `{}`
 * where no quoting can do that throws a ShellTemplateError, before any job runs.
 */
export function commandLines(template: readonly string[], shell: boolean): (job: JobSpec, reportPath?: string) => CommandLine {
  if (shell) {
    const { parts, contexts } = parseShellTemplate(template.join(" "));
    // A number is digits, plain text in any context.
    // A report path is tbucket's own (its temp directory, the job's number): no shell syntax in it.
    return (job, reportPath = "") => {
      const numbered = parts.map((part) => part.replaceAll(NUMBER, String(job.number)).replaceAll(REPORT, reportPath));
      return { file: "/bin/sh", args: ["-c", fillShellTemplate({ parts: numbered, contexts }, job.item ?? "")] };
    };
  }
  return (job, reportPath = "") => {
    const item = job.item ?? "";
    const number = String(job.number);
    // {report} before {}: an item holding "{report}" stays as written.
    const [file, ...args] = template.map((word) => word.replaceAll(NUMBER, number).replaceAll(REPORT, reportPath).replaceAll(ITEM, item));
    return { file: file!, args };
  };
}
