import type { Command } from "commander";
import { parseCount, parseCountRate, parseDuration } from "../../core/units.js";
import { takesItems } from "../../run/command-template.js";
import type { OutputMode } from "../../run/job-output.js";
import { parseOption, UsageError } from "../errors.js";
import { parseReportOptions, type ReportFlags, type ReportOptions, statsFormatOption, statsOption } from "../report-options.js";
import { addSharedBucketOptions, parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";

export interface RunConfig extends ReportOptions {
  /** The command and its arguments, `{}` and `{#}` still in them. */
  command: string[];
  /** Launches per second; undefined: from --key. */
  rate: number | undefined;
  burst: number | undefined;
  /** Most jobs at once; Infinity for no limit. */
  jobs: number;
  /** Where items come from: a file, standard input ("-"), or none (no `{}` in the command). */
  input: string | undefined;
  /** At most this many jobs; Infinity: until the items end or forever. */
  count: number;
  durationMs: number;
  maxWaitMs: number;
  /** After a signal is passed on to jobs, kill those still running this much later. */
  killAfterMs: number;
  retries: number;
  output: OutputMode;
  tag: boolean;
  joblog: string | undefined;
  shell: boolean;
  shared: SharedBucketOptions;
  /** -N: names the progress line. */
  name: string | undefined;
}

interface RunFlags extends ReportFlags, SharedBucketFlags {
  name?: string;
  rate?: string;
  burst?: string;
  jobs: string;
  input?: string;
  count?: string;
  duration?: string;
  maxWait?: string;
  killAfter: string;
  retries: string;
  output: string;
  tag?: boolean;
  joblog?: string;
  shell?: boolean;
}

const EXAMPLES = `
{} is the item (one line of standard input or of --input), {#} the job's number.
The rate limits how fast launches start; --jobs limits how many run at once.
To limit a command's bandwidth instead, pipe it: curl -s URL | tbucket --rate 1mb > file

Examples:
  tbucket run --rate 5 -- curl -s https://api.example.com/ping      # forever, 5 a second, until Ctrl-C
  tbucket run --rate 100/m --count 500 -- ./probe.sh                 # an API allowing 100 requests a minute
  cat ids.txt | tbucket run -r 600/m -j 4 --retries 2 -- curl -sf https://api.example.com/items/{}
  tbucket run -r 2 -b 10 --input urls.txt --tag --joblog log.jsonl -- curl -s -o /dev/null -w '%{http_code}\\n' {}
  tbucket run -r 1/10s --duration 1h -- ./poll-status.sh             # poll every 10 s for an hour
  ls *.wav | tbucket run -r 1 --shell -- 'ffmpeg -i {} {#}.mp3 2>/dev/null'`;

export function registerRun(program: Command, onExit: (code: number) => void): void {
  const command = program
    .command("run")
    .description("launch a command at a limited rate, like a rate-limited xargs")
    .usage("[options] [--] command [args...]")
    .argument("[command...]", "the command to launch; {} is replaced by an input item, {#} by the job number")
    .passThroughOptions()
    .option("-r, --rate <rate>", "launches per time: 5 (= 5/s), 300/m, 1000/h, 1/10s, inf (required unless --key)")
    .option("-b, --burst <n>", "launches that may start back to back (default: 1; with --key and no --rate: the key's)")
    .option("-j, --jobs <n>", "at most n jobs running at once; 0 = no limit", "8")
    .option("--input <file>", "read items from <file> (- for standard input) instead of standard input")
    .option("--count <n>", "run the command n times (or at most n items)")
    .option("--duration <d>", "stop launching after d (30s, 10m, 1h)")
    .option("--max-wait <d>", "skip a job that would wait longer than d for its token (default: wait forever)")
    .option("--kill-after <d>", "after passing a signal on to jobs, kill those still running d later (0: at once)", "5s")
    .option("--retries <n>", "rerun a failed job up to n times; every attempt costs a token", "0")
    .option("--output <mode>", "line (whole lines, never mixed), group (each job's output at its end), or raw", "line")
    .option("--tag", "prefix each output line with the job's item (or number) and a tab")
    .option("--joblog <file>", "write one JSON line per finished job to <file>")
    .option("--shell", "run the command with /bin/sh -c; items are shell-quoted")
    .option("-p, --progress", "show progress on standard error (default: when it is a terminal and standard output is not)")
    .option("-q, --quiet", "no progress")
    .option("-N, --name <name>", "prefix the progress line with <name>")
    .addOption(statsOption())
    .addOption(statsFormatOption());
  addSharedBucketOptions(command)
    .addHelpText("after", EXAMPLES)
    .action(async (words: string[], flags: RunFlags) => {
      const config = parseRunOptions(words, flags);
      const { runRun } = await import("../actions/run.js");
      onExit(await runRun(config));
    });
}

const BYTE_RATE_HINT =
  `run launches commands, so it takes a count rate such as "5" or "300/m"; ` +
  `to limit a command's bandwidth, pipe it: curl -s URL | tbucket --rate 1mb > file`;

/** Turns the run's flags into a checked configuration; every mistake is a UsageError. */
export function parseRunOptions(words: string[], flags: RunFlags): RunConfig {
  const shared = parseSharedBucketOptions(flags);
  if (words.length === 0) {
    throw new UsageError(`run: no command given; try "tbucket run --rate 5 -- curl -s https://example.com"`);
  }
  if (words[0] === "") {
    throw new UsageError(`run: the command name is empty; name the program to run, e.g. "tbucket run --rate 5 -- curl -s https://example.com"`);
  }
  let rate: number | undefined;
  if (flags.rate !== undefined) {
    rate = parseOption("--rate", flags.rate, (text) => {
      try {
        // 0 pauses a shared key; a private bucket at 0 would never launch.
        return parseCountRate(text, { allowZero: shared.key !== undefined });
      } catch (error) {
        if (/byte rate/.test((error as Error).message)) throw new Error(`"${text}" is a byte rate; ${BYTE_RATE_HINT}`);
        throw error;
      }
    });
  } else if (shared.key === undefined) {
    throw new UsageError(`--rate: missing; try "tbucket run --rate 5 -- <command>", or --key to use a shared bucket`);
  }
  const burst = flags.burst === undefined ? undefined : parseOption("--burst", flags.burst, (text) => parseCount(text));
  const jobs = parseOption("--jobs", flags.jobs, (text) => parseCount(text, 0));
  const count = flags.count === undefined ? Infinity : parseOption("--count", flags.count, (text) => parseCount(text));
  const durationMs = flags.duration === undefined ? Infinity : parseOption("--duration", flags.duration, positiveDuration);
  const maxWaitMs = flags.maxWait === undefined ? Infinity : parseOption("--max-wait", flags.maxWait, parseDuration);
  const killAfterMs = parseOption("--kill-after", flags.killAfter, parseDuration);
  const retries = parseOption("--retries", flags.retries, (text) => parseCount(text, 0));
  const output = flags.output;
  if (output !== "line" && output !== "group" && output !== "raw") {
    throw new UsageError(`--output: "${output}" is not an output mode; try "line", "group" or "raw"`);
  }
  if (flags.tag && output === "raw") {
    throw new UsageError(`--tag: raw output is not split into lines, so it cannot be tagged; use "--output line" or "--output group"`);
  }
  const items = takesItems(words);
  if (flags.input !== undefined && !items) {
    throw new UsageError(`--input: no argument of the command holds {}; write {} where the item goes, e.g. "curl -s {}"`);
  }
  const { progress, stats } = parseReportOptions(flags);
  return {
    command: words,
    rate,
    burst,
    jobs: jobs === 0 ? Infinity : jobs,
    input: items ? (flags.input ?? "-") : undefined,
    count,
    durationMs,
    maxWaitMs,
    killAfterMs,
    retries,
    output,
    tag: Boolean(flags.tag),
    joblog: flags.joblog,
    shell: Boolean(flags.shell),
    progress,
    stats,
    shared,
    name: flags.name,
  };
}

function positiveDuration(text: string): number {
  const ms = parseDuration(text);
  if (ms === 0) throw new Error(`"${text}" is not a duration here: it must be more than zero; try "30s" or "10m"`);
  return ms;
}
