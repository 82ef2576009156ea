// A private limit set in run, end to end on the built binary: launches, exit codes, messages, --stats.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("tbucket run with a set of limits", () => {
  it("--rate with --window: the window holds the sixth launch a second, and --stats names it", async () => {
    const result = await runCli(["run", "--rate", "100/s", "--burst", "10", "--window", "5/1s", "--count", "7", "--stats-format", "json", "--", "true"]);
    expect(result.code).toBe(0);
    const stats = JSON.parse(result.stderr);
    expect(stats).toMatchObject({ started: 7, succeeded: 7, launches: 7 });
    expect(stats.limits).toEqual([
      { limit: 1, flag: "--rate 100/s --burst 10", kind: "bucket", unit: "count", rate: 100, burst: 10, waitedSeconds: 0 },
      { limit: 2, flag: "--window 5/1s", kind: "window", unit: "count", n: 5, windowSeconds: 1, waitedSeconds: expect.any(Number) },
    ]);
    expect(stats.limitedBy).toEqual([2]);
    expect(stats.elapsedSeconds).toBeGreaterThanOrEqual(0.95);
  });

  it("--concurrency runs at most n at once, the lower of it and --jobs, and is numbered in command-line order", async () => {
    const result = await runCli(["run", "--concurrency", "1", "--rate", "inf", "--jobs", "4", "--count", "3", "--stats", "--", "sh", "-c", "sleep 0.2"]);
    expect(result.code).toBe(0);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(600);
    expect(result.stderr).toMatch(/\nlaunches: 3 in [\d.]+ (ms|s) \(limits below\)\n/);
    expect(result.stderr).toMatch(/\nlimits: +1 --concurrency 1 \(1 at once\) waited [\d.]+ (ms|s), 2 --rate inf \(unlimited, burst 1\); limited by 1\n$/);
  });

  it.each([
    [["run", "--rate", "5", "--window", "1mb/1s", "--", "true"], `tbucket: --window: "1mb/1s" is a window of bytes, not of counts; run launches commands, so it takes a count rate such as "5" or "300/m"; to limit a command's bandwidth, pipe it: curl -s URL | tbucket --rate 1mb > file\n`],
    [["run", "--rate", "5", "--burst", "1", "--burst", "2", "--", "true"], `tbucket: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst\n`],
    [["run", "--rate", "5", "--concurrency", "none", "--", "true"], `tbucket: --concurrency: "none" is not a whole number 1 or more; try "1" or "10"\n`],
    [["run", "--window", "10/", "--", "true"], `tbucket: --window: "10/" is not a window: write N/W, at most N in any W; try "100/1m", "1000/h" or "10/1.5s"\n`],
    [["run", "--concurrency", "2", "--", "true"], `tbucket: --rate: missing; try "tbucket run --rate 5 -- <command>", or --key to use a shared bucket\n`],
  ])("refuses %j with one line and status 2", async (args, message) => {
    const result = await runCli(args);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });
});
