import { closeSync, openSync, readSync, statSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { JobExit } from "./launch.js";

/** Linux's MAX_ARG_STRLEN: the longest one argument may be, its final NUL included. */
const MAX_ARGUMENT_BYTES = 128 * 1024;

export type SpawnError = NonNullable<JobExit["spawnError"]>;

/**
 * Why a command could not be started, in words that name the real cause.
 * spawn reports only errno: EACCES for a directory, ENOENT for a script whose
 * `#!` interpreter is missing. These look at the file to tell them apart:
 * code `EISDIR` for a directory, `ENOINTERP` (with `interpreter`) for a
 * missing interpreter, `E2BIG` with the command line's size.
 */
export function describeSpawnError(error: NodeJS.ErrnoException, file: string, args: readonly string[]): SpawnError {
  const code = error.code ?? "EUNKNOWN";
  if (file === "") return { code: "EEMPTY", message: "the command name is empty" };
  if (code === "ERR_INVALID_ARG_TYPE" || code === "ERR_INVALID_ARG_VALUE") {
    if ([file, ...args].some((word) => word.includes("\0"))) return { code: "ENUL", message: "the command line holds a NUL byte, which no command line can carry" };
  }
  if (code === "E2BIG") {
    const bytes = [file, ...args].reduce((sum, word) => sum + Buffer.byteLength(word) + 1, 0);
    const longest = Math.max(...[file, ...args].map((word) => Buffer.byteLength(word)));
    // Linux also limits each argument to 128 KiB (MAX_ARG_STRLEN), however short the whole line.
    if (longest >= MAX_ARGUMENT_BYTES) {
      return { code, message: `one of its arguments is ${longest} bytes long, more than the system allows for one (${MAX_ARGUMENT_BYTES})` };
    }
    return { code, message: `the command line is ${bytes} bytes long, more than the system allows` };
  }
  if (code === "EACCES" && isDirectory(findCommand(file))) return { code: "EISDIR", message: "is a directory, not a command" };
  if (code === "ENOENT") {
    const path = findCommand(file);
    const interpreter = path === undefined ? undefined : readInterpreter(path);
    if (interpreter !== undefined) {
      return { code: "ENOINTERP", message: `its interpreter "${interpreter}" (from its #! line) is not found`, interpreter };
    }
  }
  return { code, message: error.message };
}

/** Where the system finds `file`: the name itself when it holds a slash, else the first match on PATH. */
function findCommand(file: string): string | undefined {
  if (file.includes("/")) return file;
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const path = join(dir || ".", file);
    try {
      statSync(path);
      return path;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

function isDirectory(path: string | undefined): boolean {
  try {
    return path !== undefined && statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The interpreter a script names on its `#!` line, if it starts with one. */
function readInterpreter(path: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const head = Buffer.alloc(256);
    const length = readSync(fd, head, 0, head.length, 0);
    const firstLine = head.subarray(0, length).toString("latin1").split("\n")[0]!;
    if (!firstLine.startsWith("#!")) return undefined;
    return firstLine.slice(2).trim().split(/[ \t]/)[0] || undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
