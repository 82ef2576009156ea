
/**
 * Errors the CLI turns into one line on standard error and an exit status.
 * Messages read `<what>: <why>; <what to do>`; main() adds the `tbucket: ` prefix.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A mistake in how the command was called: exit status 2. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, 2);
    this.name = "UsageError";
  }
}

/** Something that went wrong while running: exit status 1. */
export class RuntimeError extends CliError {
  constructor(message: string) {
    super(message, 1);
    this.name = "RuntimeError";
  }
}

/**
 * Standard output's reader went away (`| head -1`): a normal way for output to
 * end, as for cat and pv users, so status 0 and nothing said.
 */
export class ReaderGone extends CliError {
  constructor() {
    super("standard output: its reader went away", 0);
    this.name = "ReaderGone";
  }
}

/** Exit statuses, as the README lists them. */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  notFound: 127,
  interrupted: 130,
} as const;

/** Runs `parse` on an option's text, turning a parse error into a UsageError that names the option. */
export function parseOption<T>(flag: string, text: string, parse: (text: string) => T): T {
  try {
    return parse(text);
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}
