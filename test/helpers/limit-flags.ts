import { Command } from "commander";
import { addLimitOptions, type LimitFlags } from "../../src/cli/limit-options.js";

const HELP = { rate: "r", burst: "b", window: "w", concurrency: "c" };

/** The limit flags of `args` as commander hands them over to a command declared with addLimitOptions. */
export function limitFlagsOf(args: readonly string[]): LimitFlags {
  const command = addLimitOptions(new Command().exitOverride(), HELP);
  command.parse([...args], { from: "user" });
  return command.opts<LimitFlags>();
}
