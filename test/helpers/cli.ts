import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The built command, run as a user runs it (npm test builds first). */
export const TBUCKET = fileURLToPath(new URL("../../bin/tbucket", import.meta.url));

/** A fixture program's path (test/fixtures). */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
  /** From the start to the end of the process, in real milliseconds. */
  elapsedMs: number;
}

export interface StartOptions {
  /** Written to standard input first. */
  input?: Buffer | string;
  /**
   * Then standard input is closed ("close", the default), left open for the
   * test (`child.stdin`), fed endlessly a MiB at a time as fast as it is read
   * ("endless"), or it is a file opened for reading instead of a pipe.
   */
  stdin?: "close" | "open" | "endless" | { file: string };
  /** Added to this process's environment, with NO_COLOR=1. */
  env?: NodeJS.ProcessEnv;
  /** The environment is `env` alone, as `env -i` gives it (a standalone executable). */
  bareEnv?: boolean;
  cwd?: string;
  /** Killed with SIGKILL after this long (default 30 s): a test never hangs on a stuck process. */
  timeoutMs?: number;
}

/** A process started by `start`, for a test that acts while it runs (signals, live key changes). */
export interface Running {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Standard output and error so far, as text. */
  stdout(): string;
  stderr(): string;
  /** Each chunk of standard output, and when it came (performance.now()). */
  readonly received: ReadonlyArray<{ atMs: number; bytes: number }>;
  /** Bytes of standard output that came in [fromMs, toMs). */
  bytesBetween(fromMs: number, toMs: number): number;
  /** Resolves when standard output holds `text` `times` times; rejects after `timeoutMs`, naming what came. */
  waitForOutput(text: string, times?: number, timeoutMs?: number): Promise<void>;
  /** Resolves once standard output holds at least `bytes` bytes; rejects if the process ends first. */
  waitForBytes(bytes: number, timeoutMs?: number): Promise<void>;
  signal(name: NodeJS.Signals): void;
  /** True once the process has ended. */
  done(): boolean;
  /** The whole run once the process has ended and its streams are closed. */
  readonly exited: Promise<CliResult>;
}

/** Starts a process and collects what it writes; the one way tests run a program. */
export function start(command: string, args: readonly string[], options: StartOptions = {}): Running {
  const stdinMode = options.stdin ?? "close";
  const stdinFd = typeof stdinMode === "object" ? openSync(stdinMode.file, "r") : undefined;
  const env = options.bareEnv ? options.env : { ...process.env, NO_COLOR: "1", ...options.env };
  const startedMs = performance.now();
  const child = spawn(command, args, { env, cwd: options.cwd, stdio: [stdinFd ?? "pipe", "pipe", "pipe"] });
  if (stdinFd !== undefined) closeSync(stdinFd);

  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const received: Array<{ atMs: number; bytes: number }> = [];
  let receivedBytes = 0;
  let ended = false;
  const listeners = new Set<() => void>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout.push(chunk);
    received.push({ atMs: performance.now(), bytes: chunk.length });
    receivedBytes += chunk.length;
    notify();
  });
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));

  if (child.stdin) {
    child.stdin.on("error", () => {});
    if (options.input !== undefined) child.stdin.write(options.input);
    if (stdinMode === "close") child.stdin.end();
    if (stdinMode === "endless") {
      const block = Buffer.alloc(1024 * 1024, 0x61);
      const feed = () => {
        while (child.stdin!.writable && child.stdin!.write(block));
      };
      child.stdin.on("drain", feed);
      feed();
    }
  }

  const killer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  const exited = new Promise<CliResult>((resolve, reject) => {
    child.on("error", (error) => {
      clearTimeout(killer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      ended = true;
      clearTimeout(killer);
      notify();
      resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString("utf8"), elapsedMs: performance.now() - startedMs });
    });
  });

  const text = () => Buffer.concat(stdout).toString("utf8");
  const errText = () => Buffer.concat(stderr).toString("utf8");
  /** Resolves when `ready()` holds; rejects after `timeoutMs`, or when the process ends first if `failOnEnd`. */
  const until = (ready: () => boolean, what: string, timeoutMs: number, failOnEnd: boolean) =>
    new Promise<void>((resolve, reject) => {
      const finish = (error?: Error) => {
        listeners.delete(check);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const check = () => {
        if (ready()) finish();
        else if (failOnEnd && ended) finish(new Error(`${command} ended before ${what}; stderr: ${errText()}`));
      };
      const timer = setTimeout(() => finish(new Error(`no ${what} after ${timeoutMs} ms; stdout: ${text()}; stderr: ${errText()}`)), timeoutMs);
      listeners.add(check);
      check();
    });

  return {
    child,
    pid: child.pid!,
    stdout: text,
    stderr: errText,
    received,
    bytesBetween: (fromMs, toMs) => received.filter((r) => r.atMs >= fromMs && r.atMs < toMs).reduce((sum, r) => sum + r.bytes, 0),
    waitForOutput: (wanted, times = 1, timeoutMs = 10_000) =>
      until(() => text().split(wanted).length - 1 >= times, `${times} x ${JSON.stringify(wanted)} on stdout`, timeoutMs, false),
    waitForBytes: (bytes, timeoutMs = 10_000) => until(() => receivedBytes >= bytes, `${bytes} bytes on stdout`, timeoutMs, true),
    signal: (name) => void child.kill(name),
    done: () => ended,
    exited,
  };
}

/** Starts the built tbucket and keeps hold of it, to signal it or change its key while it runs. */
export function startCli(args: readonly string[], options: StartOptions = {}): Running {
  return start(process.execPath, [TBUCKET, ...args], options);
}

/** Runs `tbucket args...` to completion with `input` on standard input. */
export function runCli(args: readonly string[], options: StartOptions = {}): Promise<CliResult> {
  return startCli(args, options).exited;
}

/** Runs a bash script to completion, for pipelines and the shell's view of a status (`$?`). */
export function runShell(script: string, options: StartOptions = {}): Promise<CliResult> {
  return start("bash", ["-c", script], options).exited;
}
