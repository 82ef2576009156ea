import { appendFileSync, fstatSync, readFileSync, unlinkSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import type { ProgressRow } from "./progress-line.js";

/**
 * Rows for the named progress lines of one shell pipeline on one terminal
 * (`tbucket -N in < f | gzip | tbucket -N out > f.gz`), the problem pv -c
 * solves. Each named one on a terminal makes room for its line with a
 * newline, then appends its pid to a small file named after the terminal,
 * as pv -c keys its shared memory on it (not the process group: `timeout`
 * and job control give a pipeline's members groups of their own), in
 * XDG_RUNTIME_DIR or the temporary folder; its row is its place in that file. It draws its line that
 * many rows up from the cursor (the line under the block) and puts the
 * cursor back, in one write. The last to leave removes the file.
 *
 * The newline comes before the pid: a line drawn meanwhile by another process
 * lands one row low, inside the block, never on the shell's line above it.
 */
export function joinProgressRows(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): ProgressRow | undefined {
  let path: string;
  try {
    const terminal = fstatSync((stream as { fd?: number }).fd ?? 2).rdev;
    path = join(env.XDG_RUNTIME_DIR || tmpdir(), `tbucket-progress-${userInfo().uid}-${terminal}`);
    if (!entries(path).some((entry) => entry.live)) removeQuietly(path);
    // Writable, before a line is made for it.
    appendFileSync(path, "", { mode: 0o600 });
    stream.write("\n");
    appendFileSync(path, `${process.pid}\n`, { mode: 0o600 });
  } catch {
    // No place for the file: the line is drawn as if unnamed.
    return undefined;
  }
  const own = String(process.pid);
  let lastRowsUp = 1;
  return {
    rowsUp() {
      try {
        const joined = entries(path).map((entry) => entry.pid);
        const index = joined.indexOf(own);
        if (index !== -1) lastRowsUp = joined.length - index;
      } catch {
        // The file gone (removed by hand): keep the row last seen.
      }
      return lastRowsUp;
    },
    leave() {
      try {
        appendFileSync(path, `-${process.pid}\n`);
        if (!entries(path).some((entry) => entry.live)) removeQuietly(path);
      } catch {
        // Nothing to tidy.
      }
    },
  };
}

interface Entry {
  pid: string;
  /** Joined, not left, and its process still running. */
  live: boolean;
}

/** The processes that joined, in order. */
function entries(path: string): Entry[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const lines = text.split("\n").filter((line) => line !== "");
  const left = new Set(lines.filter((line) => line.startsWith("-")).map((line) => line.slice(1)));
  return lines.filter((line) => !line.startsWith("-")).map((pid) => ({ pid, live: !left.has(pid) && running(Number(pid)) }));
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}
