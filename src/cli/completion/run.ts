import type { Command } from "commander";
import { bashScript } from "./bash.js";
import { describeCommandTree } from "./command-tree.js";
import { fishScript } from "./fish.js";
import type { CompletionShell } from "./options.js";
import { zshScript } from "./zsh.js";
import { EXIT } from "../errors.js";
import { writeStandardOutput } from "../standard-streams.js";

const GENERATORS = { bash: bashScript, zsh: zshScript, fish: fishScript } as const;

/** Writes the completion script for `shell` to standard output; resolves to the exit status. */
export function printCompletion(program: Command, defaultCommand: string | undefined, shell: CompletionShell): number {
  writeStandardOutput(GENERATORS[shell](describeCommandTree(program, defaultCommand)));
  return EXIT.ok;
}
