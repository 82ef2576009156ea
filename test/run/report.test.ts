import { describe, expect, it } from "vitest";
import { formatJobLogLine } from "../../src/run/job-log.js";
import { LaunchRateMeter } from "../../src/run/launch-rate-meter.js";
import { formatStatsText, formatSummary, runStats } from "../../src/run/run-report.js";

const counts = { started: 12, running: 2, succeeded: 8, failed: 1, skipped: 1, retried: 3 };

describe("run reports", () => {
  it("summarises in one line: started, succeeded, failed, skipped, retried", () => {
    expect(formatSummary(counts)).toBe("12 started, 8 succeeded, 1 failed, 1 skipped, 3 retried");
  });

  it("computes --stats from the result", () => {
    const stats = runStats({ counts, stoppedBy: undefined, spawnFailure: undefined, elapsedMs: 3000, waitMs: 1500 }, 5, 1);
    expect(stats).toEqual({
      started: 12, succeeded: 8, failed: 1, skipped: 1, retried: 3, launches: 15,
      elapsedSeconds: 3, launchRate: 5, rate: 5, burst: 1, waitSeconds: 1.5, lostBytes: 0, lostLines: 0,
    });
    expect(formatStatsText(stats)).toBe(
      "jobs:     12 started, 8 succeeded, 1 failed, 1 skipped, 3 retried\n" +
        "launches: 15 in 3.0 s (5/s; limit 5/s, burst 1)\n" +
        "waited:   1.5 s for tokens in total\n",
    );
    expect(formatStatsText({ ...stats, lostLines: 1, lostBytes: 3 }).split("\n")[3]).toBe("lost:     1 line (3 bytes) of job output not written");
  });

  it("writes a job log line with epoch seconds", () => {
    const line = formatJobLogLine(
      { number: 3, item: "a b", startMs: 100, endMs: 350.4, waitMs: 50, exit: { code: 2, signal: null }, attempts: 2, skipped: false },
      (ms) => 1_700_000_000_000 + ms,
    );
    expect(JSON.parse(line)).toEqual({ number: 3, item: "a b", start: 1_700_000_000.1, end: 1_700_000_000.35, wait: 0.05, exit: 2, signal: null, attempts: 2 });
    const skipped = formatJobLogLine(
      { number: 4, item: undefined, startMs: undefined, endMs: 0, waitMs: 0, exit: undefined, attempts: 0, skipped: true },
      (ms) => ms,
    );
    expect(skipped).toBe(`{"number":4,"item":null,"start":null,"end":0,"wait":0,"exit":null,"signal":null,"attempts":0,"skipped":true}\n`);
  });

  it("measures the recent launch rate over its window", () => {
    const meter = new LaunchRateMeter(1000);
    expect(meter.ratePerSecond(0)).toBe(0);
    for (let ms = 0; ms < 3000; ms += 100) meter.record(ms);
    expect(meter.ratePerSecond(3000)).toBeCloseTo(10, 5);
  });
});
