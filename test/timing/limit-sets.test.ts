// A private limit set held from outside, in real time: each limit by its own definition, with
// tolerances for the scheduling of the reader and of the jobs, never exact milliseconds.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { fixture, runCli, TBUCKET } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("limit-sets");

/** A chunk as the reader got it: when, its bytes, and the lines that end in it. */
interface Arrival {
  atMs: number;
  bytes: number;
  lines: number;
}

/** Runs the pipe with `args` on `input`, recording each chunk's arrival at this reader. */
async function readPipe(args: string[], input: Buffer): Promise<{ code: number | null; output: Buffer; arrivals: Arrival[]; stderr: string }> {
  const child = spawn(process.execPath, [TBUCKET, ...args]);
  const arrivals: Arrival[] = [];
  const chunks: Buffer[] = [];
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    let lines = 0;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    arrivals.push({ atMs: performance.now(), bytes: chunk.length, lines });
  });
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, output: Buffer.concat(chunks), arrivals, stderr };
}

/** The most of `amount` that came in any interval [t, t + lengthMs) starting at an arrival. */
function mostInAnyInterval<T extends { atMs: number }>(events: readonly T[], lengthMs: number, amount: (event: T) => number): number {
  let most = 0;
  for (let i = 0; i < events.length; i++) {
    let sum = 0;
    for (let j = i; j < events.length && events[j]!.atMs < events[i]!.atMs + lengthMs; j++) sum += amount(events[j]!);
    most = Math.max(most, sum);
  }
  return most;
}

/** The most of `amount` beyond burst + rate x (interval + lateMs), over every interval between two arrivals. */
function worstBucketExcess<T extends { atMs: number }>(events: readonly T[], rate: number, burst: number, lateMs: number, amount: (event: T) => number): number {
  let worst = -Infinity;
  for (let i = 0; i < events.length; i++) {
    let sum = 0;
    for (let j = i; j < events.length; j++) {
      sum += amount(events[j]!);
      worst = Math.max(worst, sum - burst - (rate * (events[j]!.atMs - events[i]!.atMs + lateMs)) / 1000);
    }
  }
  return worst;
}

/**
 * How much earlier than its due time a slice may seem to arrive, relative to an earlier one: the
 * reader gets a slice late when it or the pipe was slow to be scheduled, so a late slice and an
 * on-time one after it look closer than they were sent. An interval checked at the reader is
 * shortened (windows) or lengthened (buckets) by this much.
 */
const READER_LATE_MS = 100;

// One at a time: these measure time, and the machine is shared.
describe("limit sets: timing from outside", () => {
  it("pipe --rate 4mb --window 2mb/1s never gives its reader more than 2 MiB in any second", async ({ expect }) => {
    const input = randomBytes(6 * 1024 * 1024);
    const { code, output, arrivals, stderr } = await readPipe(["--rate", "4mb", "--window", "2mb/1s", "--stats-format", "json"], input);
    expect(code).toBe(0);
    expect(output.equals(input)).toBe(true);
    expect(mostInAnyInterval(arrivals, 1000 - READER_LATE_MS, (arrival) => arrival.bytes)).toBeLessThanOrEqual(2 * 1024 * 1024);
    // The window is what held it: 4 MiB/s alone would move 6 MiB in 1.4 s; the window's third 2 MiB waits until 2 s.
    expect(arrivals.at(-1)!.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(2000 - READER_LATE_MS);
    expect(JSON.parse(stderr).limitedBy).toContain(2);
  });

  it("run --rate 20/s --window 10/1s never starts more than 10 in any second, as the jobs saw it", async ({ expect }) => {
    const log = join(tempDir(), "log");
    const result = await runCli(["run", "--rate", "20/s", "--window", "10/1s", "--count", "30", "--joblog", log, "--", fixture("print-start-time.sh")]);
    expect(result.code).toBe(0);
    const starts = result.stdout.toString().trim().split("\n").map((ns) => ({ atMs: Number(BigInt(ns) / 1000n) / 1000 })).sort((a, b) => a.atMs - b.atMs);
    expect(starts).toHaveLength(30);
    // A process takes tens of ms to start on a busy machine, and not always the same: a late
    // start and an on-time one after it look closer than their grants were.
    const startLateMs = 200;
    expect(mostInAnyInterval(starts, 1000 - startLateMs, () => 1)).toBeLessThanOrEqual(10);
    // As tbucket granted them (joblog): the same, with the lateness of a grant alone.
    const granted = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => ({ atMs: JSON.parse(line).start * 1000 })).sort((a, b) => a.atMs - b.atMs);
    expect(mostInAnyInterval(granted, 1000 - READER_LATE_MS, () => 1)).toBeLessThanOrEqual(10);
    // And the bucket holds too: 20 a second, one at a time.
    expect(worstBucketExcess(granted, 20, 1, 100, () => 1)).toBeLessThanOrEqual(1e-9);
    // 20/s alone would start 30 in 1.45 s; the window's third ten wait for the first ten to leave, past 2 s.
    expect(granted.at(-1)!.atMs - granted[0]!.atMs).toBeGreaterThanOrEqual(2000 - READER_LATE_MS);
  });

  it("pipe --lines --rate 100/s --rate 64kb holds the line rate on short lines and the byte rate on long ones", async ({ expect }) => {
    const short = "x".repeat(9) + "\n";
    const long = "y".repeat(1999) + "\n";
    const input = Buffer.from(short.repeat(100) + long.repeat(60));
    const { code, output, arrivals, stderr } = await readPipe(["--lines", "--rate", "100/s", "--rate", "64kb", "--stats-format", "json"], input);
    expect(code).toBe(0);
    expect(output.equals(input)).toBe(true);
    // Lines: burst 1 + 100 a second; bytes: burst 6,553 (100 ms of the rate) + 65,536 a second.
    // A reader later than READER_LATE_MS makes the line it read look early by a fraction of a line (seen: 0.04 on a
    // loaded machine); a limit that did not hold shows whole lines.
    expect(worstBucketExcess(arrivals, 100, 1, READER_LATE_MS, (arrival) => arrival.lines)).toBeLessThan(0.5);
    expect(worstBucketExcess(arrivals, 65_536, 6553, READER_LATE_MS, (arrival) => arrival.bytes)).toBeLessThanOrEqual(1e-9);
    // Each bound in its turn: 100 short lines take about 1 s of the line rate, 120,000 bytes about 1.7 s of the byte rate.
    expect(arrivals.at(-1)!.atMs - arrivals[0]!.atMs).toBeGreaterThanOrEqual(2500);
    expect([...JSON.parse(stderr).limitedBy].sort()).toEqual([1, 2]);
  });

  it("pipe --window 1kb/1s stopped by SIGTERM while it waits on the window: at once, status by the signal, the stats exact and no limit waited longer than the pipe ran", async ({ expect }) => {
    const input = randomBytes(10 * 1024);
    const child = spawn(process.execPath, [TBUCKET, "--window", "1kb/1s", "--stats-format", "json"]);
    let received = 0;
    let stderr = "";
    let signalledAt = 0;
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      received += chunk.length;
      // Into the second window, a slice or two past its start: waiting for the next one to leave.
      if (received > 1024 && signalledAt === 0) setTimeout(() => ((signalledAt = performance.now()), child.kill("SIGTERM")), 100);
    });
    child.stdin.end(input);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on("close", (...end) => resolve(end)));
    const tookMs = performance.now() - signalledAt;
    expect([code, signal]).toEqual([null, "SIGTERM"]);
    // By hand 20-40 ms; generous for a loaded 2-core machine.
    expect(tookMs).toBeLessThan(1000);
    const stats = JSON.parse(stderr);
    expect(stats.bytes).toBe(received);
    expect(received).toBeLessThanOrEqual(2048);
    expect(stats.limitedBy).toEqual([1]);
    expect(stats.limits[0].waitedSeconds).toBeGreaterThan(0);
    expect(stats.limits[0].waitedSeconds).toBeLessThanOrEqual(stats.seconds + 0.001);
  });
});
