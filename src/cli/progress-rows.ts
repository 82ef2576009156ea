import { appendFileSync, closeSync, fstatSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs";
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
 * cursor back, in one write. The last to leave removes the file, and a joiner
 * removes one whose processes are all gone; each decides and acts holding a
 * lock file beside it, else a process appending between another's "nobody is
 * left" and its unlink lost its entry and drew on someone else's row.
 *
 * Holding the lock (so that rows are made in the order they are recorded),
 * a joiner first appends `+pid`, then makes its row, then appends its pid:
 * between the two the rows on the terminal are not yet known from the file,
 * so a line is not drawn then (the next tick draws it), and a last line waits
 * for the joiner (at most JOIN_WAIT_MS, then counts its row). Drawn in that moment, a process's
 * last line landed on the joiner's row, and its own row stayed empty.
 */
export function joinProgressRows(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): ProgressRow | undefined {
  let path: string;
  try {
    const terminal = fstatSync((stream as { fd?: number }).fd ?? 2).rdev;
    path = join(env.XDG_RUNTIME_DIR || tmpdir(), `tbucket-progress-${userInfo().uid}-${terminal}`);
    withLock(path, () => {
      if (!entries(path).some((entry) => entry.live)) removeQuietly(path);
      // Writable, before a line is made for it.
      appendFileSync(path, `+${process.pid}\n`, { mode: 0o600 });
      stream.write("\n");
      appendFileSync(path, `${process.pid}\n`, { mode: 0o600 });
    });
  } catch {
    // No place for the file: the line is drawn as if unnamed.
    return undefined;
  }
  const own = String(process.pid);
  let lastRowsUp = 1;
  /** With `assumeMade`, a process still joining counts as having made its row (it writes it first thing). */
  const rowsUp = (assumeMade = false): number | undefined => {
    const all = entries(path);
    if (!assumeMade && all.some((entry) => entry.joining)) return undefined;
    const index = all.findIndex((entry) => entry.pid === own);
    // Not found: the file gone (removed by hand); keep the row last seen.
    if (index !== -1) lastRowsUp = all.length - index;
    return lastRowsUp;
  };
  return {
    rowsUp: () => rowsUp(),
    finalRowsUp() {
      const deadline = Date.now() + JOIN_WAIT_MS;
      for (;;) {
        const up = rowsUp();
        if (up !== undefined) return up;
        if (Date.now() >= deadline) return rowsUp(true)!;
        Atomics.wait(SLEEPER, 0, 0, 5);
      }
    },
    leave() {
      try {
        withLock(path, () => {
          appendFileSync(path, `-${process.pid}\n`);
          if (!entries(path).some((entry) => entry.live)) removeQuietly(path);
        });
      } catch {
        // Nothing to tidy.
      }
    },
  };
}

/** How long a last line waits for a process making its row: joining takes a few writes. */
const JOIN_WAIT_MS = 1000;
/** A lock is held for a few file operations; one older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 1000;
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));

interface Entry {
  pid: string;
  /** Joined, not left, and its process still running. */
  live: boolean;
  /** Still making its row (`+pid` without `pid`), and running. */
  joining: boolean;
}

/** The processes that joined, in order, and those still joining (at the end). */
function entries(path: string): Entry[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const lines = text.split("\n").filter((line) => line !== "");
  const left = new Set(lines.filter((line) => line.startsWith("-")).map((line) => line.slice(1)));
  const joined = lines.filter((line) => /^\d/.test(line));
  const joinedSet = new Set(joined);
  const joining = lines.filter((line) => line.startsWith("+") && !joinedSet.has(line.slice(1))).map((line) => line.slice(1));
  return [
    ...joined.map((pid) => ({ pid, live: !left.has(pid) && running(Number(pid)), joining: false })),
    ...joining.filter((pid) => running(Number(pid))).map((pid) => ({ pid, live: true, joining: true })),
  ];
}

/**
 * Runs `work` holding `path`.lock (made with O_EXCL, holding the holder's pid). A lock whose holder
 * is gone, or older than STALE_LOCK_MS, is taken over; past that long the work runs anyway, as
 * a row drawn in the wrong place is better than a pipeline that waits for its progress lines.
 */
function withLock(path: string, work: () => void): void {
  const lock = `${path}.lock`;
  const deadline = Date.now() + STALE_LOCK_MS;
  let held = false;
  while (!held && Date.now() < deadline) {
    try {
      const fd = openSync(lock, "wx", 0o600);
      held = true;
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") break;
      if (staleLock(lock)) removeQuietly(lock);
      else Atomics.wait(SLEEPER, 0, 0, 1);
    }
  }
  try {
    work();
  } finally {
    if (held) removeQuietly(lock);
  }
}

function staleLock(lock: string): boolean {
  try {
    const holder = Number(readFileSync(lock, "utf8"));
    // An empty file: its holder is between making it and writing its pid.
    if (holder > 0 && !running(holder)) return true;
    return Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS;
  } catch {
    return false;
  }
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
