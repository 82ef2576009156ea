import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { TBUCKET } from "../helpers/cli.js";

/** A fixture program's path (test/fixtures). */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

export interface RunningCli {
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves when standard output holds `text` `times` times. */
  waitForOutput(text: string, times?: number, timeoutMs?: number): Promise<void>;
  signal(name: NodeJS.Signals): void;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once the process has ended. */
  done(): boolean;
}

/** Starts the built tbucket and keeps hold of it, to signal it while it runs. */
export function startCli(args: readonly string[], options: { input?: string; cwd?: string } = {}): RunningCli {
  const child = spawn(process.execPath, [TBUCKET, ...args], { env: { ...process.env, NO_COLOR: "1" }, cwd: options.cwd });
  let out = "";
  let err = "";
  let ended = false;
  const listeners = new Set<() => void>();
  child.stdout.on("data", (chunk: Buffer) => {
    out += chunk.toString();
    for (const listener of listeners) listener();
  });
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  child.stdin.on("error", () => {});
  child.stdin.end(options.input ?? "");
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      ended = true;
      clearTimeout(killer);
      resolve({ code, signal });
    }),
  );
  const count = (text: string) => out.split(text).length - 1;
  return {
    pid: child.pid!,
    stdout: () => out,
    stderr: () => err,
    signal: (name) => void child.kill(name),
    exited,
    done: () => ended,
    waitForOutput(text, times = 1, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (count(text) >= times) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`no ${times} x ${JSON.stringify(text)} on stdout after ${timeoutMs} ms; stdout: ${out}; stderr: ${err}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
