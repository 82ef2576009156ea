import type { Command } from "commander";
import { choiceOption } from "../choice-option.js";
import { addLimitOptions } from "../limit-options.js";
import { addReportOptions } from "../report-options.js";
import { collectText, repeatableOption } from "../repeatable-option.js";
import { addSharedBucketOptions } from "../shared-options.js";
import { OUTPUT_MODES, parseRunOptions, type RunFlags } from "./options.js";

const EXAMPLES = `
{} is the item (one line of standard input or of --input), {#} the job's number.
The rate limits how fast launches start; --jobs limits how many run at once. --concurrency
does what --jobs does, as one of the limits (numbered in --stats); given both, the lower holds.
To limit a command's bandwidth instead, pipe it: curl -s URL | tbucket --rate 1mb > file

Examples:
  tbucket run --rate 5 -- curl -s https://api.example.com/ping      # forever, 5 a second, until Ctrl-C
  tbucket run --rate 100/m --count 500 -- ./probe.sh                 # an API allowing 100 requests a minute
  cat ids.txt | tbucket run -r 600/m -j 4 --retries 2 -- curl -sf https://api.example.com/items/{}
  tbucket run -r 2 -b 10 --input urls.txt --tag --joblog log.jsonl -- curl -s -o /dev/null -w '%{http_code}\\n' {}
  tbucket run --rate 10/s --window 1000/h --concurrency 20 -- ./call-api.sh  # an API's three limits
  tbucket run -r 1/10s --duration 1h -- ./poll-status.sh             # poll every 10 s for an hour
  tbucket run -r 20/s --class web=15/s --class batch=5/s,prio=1 --class-of {2} -- ./call.sh {}  # web, batch share 20/s
  ls *.wav | tbucket run -r 1 --shell -- 'ffmpeg -i {} {#}.mp3 2>/dev/null'`;

/** Declares `tbucket run`; the launching code loads only when it runs. */
export function registerRun(program: Command, onExit: (code: number) => void): void {
  const command = program
    .command("run")
    .description("launch a command at a limited rate, like a rate-limited xargs")
    .usage("[options] [--] command [args...]")
    .argument("[command...]", "the command to launch; {} is replaced by an input item, {#} by the job number")
    .passThroughOptions();
  addLimitOptions(command, {
    rate: "launches per time: 5 (= 5/s), 300/m, 1000/h, 1/10s, inf (required unless --window or --key); repeatable: every rate holds",
    burst: "launches that may start back to back, for the rate before it (default: 1; with --key and no --rate: the key's)",
    burstValue: "n",
    window: "at most n launches in any interval w, sliding and exact: 10/1s, 1000/h; repeatable",
    concurrency: "at most n jobs running at once, as a limit of the set (--stats names it when it bound); with --jobs, the lower holds",
  })
    .option("-j, --jobs <n>", "at most n jobs running at once; 0 = no limit", "8")
    .option("--input <file>", "read items from <file> (- for standard input) instead of standard input")
    .option("--count <n>", "run the command n times (or at most n items)")
    .option("--duration <d>", "stop launching after d (30s, 10m, 1h)")
    .option("--max-wait <d>", "skip a job that would wait longer than d for its token (default: wait forever)")
    .option("--skip-bad", "skip an item whose --cost or --class-of field cannot be read, and count it in the summary (default: the job fails, naming the line)")
    .option("--kill-after <d>", "after passing a signal on to jobs, kill those still running d later (0: at once)", "5s")
    .option("--retries <n>", "rerun a failed job up to n times; every attempt costs a token", "0")
    .option("--adaptive", "the --rate is a ceiling: the launch rate follows the server's pushback ({report}), cut x0.7 at a throttle and grown back along CUBIC")
    .addOption(choiceOption("--output <mode>", "line (whole lines, never mixed), group (each job's output at its end), or raw", OUTPUT_MODES, "an output mode").default("line"))
    .option("--tag", "prefix each output line with the job's item (or number) and a tab")
    .option("--force", "write to a terminal even job output that looks binary (refused otherwise, with line and group output)")
    .option("--joblog <file>", "write one JSON line per finished job to <file>")
    .option("--shell", "run the command with /bin/sh -c; items are shell-quoted")
    .addOption(
      repeatableOption(
        "--class <name=rate,...>",
        "a class sharing the launch rate: NAME=GUARANTEE, then any of ceil=RATE, prio=N, weight=W, burst=N, joined by commas; repeatable (a shared key's classes are set by tbucket key set --class)",
        collectText,
      ),
    )
    .option("--class-of <template>", "each job's class: {2} (a whitespace field of its item), {.priority} (a JSON field) or NAME for all (default: the first --class)")
    .addOption(repeatableOption("--cost <template>", "each job's cost, counted by --cost-rate and --cost-window: {.max_tokens} (a JSON field of its item), {2} (a whitespace field) or a number; repeatable: the i-th for the i-th cost limit", collectText))
    .addOption(repeatableOption("--cost-rate <rate>", "at most this much cost per time (90000/m); repeatable: every rate holds", collectText))
    .addOption(repeatableOption("--cost-burst <n>", "cost that may go at once, for the --cost-rate before it (default: what the rate allows in its period: 90000/m holds 90000)", collectText))
    .addOption(repeatableOption("--cost-window <n/w>", "at most n of cost in any interval w, sliding and exact (1000000/d); repeatable", collectText));
  addReportOptions(command);
  addSharedBucketOptions(command)
    .addHelpText("after", EXAMPLES)
    .action(async (words: string[], flags: RunFlags) => {
      const config = parseRunOptions(words, flags);
      const { runRun } = await import("./run.js");
      onExit(await runRun(config));
    });
}
