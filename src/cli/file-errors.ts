import { grouped } from "../core/format.js";
import { INPUT_IS_OUTPUT } from "../stream/copy-onto-itself.js";

/** Why a file could not be read, and what to do, by error code. */
const READ_REASONS: Record<string, string> = {
  ENOENT: "no such file or directory; check the path",
  EACCES: "permission denied; check the file's permissions",
  EPERM: "permission denied; check the file's permissions",
  EISDIR: "is a directory; name a file",
  ELOOP: "too many levels of symbolic links; check the link",
  ENAMETOOLONG: "the name is too long; check the path",
  EIO: "input/output error; check the device",
  [INPUT_IS_OUTPUT]: "input file is output file; write the output to another file",
};

/**
 * Why a file or stream could not be written, and what to do, by error code.
 * Each is a pair, so that a caller can say how far the writing got in between.
 */
const WRITE_REASONS: Record<string, [why: string, fix: string]> = {
  ENOSPC: ["no space left on device", "free some space or write elsewhere"],
  EDQUOT: ["disk quota exceeded", "free some space or write elsewhere"],
  EFBIG: ["file too large", "raise the file size limit (ulimit -f), or write elsewhere"],
  EBADF: ["not open for writing", "redirect it to a file or a pipe (> file)"],
  EPIPE: ["its reader went away", "keep the reader open until the end"],
  EIO: ["input/output error", "check the device"],
  EROFS: ["read-only file system", "write elsewhere"],
  EACCES: ["permission denied", "check the file's permissions"],
  EPERM: ["permission denied", "check the file's permissions"],
  EISDIR: ["is a directory", "name a file"],
  EINVAL: ["does not take writes like this", "write to a file or a pipe"],
  ECONNRESET: ["the connection was reset by its peer", "check the other end"],
  // OutputSink's own (run's job output): not an errno.
  EBINARY: ["it is a terminal and job output looks binary", "redirect it (> file), or add --force"],
};

/** One line about a file that could not be read, as `cat` would say it, with what to do. */
export function describeFileError(name: string, error: NodeJS.ErrnoException): string {
  const shown = name === "-" ? "standard input" : name;
  const reason = (error.code && READ_REASONS[error.code]) ?? `${error.message}`;
  return `${shown}: ${reason}`;
}

/**
 * One line about a file or stream (`standard output`) that could not be
 * written: what, why, after how many bytes when some went out, and what to do.
 */
export function describeWriteError(name: string, error: NodeJS.ErrnoException, writtenBytes?: number): string {
  const [why, fix] = writeErrorReason(error);
  const after = writtenBytes ? ` after ${grouped(writtenBytes)} bytes` : "";
  return `${name}: ${why}${after}; ${fix}`;
}

/** Why a write failed and what to do, apart, for a caller that says more between the two. */
export function writeErrorReason(error: NodeJS.ErrnoException): [why: string, fix: string] {
  return (error.code && WRITE_REASONS[error.code]) || [`cannot write (${error.message})`, "check the device"];
}
