import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runCli, start as startProcess, startCli, TBUCKET } from "../helpers/cli.js";
import { type RedisServer, startRedisServer } from "../helpers/redis-server.js";

// Ctrl-C on `tbucket run --key k --store sqlite:db --rate 1/100s --count 5 -- true` while it
// waited left the key at -0.98: the next run waited 100 s for a launch nobody made.

let dir: string;
let server: RedisServer;
let env: NodeJS.ProcessEnv;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-shared-cancel-"));
  // Nothing here may touch the user's own default store.
  env = { XDG_STATE_HOME: join(dir, "state"), TBUCKET_STORE: "" };
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** The key's level as `tbucket key show --json` reports it; undefined while the key is not set. */
async function level(store: string, key: string): Promise<number | undefined> {
  const show = await runCli(["key", "show", key, "--store", store, "--json"], { env });
  if (show.code === 1 && show.stderr.includes("not set in")) return undefined;
  expect([show.code, show.stderr]).toEqual([0, ""]);
  return (JSON.parse(show.stdout.toString()) as { tokens: number }).tokens;
}

/** Starts tbucket, feeding `input` and leaving standard input open. */
const start = (args: string[], input: string) => startCli(args, { input, stdin: "open", env });

/** Polls the key until a reservation is waiting in it (the level went below `below`). */
async function untilWaiting(store: string, key: string, below: number, running: { done(): boolean; exited: Promise<CliResult> }): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (((await level(store, key)) ?? Infinity) > below) {
    if (running.done()) {
      const { code, signal, stderr } = await running.exited;
      throw new Error(`tbucket ended before it waited on "${key}": ${JSON.stringify({ code, signal, stderr })}`);
    }
    if (Date.now() > deadline) throw new Error(`tbucket never waited on "${key}"`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const STORES: Array<[string, () => string]> = [
  ["SQLite", () => `sqlite:${join(dir, "buckets.db")}`],
  ["Redis", () => server.url],
];

describe.each(STORES)("an interrupted wait gives its tokens back to the key (%s)", (_name, storeOf) => {
  const signals: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
  const exits: Record<string, number> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 };

  it.each(signals)("run, %s while waiting for the second launch: the key is left near 0, not at -0.98", async (signal) => {
    const store = storeOf();
    const key = `run-${signal}`;
    const run = start(["run", "--key", key, "--store", store, "--rate", "1/100s", "--count", "5", "--", "true"], "");
    await untilWaiting(store, key, -0.5, run);
    run.signal(signal);
    const result = await run.exited;
    expect([result.code, result.stderr]).toEqual([
      exits[signal],
      "tbucket: run: interrupted: 1 started, 1 succeeded, 0 failed, 0 skipped, 0 retried\n",
    ]);
    const after = await level(store, key);
    expect(after).toBeGreaterThan(-0.01);
    expect(after).toBeLessThan(0.2);
  });

  it.each(signals)("pipe, %s while waiting for bytes: the key is left near 0", async (signal) => {
    const store = storeOf();
    const key = `pipe-${signal}`;
    // 10 bytes of burst go at once; the next byte waits 10 s.
    const startedMs = performance.now();
    const pipe = start(["--key", key, "--store", store, "--rate", "10/100s", "--burst", "10"], "x".repeat(100));
    await untilWaiting(store, key, -0.5, pipe);
    pipe.signal(signal);
    const result = await pipe.exited;
    // The pipe ends by the signal itself, as cat does.
    expect([result.code, result.signal, result.stdout.toString(), result.stderr]).toEqual([null, signal, "x".repeat(10), ""]);
    const after = await level(store, key);
    expect(after).toBeGreaterThan(-0.01);
    // Emptied at the start (its burst went at once): at most what 0.1 byte a second earned since, however
    // long the polls and key show (processes of their own) took on a loaded machine; a wait that gave back
    // more than it took would leave it a byte higher.
    expect(after).toBeLessThan(0.01 + (0.1 * (performance.now() - startedMs)) / 1000);
  });
});

// `timeout 5 tbucket --key K --store redis://… --rate 1mb < /dev/zero > /dev/null` said
// `tbucket: key "K": the limiter was closed while waiting` on its way out: the signal closed the
// limiter under the copy's next take, and the copy reported that as its failure. The text stats
// made it likely: formatting them takes long enough for a take to come due meanwhile.
describe.each(STORES)("a signal to a pipe copying flat out on a shared key ends it quietly (%s)", (_name, storeOf) => {
  it.each([
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const)("%s as timeout sends it: status %d, the stats and nothing else", async (signal, status) => {
    const store = storeOf();
    // Several at once, each on its own key: the signal lands at a different point of a take in each.
    const pipes = [1, 2, 3, 4].map((n) => {
      const out = join(dir, `flat-${signal}-${n}`);
      const command = `exec node ${TBUCKET} --key ${basename(out)} --store ${store} --rate 1mb --stats < /dev/zero > ${out}`;
      return { out, running: startProcess("bash", ["-c", command], { env }) };
    });
    for (const { out, running } of pipes) {
      while (!existsSync(out) || statSync(out).size === 0) {
        if (running.done()) throw new Error(`tbucket ended before copying: ${running.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // timeout signals tbucket, then its process group: twice, at once.
    for (const { running } of pipes) {
      running.signal(signal);
      running.signal(signal);
    }
    for (const { running } of pipes) {
      const result = await running.exited;
      expect([result.code, result.signal], result.stderr).toEqual([null, signal]);
      expect(result.stderr).toMatch(/^tbucket: [\d,]+ bytes \(.*; limit 1\.00 MiB\/s = 1,048,576 B\/s, burst 104,857 B\n$/);
    }
  });
});
