import type { Command } from "commander";
import { RuntimeError } from "../errors.js";

export function registerCompletion(program: Command, _onExit: (code: number) => void): void {
  program
    .command("completion")
    .description("(not built yet)")
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new RuntimeError("completion: not built yet");
    });
}
