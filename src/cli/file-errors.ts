const REASONS: Record<string, string> = {
  ENOENT: "no such file or directory; check the path",
  EACCES: "permission denied; check the file's permissions",
  EPERM: "permission denied; check the file's permissions",
  EISDIR: "is a directory; name a file",
  ELOOP: "too many levels of symbolic links; check the link",
  ENAMETOOLONG: "the name is too long; check the path",
  EIO: "input/output error; check the device",
};

/** One line about a file that could not be read, as `cat` would say it, with what to do. */
export function describeFileError(name: string, error: NodeJS.ErrnoException): string {
  const shown = name === "-" ? "standard input" : name;
  const reason = (error.code && REASONS[error.code]) ?? `${error.message}`;
  return `${shown}: ${reason}`;
}
