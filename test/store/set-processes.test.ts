import { spawn } from "node:child_process";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import type { LimitSetStore } from "../../src/store/limit-set-store.js";
import { RedisSetStore } from "../../src/store/redis-set-store.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { fixture } from "../helpers/cli.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

/** 40 a second (burst 5), 10 in any 500 ms, 2 at once: each limit binds in turn. */
const SET: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 40, burst: 5 },
  { kind: "window", unit: "count", n: 10, windowMs: 500 },
  { kind: "concurrency", n: 2 },
];

interface Admitted {
  atMs: number;
  heldFromMs: number;
  heldToMs: number;
}

/** Three processes taking from one key for `forMs`, through the built store (npm test builds first). */
async function threeProcesses(url: string, key: string, forMs: number): Promise<Admitted[]> {
  const runs = Array.from({ length: 3 }, () => {
    const child = spawn(process.execPath, [fixture("set-taker.mjs"), url, key, String(forMs)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise<Admitted[]>((resolve, reject) =>
      child.once("exit", (code) => (code === 0 ? resolve(stdout.trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as Admitted)) : reject(new Error(stderr)))),
    );
  });
  return (await Promise.all(runs)).flat();
}

/** Every limit of SET held over what all three admitted, by brute force; the window full at some time (it bound). */
function expectEveryLimitHeld(admitted: Admitted[]): void {
  const times = admitted.map((item) => item.atMs).sort((a, b) => a - b);
  expect(Math.max(...times.map((atMs) => times.filter((other) => other > atMs - 500 && other <= atMs).length))).toBe(10);
  for (const [index, atMs] of times.entries()) {
    // The bucket: at most b + r·T in any T, for every T from one admission to a later one.
    for (let later = index; later < times.length; later++) expect(later - index + 1).toBeLessThanOrEqual(5 + 40 * ((times[later]! - atMs) / 1000) + 1e-9);
    // The window: at most 10 in (t - 500, t].
    expect(times.filter((other) => other > atMs - 500 && other <= atMs).length).toBeLessThanOrEqual(10);
  }
  // Concurrency: at most 2 held at any instant a hold began.
  for (const item of admitted) {
    expect(admitted.filter((other) => other.heldFromMs <= item.heldFromMs && other.heldToMs > item.heldFromMs).length).toBeLessThanOrEqual(2);
  }
}

const tempDir = tempDirs("set-processes");

describe("three processes on one key's set hold every limit together", () => {
  let stopRedis: (() => Promise<void>) | undefined;
  afterAll(async () => {
    await stopRedis?.();
  });

  it("on one SQLite file", async () => {
    const path = join(tempDir(), "buckets.db");
    const store = await SqliteStore.open(path);
    await store.configureSet("api", SET);
    const admitted = await threeProcesses(`sqlite:${path}`, "api", 1500);
    await store.close();
    expect(admitted.length).toBeGreaterThan(15);
    expectEveryLimitHeld(admitted);
  });

  it("on one Redis key", async () => {
    const server = await startRedisServer();
    stopRedis = () => server.stop();
    const client = new Redis(server.url);
    const sets: LimitSetStore = new RedisSetStore(client, { url: server.url });
    await sets.configureSet("api", SET);
    const admitted = await threeProcesses(server.url, "api", 1500);
    await client.quit();
    expect(admitted.length).toBeGreaterThan(15);
    expectEveryLimitHeld(admitted);
  });
});
