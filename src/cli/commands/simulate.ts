import type { Command } from "commander";
import { RuntimeError } from "../errors.js";

export function registerSimulate(program: Command, _onExit: (code: number) => void): void {
  program
    .command("simulate")
    .description("(not built yet)")
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new RuntimeError("simulate: not built yet");
    });
}
