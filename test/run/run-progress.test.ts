import { describe, expect, it } from "vitest";
import { fitFields } from "../../src/cli/progress-line.js";
import { formatProgress, PROGRESS_SEPARATOR, runProgressFields } from "../../src/run/run-progress.js";

const counts = { started: 12, running: 2, succeeded: 8, failed: 1, interrupted: 0, skipped: 1, retried: 3 };

describe("run's progress line", () => {
  it("shows the counts, the launch rate and the limit; interrupted jobs when there are some", () => {
    expect(formatProgress({ ...counts, interrupted: 2 }, { launchesPerSecond: 5, limitPerSecond: 5 })).toBe(
      "12 started · 2 running · 11 done · 1 failed · 2 interrupted · 1 skipped · 5.0/s · limit 5.0/s",
    );
    expect(formatProgress({ ...counts, skipped: 0 }, { launchesPerSecond: 0.5, limitPerSecond: 1 / 60 })).toBe(
      "12 started · 2 running · 9 done · 1 failed · 30.0/min · limit 1.0/min",
    );
  });

  it("with classes, shows each class's share of the launches, the first to go when the line is narrow", () => {
    const classes = [
      { name: "web", launches: 9, share: 0.75 },
      { name: "batch", launches: 3, share: 0.25 },
    ];
    expect(formatProgress(counts, { launchesPerSecond: 5, limitPerSecond: 5, classes })).toBe(
      "12 started · 2 running · 9 done · 1 failed · 1 skipped · 5.0/s · limit 5.0/s · web 75%, batch 25%",
    );
    expect(formatProgress({ ...counts, started: 0 }, { launchesPerSecond: 0, limitPerSecond: 5, classes: classes.map((c) => ({ ...c, launches: 0, share: null })) })).toMatch(/web -, batch -$/);
    const narrow = fitFields(runProgressFields(counts, { launchesPerSecond: 5, limitPerSecond: 5, classes }), 60, PROGRESS_SEPARATOR);
    expect(narrow).not.toContain("web");
  });

  // Issue 15, point 6: no total and no ETA, where parallel --eta shows both.
  it("shows the total and the time to the last launch when the total is known", () => {
    expect(formatProgress(counts, { launchesPerSecond: 4.96, limitPerSecond: 5, total: 30 })).toBe(
      "12/30 started · 2 running · 9 done · 1 failed · 1 skipped · 5.0/s · limit 5.0/s · ETA 3.6 s",
    );
    // At the pace of the launches when slower than the limit (a shared key, --jobs), never faster than the limit.
    expect(formatProgress(counts, { launchesPerSecond: 2, limitPerSecond: 5, total: 30 })).toMatch(/ETA 9\.0 s$/);
    // Regression: a run stopped by Ctrl-C left "12/30 started ... ETA 3.6 s" as its last line.
    expect(formatProgress(counts, { launchesPerSecond: 4.96, limitPerSecond: 5, total: 30, ended: true })).toMatch(/limit 5\.0\/s$/);
    expect(formatProgress(counts, { launchesPerSecond: 8, limitPerSecond: 5, total: 30 })).toMatch(/ETA 3\.6 s$/);
    expect(formatProgress({ ...counts, started: 30 }, { launchesPerSecond: 5, limitPerSecond: 5, total: 30 })).not.toContain("ETA");
    expect(formatProgress(counts, { launchesPerSecond: 0, limitPerSecond: 0, total: 30, key: "jobs" })).toBe(
      `12/30 started · 2 running · 9 done · 1 failed · 1 skipped · 0/s · paused, key "jobs"`,
    );
  });

  it("fits 40 columns by dropping the limit, running, done and a zero failed count", () => {
    const fields = runProgressFields({ ...counts, failed: 0, skipped: 0 }, { launchesPerSecond: 5, limitPerSecond: 5, total: 30, key: "k" });
    expect(fitFields(fields, 39, PROGRESS_SEPARATOR)).toBe("12/30 started · 5.0/s · ETA 3.6 s");
    expect(fitFields(fields, 60, PROGRESS_SEPARATOR)).toBe("12/30 started · 2 running · 8 done · 5.0/s · ETA 3.6 s");
  });

  // Issue 19: at 40 columns "0/30 started · 0 running · 0 done · 0/s" until the first launch, then "4/30 started · 19.9/s · ETA 1.3 s".
  it("keeps the same fields from one redraw to the next as the figures change width", () => {
    const redraws = [
      [0, 0, 0],
      [0.5, 1, 1],
      [5, 4, 3],
      [20, 9, 9],
      [99.9, 12, 10],
      [150, 25, 7],
    ].map(([launchesPerSecond, started, running]) => {
      const progress = { ...counts, started: started!, running: running!, succeeded: started! - running!, failed: 0, skipped: 0 };
      const fields = runProgressFields(progress, { launchesPerSecond: launchesPerSecond!, limitPerSecond: 200, total: 30, jobs: 10, key: "k" });
      return (width: number) => fitFields(fields, width, PROGRESS_SEPARATOR);
    });
    // The fields a line shows, figures taken out; the ETA, none before the first launch, comes and goes in a room of its own.
    const layout = (line: string) => line.replace(/ · ETA .+$/, "").replace(/\d+(\.\d+)?/g, "N").replace(/\/(s|min)\b/g, "/U");
    for (const width of [30, 39, 46, 60, 80, 100]) {
      const layouts = new Set(redraws.map((line) => layout(line(width))));
      expect([...layouts], `at ${width} columns`).toHaveLength(1);
      for (const draw of redraws) expect(draw(width).length).toBeLessThanOrEqual(width);
    }
    expect(redraws[0]!(39)).toBe("0/30 started · 0/s");
    expect(redraws[3]!(39)).toBe("9/30 started · 20.0/s · ETA 1.1 s");
  });
});
