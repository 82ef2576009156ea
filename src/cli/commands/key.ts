import type { Command } from "commander";
import { RuntimeError } from "../errors.js";

export function registerKey(program: Command, _onExit: (code: number) => void): void {
  program
    .command("key")
    .description("(not built yet)")
    .allowUnknownOption()
    .allowExcessArguments()
    .action(() => {
      throw new RuntimeError("key: not built yet");
    });
}
