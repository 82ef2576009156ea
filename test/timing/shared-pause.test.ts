import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Running, runCli, sleep, startCli } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

/**
 * `tbucket key set NAME --rate 0` pauses every pipe and run on the key, and
 * setting a rate again resumes them: the output stops growing, then grows again.
 */
let dir: string;
let store: string;
let env: NodeJS.ProcessEnv;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-pause-"));
  store = `sqlite:${join(dir, "buckets.db")}`;
  env = { XDG_STATE_HOME: dir, TBUCKET_STORE: "" };
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** tbucket on the key, fed endlessly (`feed`) or with standard input closed. */
const start = (args: string[], feed: boolean): Running => startCli(args, { stdin: feed ? "endless" : "close", env, timeoutMs: 120_000 });

/** When the first output after `afterMs` came. */
async function waitForOutput(running: Running, afterMs: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const first = running.received.find((r) => r.atMs >= afterMs);
    if (first) return first.atMs;
    if (performance.now() > deadline) throw new Error(`no output within ${timeoutMs} ms; stderr: ${running.stderr()}`);
    await sleep(20);
  }
}

async function keySet(key: string, rate: string): Promise<string> {
  const result = await runCli(["key", "set", key, "--rate", rate, "--store", store], { env });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.toString();
}

/** Pauses the key once output flows, checks that nothing more comes, resumes it and checks that output comes again. */
async function expectPauseAndResume(running: Running, key: string, resumeRate: string, paceUnits: number, unitBytes: number): Promise<void> {
  try {
    await waitForOutput(running, 0, 8000);
    await sleep(300);
    expect(await keySet(key, "0")).toMatch(/^rate: +0 \(paused\)$/m);
    // Live changes land within the poll interval (500 ms) plus a lease: give them a second.
    await sleep(1000);
    const pausedFrom = performance.now();
    await sleep(1500);
    const whilePaused = running.bytesBetween(pausedFrom, performance.now());
    // Unpaused, this window would carry about 1.5 s of the rate.
    expect(whilePaused, running.stderr()).toBeLessThanOrEqual(unitBytes);
    const resumedAt = performance.now();
    await keySet(key, resumeRate);
    const firstAfter = await waitForOutput(running, resumedAt, 3000);
    expect(firstAfter - resumedAt).toBeLessThan(3000);
    await sleep(1500);
    const afterResume = running.bytesBetween(firstAfter, firstAfter + 1000);
    expect(afterResume, running.stderr()).toBeGreaterThanOrEqual(0.4 * paceUnits * unitBytes);
  } finally {
    running.signal("SIGTERM");
    await running.exited;
  }
}

describe("a shared key paused with key set --rate 0", () => {
  it("stops a pipe on the key, and setting a rate resumes it; progress says paused", async () => {
    const pipe = start(["--key", "pipe-pause", "--store", store, "--rate", "256k", "--progress"], true);
    // At 256 KiB/s, a paused window holds at most what was already in the OS pipe's buffer.
    await expectPauseAndResume(pipe, "pipe-pause", "256k", 256 * 1024, 1);
    expect(pipe.stderr()).toMatch(/paused, key "pipe-pause"/);
    expect(pipe.stderr()).toMatch(/limit 256\.00 KiB\/s, key "pipe-pause"/);
  }, 30_000);

  it("stops launching a run on the key, and setting a rate resumes it; progress says paused", async () => {
    const run = start(["run", "--key", "run-pause", "--store", store, "--rate", "20", "--progress", "--", "echo", "launched"], false);
    // "launched\n" is 9 bytes: at most one launch in flight when the pause lands, none after.
    await expectPauseAndResume(run, "run-pause", "20", 20, 9);
    expect(run.stderr()).toMatch(/paused, key "run-pause"/);
  }, 30_000);
});

describe("--stats after a signal while the key is paused", () => {
  // `--stats` on a paused key said it waited tens of ms after 1.5 s of waiting: the wait under way was not counted.
  it.each([
    ["pipe", ["--burst", "1", "--kind", "bytes"], [], "waitedSeconds"],
    ["run", ["--burst", "1", "--kind", "count"], ["run"], "waitSeconds"],
  ] as const)("%s: the wait under way counts", async (what, burst, command, field) => {
    const key = `${what}-paused-stats`;
    const set = await runCli(["key", "set", key, "--rate", "0", ...burst, "--store", store], { env });
    expect([set.code, set.stderr]).toEqual([0, ""]);
    // The one token of the burst goes at once; the next waits until the key is resumed.
    const args = [...command, "--key", key, "--store", store, "--stats-format", "json", ...(what === "run" ? ["--", "echo", "x"] : [])];
    const running = start(args, what === "pipe");
    await waitForOutput(running, 0, 8000);
    await sleep(1500);
    running.signal("SIGTERM");
    const result = await running.exited;
    const stats = JSON.parse(result.stderr.trim().split("\n").find((line) => line.startsWith("{"))!) as Record<string, number>;
    // From before the first output to the signal: at least the 1.5 s slept, less a margin for the output's way here.
    expect(stats[field], result.stderr).toBeGreaterThanOrEqual(1.4);
  }, 30_000);
});

/** The CPU time a process has used, user and system, in seconds (Linux's /proc; 100 ticks a second). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

// A paused key that still held its burst sent it one byte per round trip to the store (100 KiB
// took 2.7 s on SQLite): the pipe's slice was sized from the rate, which is 0.
describe.each([["SQLite"], ["Redis"]])("a key paused with its burst full, on %s", (storeName) => {
  let redis: RedisServer | undefined;
  let storeUrl: string;
  beforeAll(async () => {
    redis = storeName === "Redis" ? await startRedisServer() : undefined;
    storeUrl = redis?.url ?? `sqlite:${join(dir, "paused-burst.db")}`;
  });
  afterAll(async () => redis?.stop());

  it("delivers its burst at once, then nothing (and no busy loop) until key set --rate resumes it", async () => {
    const burst = 1024 * 1024;
    const set = (...args: string[]) => runCli(["key", "set", "full-pause", ...args, "--store", storeUrl], { env });
    expect((await set("--rate", "1mb", "--burst", "1mb")).code).toBe(0);
    expect((await set("--rate", "0")).code).toBe(0);
    const pipe = start(["--key", "full-pause", "--store", storeUrl], true);
    try {
      await pipe.waitForBytes(burst, 10_000);
      const first = pipe.received[0]!.atMs;
      const last = pipe.received.at(-1)!.atMs;
      // 16 takes of a 64 KiB read: milliseconds; byte by byte it was over a minute.
      expect(last - first, pipe.stderr()).toBeLessThan(1000);
      const cpuBefore = cpuSeconds(pipe.pid);
      await sleep(1500);
      expect(pipe.bytesBetween(0, Infinity), pipe.stderr()).toBe(burst);
      // Waiting for a rate is a poll every 500 ms, not a loop of takes.
      expect(cpuSeconds(pipe.pid) - cpuBefore).toBeLessThan(0.2);
      const resumedAt = performance.now();
      expect((await set("--rate", "256k")).code).toBe(0);
      const firstAfter = await waitForOutput(pipe, resumedAt, 3000);
      await sleep(1200);
      expect(pipe.bytesBetween(firstAfter, firstAfter + 1000), pipe.stderr()).toBeGreaterThanOrEqual(0.4 * 256 * 1024);
    } finally {
      pipe.signal("SIGTERM");
      await pipe.exited;
    }
  }, 30_000);
});
