import { writeAllSync } from "../stream/fd-writer.js";
import { ReaderGone, RuntimeError } from "./errors.js";
import { describeWriteError } from "./file-errors.js";

const STANDARD_OUTPUT = "standard output";

/**
 * What a failed write to standard output ends the command with: a reader
 * that went away (`| head -1`) is a normal end, anything else one line and
 * status 1. Errors other than the system's own pass through.
 */
export function standardOutputFailure(error: unknown, writtenBytes?: number): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== "string" || !code.startsWith("E")) return error;
  if (code === "EPIPE") return new ReaderGone();
  return new RuntimeError(describeWriteError(STANDARD_OUTPUT, error as NodeJS.ErrnoException, writtenBytes));
}

/**
 * Writes to standard output (descriptor 1) whole before returning; a failure
 * throws what standardOutputFailure says. Help, versions, reports and scripts
 * go through here, never through process.stdout, whose errors arrive later as
 * events nobody can turn into an exit status.
 */
export function writeStandardOutput(text: string | Buffer): void {
  try {
    writeAllSync(1, typeof text === "string" ? Buffer.from(text) : text);
  } catch (error) {
    throw standardOutputFailure(error);
  }
}

/**
 * Writes to standard error (descriptor 2), as far as it can: a standard error
 * that is full or closed has nowhere to report its own failure, and must not
 * end a copy whose data is fine.
 */
export function writeStandardError(text: string): void {
  try {
    writeAllSync(2, Buffer.from(text));
  } catch {
    // Nowhere to say so.
  }
}

/**
 * Makes a failed write to process.stderr (full, closed, read-only) be ignored,
 * as writeStandardError ignores it, instead of an unhandled 'error' event that
 * ends the process with a stack trace nobody can read. The stream is left
 * unmade until someone asks for it: making it sets a pipe that standard error
 * shares with standard output (`2>&1 |`) non-blocking for both.
 */
export function ignoreStandardErrorFailures(): void {
  const descriptor = Object.getOwnPropertyDescriptor(process, "stderr");
  const make = descriptor?.get;
  if (!make || !descriptor.configurable) return;
  Object.defineProperty(process, "stderr", {
    configurable: true,
    enumerable: descriptor.enumerable,
    get() {
      const stream = make.call(process) as NodeJS.WriteStream;
      stream.on("error", () => {});
      Object.defineProperty(process, "stderr", { configurable: true, enumerable: descriptor.enumerable, writable: true, value: stream });
      return stream;
    },
  });
}
