import { shellQuote } from "./shell-quote.js";
import type { JobSpec } from "./job-source.js";

const ITEM = "{}";
const NUMBER = "{#}";

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
 * The command line of one job: `{}` becomes the item and `{#}` the job's
 * number. Without a shell each argument stays one argument whatever the item
 * holds. With `shell`, the words are joined into one script for `/bin/sh -c`
 * and items are shell-quoted, so an item can never inject shell syntax.
 */
export function buildCommandLine(template: readonly string[], job: JobSpec, shell: boolean): CommandLine {
  const item = job.item ?? "";
  const number = String(job.number);
  const fill = (word: string, quote: (text: string) => string) =>
    word.replaceAll(NUMBER, number).replaceAll(ITEM, quote(item));
  if (shell) {
    const script = template.map((word) => fill(word, shellQuote)).join(" ");
    return { file: "/bin/sh", args: ["-c", script] };
  }
  const [file, ...args] = template.map((word) => fill(word, (text) => text));
  return { file: file!, args };
}
