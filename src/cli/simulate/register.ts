import type { Command } from "commander";
import { choiceOption } from "../choice-option.js";
import { addLimitOptions } from "../limit-options.js";
import { collectText, repeatableOption } from "../repeatable-option.js";
import { COST_UNITS, FORMATS, parseSimulateOptions, POLICIES, type SimulateFlags } from "./options.js";

const EXAMPLES = `
Arrivals: --arrivals segments separated by commas: "steady 8/s for 10s", "idle 5s", "burst 30",
"poisson 4/s for 30s", "ramp 1/s..20/s for 20s". A --trace has one event per line, the time first
(seconds from the start, epoch seconds or ISO-8601); Common and Combined Log Format access logs are
recognised as they are. Decisions are those of golang.org/x/time/rate: drop = AllowN, queue = ReserveN.

Examples:
  tbucket simulate --rate 5 --burst 10 --arrivals "steady 8/s for 20s"
  tbucket simulate -r 5 -b 10 --arrivals "burst 60" --format jsonl
  tbucket simulate -r 100/s -b 50 --arrivals "poisson 90/s for 1m, ramp 90/s..200/s for 30s" --seed 7 --svg plot.svg
  tbucket simulate -r 10 -b 20 --policy queue --max-wait 2s --trace events.txt --format csv
  tbucket simulate -r 20 --trace access.log --per-key --max-keys 10000          # one bucket per client address
  tbucket simulate -r 2mb -b 8mb --cost bytes --trace access.log                 # bytes served, not requests
  tbucket simulate -r 20 --trace access.log --suggest --target "reject<=1%"      # smallest burst that refuses <= 1%
  tbucket simulate -r auto -b 40 --policy queue --trace access.log --suggest --target "p99wait<=500ms"
  tbucket simulate -r 10/s -b 20 --window 1000/h --trace access.log --format jsonl    # a set: 10/s and 1000 an hour
  tbucket simulate -r 100/s -b 20 --class web=60/s,prio=0 --class batch=20/s,prio=1 --trace events.txt --class-field 2`;

/** Declares `tbucket simulate`; the simulator loads only when it runs. */
export function registerSimulate(program: Command, onExit: (code: number) => void): void {
  const command = program
    .command("simulate")
    .description("run a token bucket, or a set of limits, over arrivals on a virtual clock, instantly, to choose a rate and burst");
  addLimitOptions(command, {
    rate: "a bucket's rate: a count rate (5, 300/m), a byte rate with --cost bytes, or auto with --suggest; repeatable, the first is the bucket under test",
    burst: "the i-th --rate's capacity: a count, or a size with --cost bytes (required for the first unless --suggest searches it; later rates default to their kind's burst)",
    window: "also at most n in any interval w, sliding and exact: 100/1m, 1000/h, 2mb/1s with --cost bytes; repeatable",
    concurrency: "not in simulate: events have no duration to hold a slot for (use it with run or the proxy)",
  });
  command
    .option("--arrivals <pattern>", 'arrivals from a pattern: "steady 8/s for 10s, idle 5s, burst 30, poisson 4/s for 30s, ramp 1/s..20/s for 20s"')
    .option("--seed <n>", "seed for the random (poisson) segments: the same seed gives the same output (default: a fresh seed, printed)")
    .option("--trace <file>", "arrivals from a file, one event per line (- for standard input); access logs are recognised")
    .addOption(
      choiceOption("--cost <unit>", "what a token is: count (one per event, or --cost-field) or bytes (an access log's response size, or --cost-field)", COST_UNITS, "a cost unit").default("count"),
    )
    .option("--cost-field <n>", "with --trace: the field (from 1) holding each event's cost")
    .option("--key-field <n>", "with --trace: the field (from 1) holding each event's key, for --per-key")
    .addOption(
      repeatableOption(
        "--class <name=rate,...>",
        "a class sharing the limits: NAME=GUARANTEE, then any of ceil=RATE, prio=N, weight=W, burst=SIZE, joined by commas (amounts in the unit of --rate); repeatable",
        collectText,
      ),
    )
    .option("--class-field <n>", "with --class and --trace: the field (from 1) naming each event's class")
    .option("--default-class <name>", "with --class: the class of an event that names none (default: the first --class)")
    .option("--skip-bad", "skip trace lines that cannot be read, and report how many (default: stop with exit 2)")
    .addOption(choiceOption("--policy <policy>", "drop (Allow: refuse what does not fit) or queue (Reserve: wait in order) (default: drop)", POLICIES, "a policy"))
    .option("--max-wait <duration>", "with queue: refuse an arrival that would wait longer (implies --policy queue)")
    .option("--per-key", "one bucket per key: --key-field, or the client address of an access log")
    .option("--max-keys <n>", "with --per-key: at most n buckets, the least recently used evicted (default 100000, as the proxy's)")
    .option("--ipv6-prefix <bits>", "with --per-key: key an IPv6 address by its network of this many bits, as the proxy does (default 56; 128: each address)")
    .addOption(
      choiceOption("--format <format>", "summary, table, csv, jsonl (one line per event) or json (default: summary and chart on a terminal, else table)", FORMATS, "a format"),
    )
    .option("--step <duration>", "the width of a row of the table, chart and plot (default: fits 20 to 60 rows)")
    .option("--chart", "add a chart of the bucket level and admitted/refused per step (default: on a terminal)")
    .option("--svg <file>", "write an SVG plot of level, admitted, refused and wait over time to <file>")
    .option("--suggest", "search the smallest burst (or with --rate auto, the smallest rate) that meets --target")
    .option("--target <target>", 'with --suggest: "reject<=1%" or "p99wait<=500ms" (default: reject<=1%)')
    .addHelpText("after", EXAMPLES)
    .action(async (flags: SimulateFlags) => {
      const config = parseSimulateOptions(flags);
      const { runSimulate } = await import("./run.js");
      onExit(await runSimulate(config));
    });
}
