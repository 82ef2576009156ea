import { CommanderError } from "commander";
import { CliError, EXIT, ReaderGone } from "./errors.js";
import { type BuildAssets, setBuildAssets } from "./build-assets.js";
import { wrapProse } from "./help-text.js";
import { createProgram } from "./program.js";
import { ignoreStandardErrorFailures, writeStandardError, writeStandardOutput } from "./standard-streams.js";

/** What an entry point knows of its build. */
export type MainOptions = BuildAssets;

/**
 * The one entry point: parses argv, runs the command, and turns every error
 * into one line on standard error and an exit status. Never a stack trace for
 * a user's mistake.
 */
export async function main(argv: readonly string[], options: MainOptions = {}): Promise<number> {
  ignoreStandardErrorFailures();
  setBuildAssets(options);
  let exitCode: number = EXIT.ok;
  const program = createProgram((code) => (exitCode = code));
  applyErrorHandling(program);
  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    return reportError(error);
  }
}

function applyErrorHandling(command: ReturnType<typeof createProgram>): void {
  command.exitOverride();
  // Help and versions are written whole or fail here, at once, as a thrown error main() reports.
  // On a terminal, help's prose is wrapped to its width (wrapProse); piped, it stays as written.
  const writeOut = (text: string) => writeStandardOutput(process.stdout.isTTY ? wrapProse(text, process.stdout.columns) : text);
  command.configureOutput({ writeOut, writeErr: writeStandardError, outputError: () => {} });
  for (const sub of command.commands) applyErrorHandling(sub);
}

export function reportError(error: unknown): number {
  if (error instanceof CommanderError) {
    // --help and --version end through here too, with their output already written.
    if (error.exitCode === 0) return EXIT.ok;
    const message = error.message
      .replace(/^error: /, "")
      // A value that choiceOption (or any parser) refused: the flag, then our own words.
      .replace(/^option '(?:-\w, )?(--[\w-]+)[^']*' argument '.*' is invalid\. /s, "$1: ")
      .replace(/\n\(Did you mean (.+)\?\)/, "; did you mean $1?")
      // --stats took a format before 0.2: say where the format went.
      .replace(/^unknown option '--stats=(.*)'$/, "--stats takes no value; did you mean --stats-format $1?");
    const saysWhatToWrite = message.includes("did you mean") || error.code === "commander.invalidArgument";
    writeStandardError(`tbucket: ${message}${saysWhatToWrite ? "" : "; see 'tbucket --help'"}\n`);
    return EXIT.usage;
  }
  if (error instanceof ReaderGone) return error.exitCode;
  if (error instanceof CliError) {
    writeStandardError(`tbucket: ${error.message}\n`);
    return error.exitCode;
  }
  const text = error instanceof Error ? error.message : String(error);
  writeStandardError(`tbucket: ${text}\n`);
  if (process.env.TBUCKET_DEBUG && error instanceof Error) writeStandardError(`${error.stack}\n`);
  return EXIT.failure;
}
