import type { Command } from "commander";
import { RuntimeError } from "../errors.js";

export function registerRun(program: Command, _onExit: (code: number) => void): void {
  program
    .command("run")
    .description("(not built yet)")
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new RuntimeError("run: not built yet");
    });
}
