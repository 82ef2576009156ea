import { UsageError } from "../errors.js";

/** The shells `tbucket completion` writes a script for. */
export const COMPLETION_SHELLS = ["bash", "zsh", "fish"] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

/** The shell named on the command line; anything else is a UsageError that lists the shells. */
export function parseCompletionShell(shell: string | undefined): CompletionShell {
  const list = `${COMPLETION_SHELLS.slice(0, -1).join(", ")} or ${COMPLETION_SHELLS.at(-1)}`;
  if (shell === undefined) throw new UsageError(`completion: no shell named; use ${list}, e.g. "tbucket completion bash"`);
  if (!(COMPLETION_SHELLS as readonly string[]).includes(shell)) {
    throw new UsageError(`completion: "${shell}" is not a supported shell; use ${list}`);
  }
  return shell as CompletionShell;
}
