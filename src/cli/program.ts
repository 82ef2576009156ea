import { Command } from "commander";
import { registerCompletion } from "./completion/register.js";
import { registerHelpCommand } from "./help-command.js";
import { helpTextConfiguration, showDefaultCommandOptions } from "./help-text.js";
import { registerKey } from "./key/register.js";
import { checkNotMistypedCommand, commandNames, givenWords } from "./mistyped-command.js";
import { registerPipe } from "./pipe/register.js";
import { registerProxy } from "./proxy/register.js";
import { registerRun } from "./run/register.js";
import { registerSimulate } from "./simulate/register.js";
import { version } from "./version.js";

/** The command that runs when none is named: `tbucket -r 1mb file` is `tbucket pipe -r 1mb file`. */
export const DEFAULT_COMMAND = "pipe";

/** The default command's options the top-level help shows, as pv's help shows its own first. */
const PIPE_MAIN_OPTIONS = ["--rate", "--burst", "--lines", "--null", "--size", "--progress", "--quiet", "--stats"] as const;

/**
 * The command tree. Each command declares its options here, cheaply; the code
 * that does the work is imported only when that command runs.
 */
export function createProgram(onExit: (code: number) => void): Command {
  const program = new Command("tbucket")
    .description(
      "Copy files or standard input to standard output no faster than a rate (the options below; tbucket pipe is the same), " +
        "launch commands at a limited rate, or simulate a token bucket.",
    )
    .version(version(), "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .helpCommand(false)
    .usage("[options] [file...]\n       tbucket <command> [options]")
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .configureHelp(helpTextConfiguration());
  const pipe = registerPipe(program, onExit);
  showDefaultCommandOptions(program, pipe, PIPE_MAIN_OPTIONS);
  registerRun(program, onExit);
  registerSimulate(program, onExit);
  registerKey(program, onExit);
  registerProxy(program, onExit);
  registerCompletion(program, onExit, DEFAULT_COMMAND);
  registerHelpCommand(program);
  // Before the pipe parses its options: `tbucket simulte --arrivals x` is a mistyped command, not an unknown option.
  program.hook("preSubcommand", (root, command) => {
    if (command.name() === DEFAULT_COMMAND) checkNotMistypedCommand(root.args[0], commandNames(root), givenWords(root));
  });
  program.addHelpText(
    "after",
    `
More options of the pipe (--key, --store, --stats-format, --pipe-size): tbucket pipe --help.
Each command's options: tbucket <command> --help.

Examples:
  cat big.iso | tbucket --rate 1mb --burst 4mb > out                      shape a byte stream
  tbucket run --rate 5 -- curl -s https://api.example.com/ping            launch a command at most 5 times a second
  tbucket simulate --rate 5 --burst 10 --arrivals "steady 8/s for 20s"    tune a limit before deploying it`,
  );
  return program;
}
