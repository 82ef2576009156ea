import { spawn } from "node:child_process";

/** Linux's fcntl(2) command that sets a pipe's capacity. */
const F_SETPIPE_SZ = 1031;
/** The most an unprivileged process may ask for by default (/proc/sys/fs/pipe-max-size). */
const LARGE_PIPE_BYTES = 1024 * 1024;

/**
 * Asks Linux to let the pipes on standard input and output hold `bytes`
 * instead of 64 KiB. A fast stream through 64 KiB pipes costs a wake-up of
 * both sides for every 64 KiB; through 1 MiB pipes, one a slice. At 100 MiB/s
 * that is most of the context switches and about a third of the CPU here.
 *
 * Node.js has no fcntl(2), so perl (part of every Debian system) makes the
 * call on the descriptors it inherits, in the background. Where perl is
 * missing, a descriptor is not a pipe, or the kernel refuses (a user over
 * its pipe quota), the pipes keep their size and nothing else changes.
 */
export function enlargePipes({ input, output }: { input: boolean; output: boolean }, bytes = LARGE_PIPE_BYTES): void {
  if (process.platform !== "linux" || (!input && !output)) return;
  const script = `fcntl(STDIN, ${F_SETPIPE_SZ}, ${bytes}) if -p STDIN; fcntl(STDOUT, ${F_SETPIPE_SZ}, ${bytes}) if -p STDOUT;`;
  try {
    const child = spawn("perl", ["-e", script], { stdio: [input ? 0 : "ignore", output ? 1 : "ignore", "ignore"] });
    child.on("error", () => {});
  } catch {
    // Some systems refuse to start processes at all: the pipes stay as they are.
  }
}
