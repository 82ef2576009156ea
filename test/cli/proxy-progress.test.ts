import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { describeHttpProgress, describeTcpProgress, type HttpTally } from "../../src/cli/proxy/progress-line.js";
import type { TcpProxyStats } from "../../src/proxy/tcp-proxy.js";

const KiB = 1024;
const MiB = 1024 * KiB;

/** The fields a line shows, figures taken out. */
const layout = (line: string) =>
  line
    .replace(/\d+(\.\d+)?/g, "N")
    .replace(/ (B|KiB|MiB)\b/g, " U")
    .replace(/N (ms|s)\b/g, "T");

/** Each redraw's line at `width`, drawn a second apart as the figures change. */
async function redrawsOf<Figures>(steps: readonly Figures[], describe: (read: () => Figures, clock: FakeClock) => (width: number) => string, width: number) {
  const clock = new FakeClock();
  let figures = steps[0] as Figures;
  const line = describe(() => figures, clock);
  const redraws: string[] = [];
  for (const step of steps) {
    figures = step;
    redraws.push(line(width));
    await clock.advance(1000);
  }
  return redraws;
}

// Issue 19: a field came and went from one redraw to the next as a figure's text changed width (the pipe's line, and the proxy's).
describe("tbucket proxy's progress line", () => {
  it("TCP: keeps the same fields from one redraw to the next as the figures change width", async () => {
    // Down a second at a time: 0 B/s, 512 B/s, 96.68 KiB/s, 1023.99 KiB/s, 1.09 MiB/s, 9.50 MiB/s; open going up and down.
    const perSecond = [0, 512, 99_000, 1023.99 * KiB, 1.09 * MiB, 9.5 * MiB];
    let bytesDown = 0;
    const steps: TcpProxyStats[] = perSecond.map((rate, at) => {
      bytesDown += rate;
      return { open: [1, 9, 10, 3, 12, 0][at]!, accepted: 12 + at, refused: 0, refusedBy: { connections: 0, concurrency: 0 }, evicted: 0, cut: 0, bytesUp: 100 * at, bytesDown };
    });
    for (const width of [30, 39, 46, 60, 80, 100]) {
      const redraws = await redrawsOf(steps, (read, clock) => describeTcpProgress(read, clock), width);
      expect([...new Set(redraws.map(layout))], `at ${width} columns: ${redraws.join(" | ")}`).toHaveLength(1);
      for (const line of redraws) expect(line.length).toBeLessThanOrEqual(width);
    }
    expect((await redrawsOf(steps, (read, clock) => describeTcpProgress(read, clock), 100))[4]).toBe("12 open, 16 accepted  up 400 B (100 B/s)  down 2.18 MiB (1.09 MiB/s)  4.0 s");
  });

  it("HTTP: keeps the same fields from one redraw to the next as the figures change width", async () => {
    // Requests a second: 0.0, 5.0, 120.0, 1500.0, 9.0; keys going up and down; the counts, which only grow, of as many digits.
    const perSecond = [0, 5, 120, 1500, 9];
    const keys = [1, 9, 10, 3, 12];
    let admitted = 1000;
    const steps = perSecond.map((rate, at) => {
      admitted += rate;
      return { tally: { admitted, queued: 0, refused: 0 } as HttpTally, keys: keys[at]! };
    });
    // From 46 columns, where the first field, the counts, fits whole.
    for (const width of [46, 60, 80, 100]) {
      const redraws = await redrawsOf(
        steps,
        (read, clock) =>
          describeHttpProgress(
            () => read().tally,
            () => read().keys,
            clock,
          ),
        width,
      );
      expect([...new Set(redraws.map(layout))], `at ${width} columns: ${redraws.join(" | ")}`).toHaveLength(1);
      for (const line of redraws) expect(line.length).toBeLessThanOrEqual(width);
    }
  });
});
