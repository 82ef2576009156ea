import { fstatSync, readFileSync, statSync } from "node:fs";
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
  checkStandardOutputOpen();
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

/** Linux's O_ACCMODE and O_RDWR, as /proc/self/fdinfo shows the flags (octal). */
const O_ACCMODE = 0o3;
const O_RDWR = 0o2;
let checkedOpen = false;

/**
 * Throws, as a write would have, when standard output was closed (`>&-`).
 * Node.js puts /dev/null, opened for reading and writing, in place of a closed
 * standard descriptor, so writes would vanish without an error; a shell's
 * `> /dev/null` opens it for writing only. Checked once; only where Linux's
 * /proc tells the open mode.
 */
export function checkStandardOutputOpen(): void {
  if (checkedOpen) return;
  checkedOpen = true;
  try {
    const output = fstatSync(1);
    if (!output.isCharacterDevice() || output.rdev !== statSync("/dev/null").rdev) return;
    const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync("/proc/self/fdinfo/1", "latin1"))?.[1];
    if (flags === undefined || (Number.parseInt(flags, 8) & O_ACCMODE) !== O_RDWR) return;
  } catch {
    return;
  }
  throw standardOutputFailure(Object.assign(new Error("standard output is closed"), { code: "EBADF" }));
}
