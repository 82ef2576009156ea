import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { fixture } from "../run/start-cli.js";

/** The most starts in any window, against the envelope burst + rate x (window + jitterMs). */
function worstExcess(startsMs: number[], rate: number, burst: number, jitterMs: number): number {
  const sorted = [...startsMs].sort((a, b) => a - b);
  let worst = -Infinity;
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const allowed = burst + (rate * (sorted[j]! - sorted[i]! + jitterMs)) / 1000;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}

/** The most intervals open at once. */
function maxOverlap(intervals: Array<[number, number]>): number {
  const events = intervals.flatMap(([start, end]) => [[start, 1], [end, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, delta] of events) most = Math.max(most, (open += delta));
  return most;
}

function readJobLog(path: string): Array<{ number: number; start: number; end: number; item: string | null }> {
  return readFileSync(path, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line));
}

// One at a time: these measure time, and the machine is shared.
describe("tbucket run: timing", () => {
  it("--rate 20: starts follow the schedule and never exceed burst + rate x elapsed", async ({ expect }) => {
    const dir = mkdtempSync(join(tmpdir(), "tbucket-run-"));
    const log = join(dir, "log");
    const result = await runCli(["run", "--rate", "20", "--count", "40", "--joblog", log, "--", fixture("print-start-time.sh")]);
    expect(result.code).toBe(0);
    // As tbucket launched them (joblog, whole milliseconds). At any moment, never more than
    // burst + rate x elapsed have started (one rounding millisecond aside)...
    const startsMs = readJobLog(log).map((r) => r.start * 1000).sort((a, b) => a - b);
    startsMs.forEach((atMs, i) => expect(i + 1).toBeLessThanOrEqual(1 + (20 * (atMs - startsMs[0]! + 1)) / 1000 + 1e-9));
    // ...and in any window too, but a launch can be late (the event loop was busy starting the previous
    // one) while the next stays on schedule: allow 40 ms of lateness (21 ms was seen with the whole
    // suite running on 2 cores). Two launches back to back (a window of 0 ms) still fail: 2 > 1 + 20 x 0.04.
    expect(worstExcess(startsMs, 20, 1, 40)).toBeLessThanOrEqual(1e-9);
    // As the children saw it (their own clock reading once running): the same, but the time a process
    // takes to start varies with the machine's load (tens of ms on a busy 2-core box): allow 100 ms.
    const childStartsMs = result.stdout.toString().trim().split("\n").map((ns) => Number(BigInt(ns) / 1000n) / 1000);
    expect(childStartsMs).toHaveLength(40);
    expect(worstExcess(childStartsMs, 20, 1, 100)).toBeLessThanOrEqual(1e-9);
    // 39 intervals of 50 ms at least. How late launches run is measured by bench/run.mjs and
    // "not slower than the rate" by the fake-clock tests: a busy machine must not fail this one.
    expect(startsMs.at(-1)! - startsMs[0]!).toBeGreaterThanOrEqual(1949);
  });

  it("--burst 5 --rate 10: five back to back, then one every 100 ms", async ({ expect }) => {
    const dir = mkdtempSync(join(tmpdir(), "tbucket-run-"));
    const log = join(dir, "log");
    const result = await runCli(["run", "--rate", "10", "--burst", "5", "--count", "10", "-j", "0", "--joblog", log, "--", "true"]);
    expect(result.code).toBe(0);
    const startsMs = readJobLog(log).map((r) => r.start * 1000).sort((a, b) => a - b);
    expect(worstExcess(startsMs, 10, 5, 1)).toBeLessThanOrEqual(1e-9);
    // The sixth waits for a token: 100 ms after the first.
    expect(startsMs[5]! - startsMs[0]!).toBeGreaterThanOrEqual(99);
    expect(startsMs[9]! - startsMs[0]!).toBeGreaterThanOrEqual(499);
  });

  it("-j 2: never more than two running at once, as the jobs themselves saw it", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "2", "--tag", "--", fixture("sleep-and-log.sh"), "0.4", "{}"], { input: "1\n2\n3\n4\n5\n6\n" });
    expect(result.code).toBe(0);
    const intervals = intervalsFromOutput(result.stdout.toString());
    expect(intervals).toHaveLength(6);
    expect(maxOverlap(intervals)).toBe(2);
  });

  it("-j 0: no limit on how many run at once", async ({ expect }) => {
    const log = join(mkdtempSync(join(tmpdir(), "tbucket-run-")), "log");
    const result = await runCli(["run", "-r", "inf", "-j", "0", "--joblog", log, "--", "sh", "-c", "sleep 2", "{}"], { input: "1\n2\n3\n4\n5\n" });
    expect(result.code).toBe(0);
    // As tbucket saw them (launched, then ended): all five at once.
    expect(maxOverlap(readJobLog(log).map((r) => [r.start, r.end]))).toBe(5);
  });
});

/** Turns tagged "start <ns>" / "end <ns>" lines into one [start, end] interval per job, in ms. */
function intervalsFromOutput(text: string): Array<[number, number]> {
  const byJob = new Map<string, { start?: number; end?: number }>();
  for (const line of text.trim().split("\n")) {
    const [tag, what, ns] = line.split(/[\t ]/) as [string, "start" | "end", string];
    const entry = byJob.get(tag) ?? {};
    entry[what] = Number(BigInt(ns) / 1000n) / 1000;
    byJob.set(tag, entry);
  }
  return [...byJob.values()].map((entry) => [entry.start!, entry.end!]);
}
