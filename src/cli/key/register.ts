import type { Command } from "commander";
import { choiceOption } from "../choice-option.js";
import { UsageError } from "../errors.js";
import { nearestName } from "../mistyped-command.js";
import { addLimitOptions } from "../limit-options.js";
import { STORE_HELP } from "../shared-options.js";
import { collectText, repeatableOption } from "../repeatable-option.js";
import { checkKey, type KeyFlags, type KeyRequest, KINDS, parseKeySet } from "./options.js";

const EXAMPLES = `
Store: --store sqlite: (default, $XDG_STATE_HOME/tbucket/buckets.db), sqlite:<path>,
redis://[user:pass@]host:port[/db] or rediss://...; TBUCKET_STORE sets the default.

Examples:
  tbucket key set backups --rate 20mb --burst 4mb    # every pipe on --key backups shares 20 MiB/s
  tbucket key set backups --rate 5mb                 # running pipes slow down within a second
  tbucket key set api --rate 600/m --burst 10        # a launch quota for tbucket run --key api
  tbucket key set backups --rate 0                   # pause every pipe and run on the key; set a rate to resume
  tbucket key set api --rate 10/s --burst 20 --window 1000/h --concurrency 20   # a set of limits, all held
  tbucket key set uplink --rate 20mb --class interactive=5mb,prio=0 --class backup=10mb,prio=1   # classes share it
  tbucket key list --store redis://10.0.0.5:6379
  tbucket key show backups --json
  tbucket key delete backups`;

const KEY_SUBCOMMANDS = ["list", "show", "set", "delete"];

/** Declares `tbucket key` and its subcommands; the store loads only when one runs. */
export function registerKey(program: Command, onExit: (code: number) => void): void {
  const key = program
    .command("key")
    .description("list, show, set or delete shared buckets (--key) and change a running transfer's rate")
    .usage("<command> [options]")
    .addHelpText("after", EXAMPLES)
    .argument("[subcommand...]")
    .action(([subcommand]: string[]) => {
      const nearest = subcommand === undefined ? undefined : nearestName(subcommand, KEY_SUBCOMMANDS);
      if (nearest !== undefined) throw new UsageError(`key: "${subcommand}" is not a key subcommand; did you mean "tbucket key ${nearest}"?`);
      const what = subcommand === undefined ? "which one?" : `"${subcommand}" is not a key subcommand;`;
      throw new UsageError(`key: ${what} try "tbucket key list", "tbucket key show <key>", "tbucket key set <key> --rate 20mb" or "tbucket key delete <key>"`);
    });

  const run = async (request: KeyRequest) => {
    const { runKey } = await import("./run.js");
    onExit(await runKey(request));
  };

  key
    .command("list")
    .description("list every shared bucket in the store: rate, burst, level")
    .option("--store <url>", STORE_HELP)
    .option("--json", "print a JSON array")
    .addHelpText("after", "\nExamples:\n  tbucket key list\n  tbucket key list --store redis://10.0.0.5:6379 --json")
    .action(async (flags: KeyFlags) => run({ action: "list", store: flags.store, json: Boolean(flags.json) }));

  key
    .command("show")
    .description("show one shared bucket's settings and level")
    .argument("<key>", "the bucket's name")
    .usage("<key> [options]")
    .option("--store <url>", STORE_HELP)
    .option("--json", "print a JSON object")
    .addHelpText("after", "\nExamples:\n  tbucket key show backups\n  tbucket key show api --store sqlite:/var/lib/tbucket.db --json")
    .action(async (name: string, flags: KeyFlags) => run({ action: "show", key: checkKey(name), store: flags.store, json: Boolean(flags.json) }));

  const setCommand = key
    .command("set")
    .description("create a shared bucket or a set of limits, or change them; running processes follow within a second")
    .argument("<key>", "the bucket's name")
    .usage("<key> [options]");
  addLimitOptions(setCommand, {
    rate: "byte rate (20mb, 10mbit) or count rate (5/s, 600/m); 0 pauses; a new key needs it; repeatable, for a set of limits",
    burst: "capacity (default for a new key: 100 ms of a byte rate, 1 for a count rate); the i-th --burst goes with the i-th --rate",
    window: "at most N in any W, sliding (1000/h, 50gb/d); repeatable",
    concurrency: "at most N at once across every process on the key (run's jobs)",
  });
  setCommand
    .addOption(
      repeatableOption(
        "--class <name=rate,...>",
        "a class sharing the key's rate: NAME=GUARANTEE, then any of ceil=RATE, prio=N, weight=W, burst=SIZE; repeatable; replaces the key's classes (none: drop them)",
        collectText,
      ),
    )
    .addOption(choiceOption("--kind <kind>", "bytes or count, when the rate alone does not say (a bare number is a count for a new key)", KINDS, "a kind"))
    .option("--store <url>", STORE_HELP)
    .option("--json", "print the bucket as a JSON object")
    .addHelpText(
      "after",
      "\nExamples:\n  tbucket key set backups --rate 20mb --burst 4mb\n  tbucket key set backups --rate 40mb      # turn running pipes up\n  tbucket key set api --rate 5/s --burst 10",
    )
    .action(async (name: string, flags: KeyFlags) => run(parseKeySet(name, flags)));

  key
    .command("delete")
    .description("forget a shared bucket")
    .argument("<key>", "the bucket's name")
    .usage("<key> [options]")
    .option("--store <url>", STORE_HELP)
    .option("--json", "print {\"key\",\"deleted\"} as JSON")
    .addHelpText("after", "\nExamples:\n  tbucket key delete backups\n  tbucket key delete api --store redis://10.0.0.5:6379")
    .action(async (name: string, flags: KeyFlags) => run({ action: "delete", key: checkKey(name), store: flags.store, json: Boolean(flags.json) }));
}
