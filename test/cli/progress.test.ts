import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { formatPipeStats, type PipeStats, steadyRate } from "../../src/cli/pipe-stats.js";
import { describeProgress, PipeProgressMeter, type ProgressView } from "../../src/cli/progress.js";

const MiB = 1024 * 1024;

function stats(overrides: Partial<PipeStats>): PipeStats {
  return { bytes: 0, records: undefined, elapsedMs: 0, waitedMs: 0, rate: MiB, burst: MiB / 10, kind: "bytes", ...overrides };
}

const view = (overrides: Partial<ProgressView> = {}): ProgressView => ({
  currentRate: MiB,
  etaBytesPerSecond: MiB,
  level: undefined,
  totalBytes: undefined,
  ...overrides,
});

/** The ETA in seconds that a line shows, parsed back. */
function etaSeconds(line: string): number {
  const match = / ETA (\d+(?:\.\d+)?) (s|ms)$/.exec(line) ?? / ETA (\d+)m(\d+)s$/.exec(line);
  if (!match) throw new Error(`no ETA in ${line}`);
  if (match[2] === "ms") return Number(match[1]) / 1000;
  if (match[2] === "s") return Number(match[1]);
  return Number(match[1]) * 60 + Number(match[2]);
}

describe("the pipe's progress line", () => {
  // Issue 15, point 4: with --burst 4mb at 1mb/s the plain average read 10.37 MiB/s against a limit of 1.00 MiB/s.
  it("shows the average past the burst, which stays at or below the limit, and labels a current rate above it (burst)", () => {
    const afterHalfSecond = stats({ bytes: 4.5 * MiB, elapsedMs: 500, burst: 4 * MiB });
    expect(steadyRate(afterHalfSecond)).toBe(MiB);
    expect(describeProgress(afterHalfSecond, view({ currentRate: 9 * MiB, level: 0 }))).toBe(
      "4.50 MiB  9.00 MiB/s  (burst)  avg 1.00 MiB/s  limit 1.00 MiB/s  bucket 0%  500 ms",
    );
    // While the burst goes out there is no average past it yet.
    expect(describeProgress(stats({ bytes: 3 * MiB, elapsedMs: 10, burst: 4 * MiB }), view({ currentRate: 0 }))).toBe(
      "3.00 MiB  0 B/s  limit 1.00 MiB/s  10 ms",
    );
  });

  it("puts lines and lines per second first in line mode, bytes last (issue 15, point 7)", () => {
    const line = describeProgress(stats({ kind: "count", rate: 10, burst: 1, records: 41, bytes: 82, elapsedMs: 4000 }), view({ currentRate: 10 }));
    expect(line).toBe("41 lines  10.0 lines/s  avg 10.0 lines/s  limit 10.0/s  4.0 s  82 B");
  });

  it("adds the lines last for --lines with a byte rate", () => {
    expect(describeProgress(stats({ bytes: 2 * MiB, records: 300, elapsedMs: 2000, burst: MiB }), view())).toBe(
      "2.00 MiB  1.00 MiB/s  avg 512.00 KiB/s  limit 1.00 MiB/s  2.0 s  300 lines",
    );
  });

  it("says the limit is a shared key's, and paused when the key is paused (issue 15, point 8)", () => {
    expect(describeProgress(stats({ bytes: MiB, elapsedMs: 1000, rate: 2 * MiB }), view({ key: "backup" }))).toContain(
      `limit 2.00 MiB/s, key "backup"`,
    );
    const paused = describeProgress(stats({ bytes: MiB, elapsedMs: 1000, rate: 0 }), view({ key: "backup", currentRate: 0, totalBytes: 2 * MiB }));
    expect(paused).toBe(`1.00 MiB  0 B/s  avg 921.60 KiB/s  paused, key "backup"  1.0 s  50.0%`);
  });

  it("names the class a pipe takes as, next to its key", () => {
    const asClass = stats({ bytes: MiB, elapsedMs: 1000, rate: 20 * MiB, class: { name: "bulk", sharedRate: 20 * MiB } });
    expect(describeProgress(asClass, view({ key: "uplink" }))).toContain(`limit 20.00 MiB/s, key "uplink" as bulk`);
  });

  // Issue 15, point 10: at 40 columns the line wrapped onto three.
  it("fits the width by dropping avg, bucket, limit, elapsed time, percentage in that order", () => {
    const s = stats({ bytes: 12 * MiB, elapsedMs: 12_000, rate: MiB, burst: 4 * MiB });
    const v = view({ level: MiB, totalBytes: 30 * MiB, key: "backup" });
    const whole = describeProgress(s, v);
    expect(whole).toBe(`12.00 MiB  1.00 MiB/s  avg 682.67 KiB/s  limit 1.00 MiB/s, key "backup"  bucket 25%  12.0 s  40.0%  ETA 18.0 s`);
    // Each at the width its fields take at their widest (`1023.99 KiB/s` for a rate, room for "(burst)"), not at its own length.
    const narrower: Array<[number, string]> = [
      [108, `12.00 MiB  1.00 MiB/s  limit 1.00 MiB/s, key "backup"  bucket 25%  12.0 s  40.0%  ETA 18.0 s`],
      [95, `12.00 MiB  1.00 MiB/s  limit 1.00 MiB/s, key "backup"  12.0 s  40.0%  ETA 18.0 s`],
      [54, `12.00 MiB  1.00 MiB/s  12.0 s  40.0%  ETA 18.0 s`],
      [46, `12.00 MiB  1.00 MiB/s  40.0%  ETA 18.0 s`],
      [38, `12.00 MiB  1.00 MiB/s  ETA 18.0 s`],
    ];
    for (const [width, line] of narrower) expect(describeProgress(s, v, width)).toBe(line);
    // One column short of a line's width: the next field goes.
    for (const [at, [width]] of narrower.slice(0, -1).entries()) expect(describeProgress(s, v, width - 1)).toBe(narrower[at + 1]![1]);
    // 40 columns (39 usable): the amount, the rate and the ETA.
    expect(describeProgress(s, v, 39)).toBe(narrower[4]![1]);
    // Narrower than what cannot go: whole fields that fit, never a figure cut short, never wrapped.
    expect(describeProgress(s, v, 22)).toBe("12.00 MiB");
    expect(describeProgress(s, v, 26)).toBe("12.00 MiB  1.00 MiB/s");
    expect(describeProgress(s, v, 8)).toBe("12.00 Mi");
  });

  // Issue 19: at 40 columns the percentage came and went as the rate's text changed width:
  // "1.09 MiB  1.09 MiB/s  27.3%  ETA 2.9 s", then "1.29 MiB  1022.56 KiB/s  ETA 2.7 s".
  it("keeps the same fields from one redraw to the next as the figures change width", () => {
    const redraws = [0, 512, 99_000, 1023.99 * 1024, 1.09 * MiB, 9.5 * MiB, 12 * MiB].map((currentRate, at) => {
      const s = stats({ bytes: (1 + at / 10) * MiB, elapsedMs: 1000 + at * 200, rate: 10 * MiB, burst: 64 * 1024 });
      return (width: number) => describeProgress(s, view({ currentRate, etaBytesPerSecond: MiB, level: 0, totalBytes: 4 * MiB }), width);
    });
    // The fields a line shows, figures taken out; "(burst)" comes and goes in a room of its own.
    const layout = (line: string) => line.replace("  (burst)", "").replace(/\d+(\.\d+)?/g, "N").replace(/ (B|KiB|MiB)/g, " U").replace(/N (ms|s)\b/g, "T");
    for (const width of [30, 39, 46, 60, 80]) {
      const layouts = new Set(redraws.map((line) => layout(line(width))));
      expect([...layouts], `at ${width} columns`).toHaveLength(1);
      for (const draw of redraws) expect(draw(width).length).toBeLessThanOrEqual(width);
    }
    expect(redraws[4]!(39)).toBe("1.40 MiB  1.09 MiB/s  ETA 2.6 s");
  });
});

// Regression: a copy that ended short of --size (its reader gone, -s too large) left "34.8%  ETA 318 ms" on the screen.
describe("the last line", () => {
  it("has no ETA: the copy is over", () => {
    const s = stats({ bytes: 100 * 1024, elapsedMs: 1000 });
    expect(describeProgress(s, view({ totalBytes: 300 * 1024 }))).toMatch(/  33\.3%  ETA /);
    expect(describeProgress(s, view({ totalBytes: 300 * 1024, ended: true }))).toMatch(/  33\.3%$/);
  });
});

// Regression: with -s smaller than the input the line sat at 100.0% while bytes kept coming.
describe("more bytes than --size said", () => {
  it("shows the share past 100%, as pv does, and no ETA", () => {
    const line = describeProgress(stats({ bytes: 250 * 1024, elapsedMs: 1000 }), view({ totalBytes: 100 * 1024 }));
    expect(line).toMatch(/  250\.0%$/);
  });
});

describe("the ETA (issue 15, point 5)", () => {
  /** A copy of `totalBytes` drawn every 200 ms on a fake clock at `bytesPerSecondAt(ms)`, and the ETA each line shows. */
  async function copy(totalBytes: number, rateLimit: (ms: number) => number, bytesPerSecondAt: (ms: number) => number) {
    const clock = new FakeClock();
    const meter = new PipeProgressMeter();
    let bytes = 0;
    const lines: Array<{ atMs: number; eta: number; left: number }> = [];
    meter.record(stats({}));
    while (bytes < totalBytes) {
      await clock.advance(200);
      bytes = Math.min(totalBytes, bytes + bytesPerSecondAt(clock.now()) / 5);
      const s = stats({ bytes, elapsedMs: clock.now(), rate: rateLimit(clock.now()), burst: MiB / 10 });
      const line = describeProgress(s, { ...meter.record(s), level: undefined, totalBytes });
      if (bytes < totalBytes) lines.push({ atMs: clock.now(), eta: etaSeconds(line), left: (totalBytes - bytes) / bytesPerSecondAt(clock.now()) });
    }
    return lines;
  }

  it("follows a limit raised from 1 to 4 MiB/s (key set) within the rate window, where the lifetime average never did", async () => {
    // 10 s at 1 MiB/s, then 40 MiB at 4 MiB/s: 10 s more.
    const raisedAtMs = 10_000;
    const rate = (ms: number) => (ms <= raisedAtMs ? MiB : 4 * MiB);
    const lines = await copy(50 * MiB, rate, rate);
    const settled = lines.filter((line) => line.atMs >= raisedAtMs + 5000);
    expect(settled.length).toBeGreaterThan(10);
    for (const line of settled) expect(Math.abs(line.eta - line.left)).toBeLessThanOrEqual(0.1);
    // Just after the change the ETA already falls faster than the clock.
    const at = (ms: number) => lines.find((line) => line.atMs === ms)!.eta;
    expect(at(raisedAtMs) - at(raisedAtMs + 2000)).toBeGreaterThan(4);
  });

  // Regression: for the window's 5 s after a raise the ETA blended the old pace in (2.0 s shown for 1.0 s of work).
  it("follows a changed limit from the next line on, raised or lowered", async () => {
    const changedAtMs = 10_000;
    for (const [before, after] of [
      [MiB, 4 * MiB],
      [4 * MiB, MiB],
    ] as const) {
      const rate = (ms: number) => (ms <= changedAtMs ? before : after);
      const lines = await copy(before * 10 + after * 20, rate, rate);
      for (const line of lines.filter((l) => l.atMs > changedAtMs)) expect(Math.abs(line.eta - line.left), `at ${line.atMs} ms`).toBeLessThanOrEqual(0.1);
    }
  });

  it("counts down at the speed a shared key really gives (half the limit), not the limit's", async () => {
    const lines = await copy(20 * MiB, () => 2 * MiB, () => MiB);
    for (const line of lines.filter((l) => l.atMs >= 1000)) expect(Math.abs(line.eta - line.left)).toBeLessThanOrEqual(0.1);
  });

  it("never promises more than the limit (a burst at the start)", async () => {
    const lines = await copy(20 * MiB, () => MiB, (ms) => (ms <= 200 ? 20 * MiB : MiB));
    for (const line of lines) expect(line.eta).toBeGreaterThanOrEqual(line.left - 0.1);
  });
});

describe("pipe --stats", () => {
  // Regression: 100,000 bytes at --rate 1mb --burst 4mb read "average 24.19 MiB/s ... limit 1.00 MiB/s" with no word of the burst.
  it("says so when every byte (or line) fitted in the burst, where the average may be far above the limit", () => {
    const bytes = stats({ bytes: 100_000, elapsedMs: 4, burst: 4 * MiB });
    expect(formatPipeStats(bytes, "text")).toContain("(25,000,000 B/s), all within the burst; waited");
    const lines = stats({ kind: "count", rate: 100, burst: 100, records: 50, bytes: 100, elapsedMs: 6 });
    expect(formatPipeStats(lines, "text")).toContain(", all within the burst; waited");
    expect(formatPipeStats(stats({ bytes: 100_000, elapsedMs: 4, rate: Infinity }), "text")).not.toContain("burst;");
    expect(formatPipeStats(stats({ bytes: 0, elapsedMs: 4 }), "text")).not.toContain("within");
  });

  // Regression: --rate 0.1 read "limit 0 B/s = 0 B/s".
  it("shows a rate below 100 B/s to three significant digits", () => {
    const slow = formatPipeStats(stats({ bytes: 3, elapsedMs: 40_000, rate: 0.1, burst: 1 }), "text");
    expect(slow).toContain("average 0.075 B/s (0.075 B/s)");
    expect(slow).toContain("; limit 0.1 B/s = 0.1 B/s, burst 1 B\n");
  });

  it("gives the average past the burst, in text and JSON (issue 15, point 4)", () => {
    const s = stats({ bytes: 14 * MiB, elapsedMs: 10_000, burst: 4 * MiB });
    expect(formatPipeStats(s, "text")).toContain("average 1.40 MiB/s (1,468,006 B/s), 1.00 MiB/s past the burst;");
    expect(JSON.parse(formatPipeStats(s, "json"))).toMatchObject({ averageBytesPerSecond: 1468006.4, averagePastBurst: MiB });
    const lines = stats({ kind: "count", rate: 10, burst: 1, records: 41, bytes: 82, elapsedMs: 4000 });
    expect(JSON.parse(formatPipeStats(lines, "json"))).toMatchObject({ averageLinesPerSecond: 10.25, averagePastBurst: 10, rateUnit: "lines/s" });
  });
});
