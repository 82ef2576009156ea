import { fstatSync } from "node:fs";
import { type NativeIo, nativeIo } from "./native-io.js";

/** What a Linux pipe holds unless asked otherwise. */
export const DEFAULT_PIPE_BYTES = 64 * 1024;

/** What became of a request for a pipe's capacity. */
export type PipeSizing =
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
export function setPipeCapacity(fds: readonly number[], bytes: number, loadIo: () => NativeIo | undefined = nativeIo): PipeSizing[] {
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
export function describePipeRefusal(errno: number): string {
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
