import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

const RATE = 20;
const BURST = 1;

/** Launch times (seconds) from each run's --joblog. */
function launches(path: string): number[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { start: number }).start);
}

/** The most launches in any window of `windowS` seconds. */
function maxInWindow(times: number[], windowS: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! > windowS) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

/**
 * 4 runs on one key at 20/s start at most burst + rate·T launches in
 * any window T, all of them together (plus one launch of joblog timing
 * slack per run), and each gets a fair share.
 */
async function expectSharedLaunches(store: string, dir: string): Promise<void> {
  const key = `runs-${Math.random().toString(36).slice(2)}`;
  // Set the key once, so that the four runs share it from their first launch.
  expect((await runCli(["key", "set", key, "--store", store, "--rate", `${RATE}/s`, "--burst", String(BURST)])).code).toBe(0);
  const logs = [0, 1, 2, 3].map((i) => join(dir, `${key}-${i}.jsonl`));
  const results = await Promise.all(
    logs.map((log) => runCli(["run", "--key", key, "--store", store, "--duration", "4s", "--joblog", log, "--", "true"], { timeoutMs: 20_000 })),
  );
  for (const result of results) expect([result.code, result.stderr]).toEqual([0, ""]);
  const perRun = logs.map(launches);
  const all = perRun.flat();
  const first = Math.min(...all);
  const last = Math.max(...all);
  const detail = `per run ${perRun.map((l) => l.length).join(", ")} over ${(last - first).toFixed(2)} s`;
  for (const windowS of [0.5, 1, 2]) {
    expect(maxInWindow(all, windowS), `${detail}; window ${windowS} s`).toBeLessThanOrEqual(BURST + RATE * windowS + 4);
  }
  expect(all.length, detail).toBeLessThanOrEqual(BURST + RATE * (last - first) + 4);
  // While all four run, together they launch at the full rate; each gets a fair share.
  const overlapFrom = Math.max(...perRun.map((l) => Math.min(...l)));
  const overlapTo = Math.min(...perRun.map((l) => Math.max(...l)));
  const overlapS = overlapTo - overlapFrom;
  expect(overlapS, detail).toBeGreaterThan(1);
  const inOverlap = perRun.map((l) => l.filter((t) => t >= overlapFrom && t <= overlapTo).length);
  const total = inOverlap.reduce((a, b) => a + b, 0);
  expect(total, detail).toBeGreaterThanOrEqual(0.9 * RATE * overlapS);
  for (const count of inOverlap) expect(count / total, `${detail}; in overlap ${inOverlap.join(", ")}`).toBeGreaterThanOrEqual(0.15);
}

describe("runs sharing a key", () => {
  let dir: string;
  let server: RedisServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tbucket-shared-runs-"));
    // Whatever a command falls back to, it is never the user's own store.
    process.env.XDG_STATE_HOME = join(dir, "state");
    process.env.TBUCKET_STORE = "";
    server = await startRedisServer();
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server?.stop();
  });

  it("4 runs at 20/s on SQLite launch within burst + rate·T together, fairly", async () => {
    await expectSharedLaunches(`sqlite:${join(dir, "buckets.db")}`, dir);
  });

  it("4 runs at 20/s on Redis launch within burst + rate·T together, fairly", async () => {
    await expectSharedLaunches(server.url, dir);
  });
});
