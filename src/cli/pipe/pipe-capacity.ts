import { fstatSync } from "node:fs";
import type { NativeIo } from "../../stream/native-io.js";
import { STDIN_NAME } from "../../stream/read-sources.js";
import { writeStandardError } from "../standard-streams.js";
import { loadNativeIo } from "./native-part.js";
import type { PipeConfig } from "./options.js";

// How big the pipes on tbucket's standard input and output are is a policy of
// the process (which descriptors, how big, from which rate), applied before the
// copy starts; the library's streams never resize what they are given.

/**
 * The byte rate from which a larger pipe pays off by default: pipes of 64 KiB
 * cost a wake-up of both sides every 64 KiB, which matters at 100 MiB/s and
 * not at 10 (docs/benchmarks.md, "Pipe sizes"). Below it, pipes are left as
 * they are, charging nothing to the user's pipe quota.
 */
const LARGE_PIPE_FROM_RATE = 50 * 1024 * 1024;
/** The capacity asked for by default above that rate: /proc/sys/fs/pipe-max-size's default. */
const LARGE_PIPE_BYTES = 1024 * 1024;

const NATIVE_HINT = "TBUCKET_NATIVE=0, not Linux, or not built at install; npm rebuild tbucket builds it";

/**
 * Sets the capacity of the pipes on standard input (when read) and output: as
 * --pipe-size says, or by default 1 MiB from LARGE_PIPE_FROM_RATE on. A size
 * asked for that cannot be had is said on standard error; the default is an
 * optimisation, and a refusal of it goes unsaid.
 */
export function sizePipes(config: PipeConfig, rate: number): void {
  const asked = config.pipeSizeBytes;
  const bytes = asked ?? (config.kind === "bytes" && rate >= LARGE_PIPE_FROM_RATE ? LARGE_PIPE_BYTES : undefined);
  if (bytes === undefined) return;
  const fds = config.files.includes(STDIN_NAME) ? [0, 1] : [1];
  for (const sizing of setPipeCapacity(fds, bytes, loadNativeIo)) {
    if (asked === undefined) continue;
    const stream = sizing.fd === 0 ? "standard input" : "standard output";
    if (sizing.outcome === "refused") {
      writeStandardError(`tbucket: --pipe-size: ${stream} keeps its size: ${describePipeRefusal(sizing.errno)}; ask for less\n`);
    } else if (sizing.outcome === "unavailable") {
      writeStandardError(`tbucket: --pipe-size: pipes keep their size: tbucket's native part is missing here (${NATIVE_HINT})\n`);
      return;
    }
  }
}

/** What became of a request for a pipe's capacity. */
type PipeSizing =
  | { fd: number; outcome: "set"; bytes: number }
  /** Not a pipe, or already that large. */
  | { fd: number; outcome: "unchanged" }
  | { fd: number; outcome: "refused"; errno: number }
  /** No native part here (another system, not built, or TBUCKET_NATIVE=0). */
  | { fd: number; outcome: "unavailable" };

const EPERM = 1;

/**
 * Asks Linux for pipes of at least `bytes` on the descriptors that are pipes,
 * with fcntl(F_SETPIPE_SZ) through tbucket's native part; nothing else is
 * started. A pipe is never shrunk. The kernel refuses more than
 * /proc/sys/fs/pipe-max-size (1 MiB by default) to an unprivileged process,
 * and anything above 64 KiB once the user's pipes hold pipe-user-pages-soft.
 * `loadIo` finds the native part (the CLI's build may carry its own).
 */
function setPipeCapacity(fds: readonly number[], bytes: number, loadIo: () => NativeIo | undefined): PipeSizing[] {
  const pipes = fds.filter(isFifo);
  // Loaded only for a pipe: the standalone executable writes it to disk first.
  const io = pipes.length > 0 ? loadIo() : undefined;
  return fds.map((fd): PipeSizing => {
    if (!pipes.includes(fd)) return { fd, outcome: "unchanged" };
    if (!io) return { fd, outcome: "unavailable" };
    const current = io.pipeSize(fd);
    if (current < 0 || current >= bytes) return { fd, outcome: "unchanged" };
    const granted = io.setPipeSize(fd, bytes);
    return granted < 0 ? { fd, outcome: "refused", errno: -granted } : { fd, outcome: "set", bytes: granted };
  });
}

/** Why the kernel refused, in words. */
function describePipeRefusal(errno: number): string {
  if (errno === EPERM) return "more than /proc/sys/fs/pipe-max-size, or over this user's pipe quota";
  return `error ${errno}`;
}

function isFifo(fd: number): boolean {
  try {
    return fstatSync(fd).isFIFO();
  } catch {
    return false;
  }
}
