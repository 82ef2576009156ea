import { fileURLToPath } from "node:url";

/**
 * tbucket's native part (native/tbucket_io.c, built by node-gyp at install):
 * the system calls Node.js has no binding for. Failures come back as a
 * negative errno, never as exceptions.
 */
export interface NativeIo {
  /** The capacity of the pipe on `fd`, or -errno (-EBADF: not a pipe). */
  pipeSize(fd: number): number;
  /** Asks for a pipe capacity of at least `bytes`: the capacity granted, or -errno. */
  setPipeSize(fd: number, bytes: number): number;
  /**
   * Moves `bytes` from `fdIn` to `fdOut` in the kernel with splice(2), in the
   * thread pool, or fewer if the input ends first (`eof`); one side must be a pipe.
   * `progress[0]` holds what has moved so far while it runs.
   */
  splice(fdIn: number, fdOut: number, bytes: number, progress: Float64Array, done: (negativeErrno: number, moved: number, eof: boolean) => void): void;
  /**
   * Moves up to `bytes` on this thread without waiting (SPLICE_F_NONBLOCK):
   * [moved, -errno (-EAGAIN: a pipe was empty or full), eof].
   */
  spliceNow(fdIn: number, fdOut: number, bytes: number): [moved: number, negativeErrno: number, eof: boolean];
  /**
   * What a read of `fd` would find now (FIONREAD: a pipe's content, a file's
   * rest): 0 when nothing yet, -ENODATA (-61) at the end of the input, or -errno.
   */
  bytesReadable(fd: number): number;
}

/** Where node-gyp puts the addon, from the bundle in dist/ and from the modules in dist/stream or src/stream. */
const BUILT_PATHS = ["../build/Release/tbucket_io.node", "../../build/Release/tbucket_io.node"];

let loaded: NativeIo | null | undefined;

/**
 * The native part, or undefined where it is missing or not for this system.
 * `embeddedPath` gives a copy a build carries (the standalone executable's), tried first; it may throw.
 */
export function nativeIo(embeddedPath?: () => string): NativeIo | undefined {
  if (loaded === undefined) loaded = load(embeddedPath) ?? null;
  return loaded ?? undefined;
}

function load(embeddedPath: (() => string) | undefined): NativeIo | undefined {
  if (process.platform !== "linux") return undefined;
  for (const path of [embedded(embeddedPath), ...builtPaths()]) {
    if (path === undefined) continue;
    try {
      const module = { exports: {} as NativeIo };
      process.dlopen(module, path);
      return module.exports;
    } catch {
      // Not there (not built, or another layout): try the next, then do without.
    }
  }
  return undefined;
}

function embedded(embeddedPath: (() => string) | undefined): string | undefined {
  try {
    return embeddedPath?.();
  } catch {
    // The standalone executable could not write its copy (TMPDIR not writable): do without.
    return undefined;
  }
}

function builtPaths(): string[] {
  try {
    return BUILT_PATHS.map((path) => fileURLToPath(new URL(path, import.meta.url)));
  } catch {
    return [];
  }
}
