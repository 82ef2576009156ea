import type { Command } from "commander";
import { UsageError } from "./errors.js";
import { nearestName } from "./mistyped-command.js";

/**
 * `tbucket help [command...]`, in place of commander's own: that one printed
 * the whole help on standard error for a name it did not know (`tbucket help
 * simulte`), then a line reading "(outputHelp)". Here an unknown name is a
 * usage error that says which command was meant; a known path (`help key
 * show`) prints that command's help on standard output.
 */
export function registerHelpCommand(program: Command): void {
  program
    .command("help")
    .argument("[command...]", "the command whose help to show")
    .usage("[command]")
    .description("show a command's help, as tbucket <command> --help does")
    .action((words: string[]) => {
      let command = program;
      for (const word of words) {
        const names = command.commands.map((sub) => sub.name());
        const found = command.commands.find((sub) => sub.name() === word || sub.aliases().includes(word));
        if (!found) throw unknownCommand([...pathOf(command), word], nearestName(word, names));
        command = found;
      }
      command.outputHelp();
    });
}

function pathOf(command: Command): string[] {
  return command.parent ? [...pathOf(command.parent), command.name()] : [];
}

function unknownCommand(path: string[], nearest: string | undefined): UsageError {
  const words = path.slice(0, -1);
  const given = `"${path.join(" ")}"`;
  if (nearest !== undefined) return new UsageError(`help: ${given} is not a command; did you mean "tbucket help ${[...words, nearest].join(" ")}"?`);
  return new UsageError(`help: ${given} is not a command; see 'tbucket --help' for the commands`);
}
