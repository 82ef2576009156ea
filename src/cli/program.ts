import { Command } from "commander";
import { registerCompletion } from "./completion/register.js";
import { registerKey } from "./key/register.js";
import { registerPipe } from "./pipe/register.js";
import { registerProxy } from "./proxy/register.js";
import { registerRun } from "./run/register.js";
import { registerSimulate } from "./simulate/register.js";
import { version } from "./version.js";

/** The command that runs when none is named: `tbucket -r 1mb file` is `tbucket pipe -r 1mb file`. */
export const DEFAULT_COMMAND = "pipe";

/**
 * The command tree. Each command declares its options here, cheaply; the code
 * that does the work is imported only when that command runs.
 */
export function createProgram(onExit: (code: number) => void): Command {
  const program = new Command("tbucket")
    .description("Shape a byte stream, launch commands at a limited rate, or simulate a token bucket.")
    .version(version(), "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .enablePositionalOptions()
    .showSuggestionAfterError(true);
  registerPipe(program, onExit);
  registerRun(program, onExit);
  registerSimulate(program, onExit);
  registerKey(program, onExit);
  registerProxy(program, onExit);
  registerCompletion(program, onExit, DEFAULT_COMMAND);
  program.addHelpText(
    "after",
    `
Each command's options: tbucket <command> --help (the default command's: tbucket pipe --help).

Examples:
  cat big.iso | tbucket --rate 1mb --burst 4mb > out                      shape a byte stream
  tbucket run --rate 5 -- curl -s https://api.example.com/ping            launch a command at most 5 times a second
  tbucket simulate --rate 5 --burst 10 --arrivals "steady 8/s for 20s"    tune a limit before deploying it`,
  );
  return program;
}
