import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free-port.js";

/** A redis-server of the test's own, on a free loopback port, with nothing saved to disk. */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops the server (SIGTERM, or `signal`) and waits for it to exit; a stopped server may be started again. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port, with the same arguments and nothing in it (a restart without saving). */
  start(): Promise<void>;
}

/** The one line a test prints when the server binary is not installed: it must fail, never skip. */
export const REDIS_MISSING =
  "redis-server is not installed: install the Debian package redis-server (sudo apt-get install redis-server), or run: bash scripts/ensure-system-packages.sh";

/**
 * Starts redis-server, with `extraArgs` (`--requirepass x`), on a port from
 * `pickPort` (a free one by default); throws REDIS_MISSING when the binary is absent.
 */
export async function startRedisServer(extraArgs: readonly string[] = [], pickPort: () => Promise<number> = freePort): Promise<RedisServer> {
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) throw new Error(REDIS_MISSING);
  for (let attempt = 0; ; attempt++) {
    const port = await pickPort();
    try {
      let running = await launch(port, extraArgs);
      return {
        url: running.url,
        port,
        stop: (signal) => running.stop(signal),
        start: async () => {
          await running.stop();
          running = await launch(port, extraArgs);
        },
      };
    } catch (error) {
      // Another process may have taken the port between probing and binding.
      if (attempt >= 3) throw error;
    }
  }
}

async function launch(port: number, extraArgs: readonly string[]): Promise<{ url: string; stop(signal?: NodeJS.Signals): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "tbucket-redis-"));
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--loglevel", "warning", ...extraArgs],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start on port ${port}: ${output.trim().split("\n").pop() ?? ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { url: `redis://127.0.0.1:${port}`, stop };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

