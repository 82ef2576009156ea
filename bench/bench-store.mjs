// A store of a benchmark's own, SQLite or Redis, in a folder removed afterwards; and tbucket run in it.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRedis } from "./redis-server.mjs";

export const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));

/** A fresh store of `kind` ("sqlite" or "redis"): its url, its folder (for the benchmark's files), and a close that removes both. */
export async function openBenchStore(kind) {
  const dir = mkdtempSync(join(tmpdir(), "tbucket-bench-"));
  if (kind !== "redis") return { url: `sqlite:${join(dir, "k.db")}`, dir, close: () => rmSync(dir, { recursive: true, force: true }) };
  const redis = await startRedis(dir);
  if (!redis) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error("redis-server is not installed (Debian: apt-get install redis-server)");
  }
  return {
    url: redis.url,
    dir,
    close: () => {
      redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs tbucket with `args` to its end; rejects on a status other than 0. */
export function tbucket(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(TBUCKET, args, { stdio: ["ignore", "ignore", "inherit"] });
    child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`tbucket ${args.join(" ")}: exit ${code}`))));
  });
}
