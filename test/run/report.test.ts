import { describe, expect, it } from "vitest";
import { formatJobLogLine } from "../../src/run/job-log.js";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { LaunchRateMeter } from "../../src/run/launch-rate-meter.js";
import { formatStatsText, formatSummary, runStats } from "../../src/run/run-report.js";

const counts = { started: 12, running: 2, succeeded: 8, failed: 1, interrupted: 0, skipped: 1, retried: 3 };

describe("run reports", () => {
  it("summarises in one line: started, succeeded, failed, skipped, retried", () => {
    expect(formatSummary(counts)).toBe("12 started, 8 succeeded, 1 failed, 1 skipped, 3 retried");
  });

  it("counts jobs ended by a passed-on signal as interrupted, apart from failures (issue 15, point 14)", () => {
    expect(formatSummary({ ...counts, interrupted: 2 })).toBe("12 started, 8 succeeded, 1 failed, 2 interrupted, 1 skipped, 3 retried");
  });

  it("computes --stats from the result: the rate after the burst, and the whole run's apart", () => {
    const stats = runStats({ counts, stoppedBy: undefined, spawnFailure: undefined, elapsedMs: 3000, waitMs: 1500 }, 5, 1, 4.9996);
    expect(stats).toEqual({
      started: 12, succeeded: 8, failed: 1, interrupted: 0, skipped: 1, retried: 3, launches: 15,
      elapsedSeconds: 3, steadyRate: 5, overallRate: 5, rate: 5, burst: 1, waitSeconds: 1.5, lostBytes: 0, lostLines: 0,
    });
    expect(formatStatsText(stats)).toBe(
      "jobs:     12 started, 8 succeeded, 1 failed, 1 skipped, 3 retried\n" +
        "launches: 15 in 3.0 s, 5/s after the burst (limit 5/s, burst 1)\n" +
        "waited:   1.5 s for tokens in total\n",
    );
    expect(formatStatsText({ ...stats, lostLines: 1, lostBytes: 3 }).split("\n")[3]).toBe("lost:     1 line (3 bytes) of job output not written");
  });

  it("--stats text: every launch within the burst, no limit, interrupted jobs", () => {
    const base = runStats({ counts, stoppedBy: undefined, spawnFailure: undefined, elapsedMs: 12, waitMs: 0 }, 5, 20, undefined);
    expect(formatStatsText(base).split("\n")[1]).toBe("launches: 15 in 12 ms, all within the burst (limit 5/s, burst 20)");
    expect(formatStatsText({ ...base, launches: 1, burst: 1 }).split("\n")[1]).toBe("launches: 1 in 12 ms (limit 5/s, burst 1)");
    expect(formatStatsText({ ...base, rate: null, steadyRate: 1234.5 }).split("\n")[1]).toBe("launches: 15 in 12 ms, 1230/s (no limit)");
    expect(formatStatsText({ ...base, interrupted: 2 }).split("\n")[0]).toBe("jobs:     12 started, 8 succeeded, 1 failed, 2 interrupted, 1 skipped, 3 retried");
  });

  it("writes a job log line with epoch seconds", () => {
    const line = formatJobLogLine(
      { number: 3, item: "a b", startMs: 100, endMs: 350.4, waitMs: 50, exit: { code: 2, signal: null }, attempts: 2, skipped: false },
      (ms) => 1_700_000_000_000 + ms,
    );
    expect(JSON.parse(line)).toEqual({ number: 3, item: "a b", start: 1_700_000_000.1, end: 1_700_000_000.35, wait: 0.05, exit: 2, signal: null, attempts: 2, cost: null, settled: null, throttled: 0, server_wait: null });
    const reported = formatJobLogLine(
      { number: 5, item: "x", startMs: 0, endMs: 10, waitMs: 0, exit: { code: 0, signal: null }, attempts: 3, skipped: false, costs: { count: 1, cost: 120 }, settledCosts: [80], throttled: 2, serverWaitMs: 1500 },
      (ms) => ms,
    );
    expect(reported).toBe(`{"number":5,"item":"x","start":0,"end":0.01,"wait":0,"exit":0,"signal":null,"attempts":3,"cost":120,"settled":[80],"throttled":2,"server_wait":1.5}\n`);
    const skipped = formatJobLogLine(
      { number: 4, item: undefined, startMs: undefined, endMs: 0, waitMs: 0, exit: undefined, attempts: 0, skipped: true },
      (ms) => ms,
    );
    expect(skipped).toBe(`{"number":4,"item":null,"start":null,"end":0,"wait":0,"exit":null,"signal":null,"attempts":0,"skipped":true,"cost":null,"settled":null,"throttled":0,"server_wait":null}\n`);
  });

  it("measures the recent launch rate over its window", () => {
    const meter = new LaunchRateMeter(1, 1000);
    expect(meter.ratePerSecond(0)).toBe(0);
    for (let ms = 0; ms < 3000; ms += 100) meter.record(ms);
    expect(meter.ratePerSecond(3000)).toBeCloseTo(10, 5);
    // A stall reads as a falling rate, down to 0 once the window holds no launch.
    expect(meter.ratePerSecond(3050)).toBeCloseTo(9 / 0.95, 5);
    expect(meter.ratePerSecond(3900)).toBeCloseTo(1, 5);
    expect(meter.ratePerSecond(9000)).toBe(0);
  });

  it("counts intervals, not launches: 2 launches 200 ms apart are 5/s, not 10/s (issue 15, point 4)", () => {
    const meter = new LaunchRateMeter(1, 5000);
    meter.record(0);
    expect(meter.ratePerSecond(0)).toBe(0);
    expect(meter.steadyPerSecond()).toBeUndefined();
    meter.record(200);
    expect(meter.ratePerSecond(200)).toBe(5);
    expect(meter.steadyPerSecond()).toBe(5);
  });

  it("a slow rate (1 every 10 s) still shows, from the launch before the window", () => {
    const meter = new LaunchRateMeter(1, 5000);
    for (let ms = 0; ms <= 60_000; ms += 10_000) meter.record(ms);
    expect(meter.ratePerSecond(60_000)).toBeCloseTo(0.1, 9);
  });

  /** Launches as fast as a fake-clock bucket grants them, `count` of them; the meter records each. */
  function launchThroughBucket(rate: number, burst: number, count: number, meter: LaunchRateMeter, startMs = 0, readAt?: (ms: number) => void): number {
    const clock = new FakeClock(startMs);
    const bucket = new TokenBucket({ rate, burst, clock });
    let nowMs = startMs;
    for (let i = 0; i < count; i++) {
      nowMs += bucket.reserveAt(nowMs, 1).waitMs;
      meter.record(nowMs);
      readAt?.(nowMs);
    }
    return nowMs;
  }

  it.each([
    [5, 1, 20],
    [10, 1, 4],
    [5, 10, 40],
    [100, 7, 1000],
    [0.5, 3, 12],
  ])("at rate %d/s, burst %d, %d launches: the rate after the burst is the rate; the recent rate never above it", (rate, burst, count) => {
    const meter = new LaunchRateMeter(burst, 5000);
    let highest = 0;
    launchThroughBucket(rate, burst, count, meter, 1234.5, (ms) => (highest = Math.max(highest, meter.ratePerSecond(ms))));
    expect(meter.steadyPerSecond()).toBeCloseTo(rate, 9);
    expect(highest).toBeLessThanOrEqual(rate * (1 + 1e-9));
    expect(highest).toBeGreaterThan(rate * 0.999);
  });

  it("a first launch recorded late counts from when its token was asked for, so the figure stays under the rate", () => {
    const meter = new LaunchRateMeter(2, 5000);
    // Granted at 0 (burst 2), then at 100 and 200; the first launch was recorded 31 ms after its grant.
    meter.record(31, 0);
    meter.record(32, 32);
    meter.record(100, 32);
    meter.record(200, 100);
    expect(meter.steadyPerSecond()).toBe(10);
  });

  it("every launch within the burst: no rate after it", () => {
    const meter = new LaunchRateMeter(10, 5000);
    launchThroughBucket(5, 10, 10, meter);
    expect(meter.steadyPerSecond()).toBeUndefined();
    expect(meter.ratePerSecond(1)).toBe(0);
  });

  it("launches slower than the limit read as their own pace", () => {
    const meter = new LaunchRateMeter(1, 5000);
    for (let ms = 0; ms <= 10_000; ms += 500) meter.record(ms);
    expect(meter.steadyPerSecond()).toBe(2);
    expect(meter.ratePerSecond(10_000)).toBe(2);
  });
});
