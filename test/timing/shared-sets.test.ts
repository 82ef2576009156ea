import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

const WINDOW_N = 10;

/** Launch times (seconds) from a run's --joblog. */
function launches(path: string): number[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { start: number }).start);
}

/** The most launches in any interval of `windowS` seconds (half open, as the window counts them). */
function mostInAnyWindow(times: number[], windowS: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowS) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe("three runs on one shared set", () => {
  let dir: string;
  let redis: RedisServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tbucket-shared-sets-"));
    process.env.XDG_STATE_HOME = join(dir, "state");
    process.env.TBUCKET_STORE = "";
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ["one SQLite file", () => `sqlite:${join(dir, "buckets.db")}`],
    ["one Redis key", () => redis.url],
  ])("--rate 20/s --window 10/1s on %s: never more than 10 in any second together, plus one lease each", async (_where, storeOf) => {
    const store = storeOf();
    const set = await runCli(["key", "set", "runs", "--store", store, "--rate", "20/s", "--window", `${WINDOW_N}/1s`]);
    expect(set.code).toBe(0);
    const logs = [0, 1, 2].map((i) => join(dir, `run-${i}.jsonl`));
    const results = await Promise.all(
      logs.map((log) => runCli(["run", "--key", "runs", "--store", store, "--duration", "4s", "--joblog", log, "--", "true"], { timeoutMs: 20_000 })),
    );
    for (const result of results) expect([result.code, result.stderr]).toEqual([0, ""]);
    const perRun = logs.map(launches);
    const all = perRun.flat();
    const detail = `per run ${perRun.map((log) => log.length).join(", ")}`;
    // A lease at 20/s is one launch: each process may hold one taken ahead of its start time in the log.
    expect(mostInAnyWindow(all, 1), detail).toBeLessThanOrEqual(WINDOW_N + 3);
    // The window is the binding limit: about 10 a second together over 4 s, each process its share.
    expect(all.length, detail).toBeGreaterThanOrEqual(4 * WINDOW_N - 5);
    expect(all.length, detail).toBeLessThanOrEqual(5 * WINDOW_N + 3);
    for (const log of perRun) expect(log.length, detail).toBeGreaterThanOrEqual(5);
  }, 30_000);
});
