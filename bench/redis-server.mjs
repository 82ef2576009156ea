// A redis-server of the benchmark's own on a free loopback port, nothing saved; undefined when not installed.
import { spawn, spawnSync } from "node:child_process";
import { createConnection } from "node:net";
import { freePort } from "./free-port.mjs";

/** Starts redis-server (its files in `dir`, when given); resolves to its url and a stop, or undefined without redis-server on PATH. */
export async function startRedis(dir) {
  if (spawnSync("redis-server", ["--version"]).status !== 0) return undefined;
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", ...(dir ? ["--dir", dir] : [])], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    const up = await new Promise((resolve) => {
      const socket = createConnection({ port, host: "127.0.0.1" });
      socket.once("connect", () => (socket.destroy(), resolve(true)));
      socket.once("error", () => resolve(false));
    });
    if (up) return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill("SIGTERM") };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  child.kill("SIGKILL");
  return undefined;
}
