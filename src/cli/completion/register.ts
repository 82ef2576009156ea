import { Argument, type Command, Option } from "commander";
import { COMPLETION_SHELLS, parseCompletionShell } from "./options.js";

const EXAMPLES = `
The script is built from tbucket's own commands and options, so it always matches this version.

Examples:
  source <(tbucket completion bash)                      # bash, this shell only
  tbucket completion bash > ~/.local/share/bash-completion/completions/tbucket
  tbucket completion zsh > "\${fpath[1]}/_tbucket"        # zsh, then start a new shell
  tbucket completion fish > ~/.config/fish/completions/tbucket.fish`;

/**
 * `defaultCommand` is the command that runs when none is named (commander keeps
 * it private): its options are completed at the top level too.
 */
export function registerCompletion(program: Command, onExit: (code: number) => void, defaultCommand?: string): void {
  program
    .command("completion")
    .description("print a shell completion script for bash, zsh or fish")
    .usage("<bash|zsh|fish>")
    // The choices are listed for help and completion; parseCompletionShell checks them, with a better message.
    .addArgument(new Argument("[shell]", "the shell").choices(COMPLETION_SHELLS).argParser((value: string) => value))
    // For the scripts themselves: the key names to offer after --key and key show|set|delete.
    .addOption(new Option("--keys", "print the shared buckets' names, one a line").hideHelp())
    .addOption(new Option("--store <url>").hideHelp())
    .addHelpText("after", EXAMPLES)
    .action(async (shell: string | undefined, flags: { keys?: boolean; store?: string }) => {
      if (flags.keys) {
        const { printKeyNames } = await import("./key-names.js");
        onExit(await printKeyNames(flags.store));
        return;
      }
      const checked = parseCompletionShell(shell);
      const { printCompletion } = await import("./run.js");
      onExit(printCompletion(program, defaultCommand, checked));
    });
}
