import { Command } from "commander";
import { registerCompletion } from "./commands/completion.js";
import { registerKey } from "./commands/key.js";
import { registerPipe } from "./commands/pipe.js";
import { registerRun } from "./commands/run.js";
import { registerSimulate } from "./commands/simulate.js";
import { version } from "./version.js";

/** What an action hands back to main(): the exit status. */
export type ActionResult = Promise<number>;

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
  registerCompletion(program, onExit);
  return program;
}
