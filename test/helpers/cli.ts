import { spawn, type SpawnOptions } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built command, run as a user runs it (npm test builds first). */
export const TBUCKET = fileURLToPath(new URL("../../bin/tbucket", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: string;
}

export interface RunCliOptions {
  input?: Buffer | string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

/** Runs `tbucket args...` to completion with `input` on standard input. */
export function runCli(args: readonly string[], options: RunCliOptions = {}): Promise<CliResult> {
  return runToEnd(process.execPath, [TBUCKET, ...args], options);
}

/** Runs a bash script to completion, for pipelines and the shell's view of a status (`$?`). */
export function runShell(script: string, options: RunCliOptions = {}): Promise<CliResult> {
  return runToEnd("bash", ["-c", script], options);
}

function runToEnd(command: string, args: readonly string[], options: RunCliOptions): Promise<CliResult> {
  const spawnOptions: SpawnOptions = { env: { ...process.env, NO_COLOR: "1", ...options.env }, cwd: options.cwd };
  const child = spawn(command, args, spawnOptions);
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  child.stdout!.on("data", (chunk: Buffer) => stdout.push(chunk));
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(chunk));
  child.stdin!.on("error", () => {});
  child.stdin!.end(options.input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString("utf8") });
    });
  });
}
