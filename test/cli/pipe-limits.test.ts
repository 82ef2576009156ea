// A private limit set in the pipe, end to end on the built binary: exact bytes, exit codes, messages, --stats.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("tbucket pipe with a set of limits", () => {
  it("--rate with --window: every byte comes through, the window sets the pace, and --stats names each limit", async () => {
    const input = randomBytes(1.5 * 1024 * 1024);
    const result = await runCli(["--rate", "8mb", "--window", "1mb/1s", "--stats-format", "json"], { input });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
    const stats = JSON.parse(result.stderr);
    expect(stats.bytes).toBe(input.length);
    expect(stats.limits).toEqual([
      { limit: 1, flag: "--rate 8mb", kind: "bucket", unit: "bytes", rate: 8 * 1024 ** 2, burst: 838_860, waitedSeconds: expect.any(Number) },
      { limit: 2, flag: "--window 1mb/1s", kind: "window", unit: "bytes", n: 1024 ** 2, windowSeconds: 1, waitedSeconds: expect.any(Number) },
    ]);
    // The second half MiB waits for the first MiB to leave the window, a second after it went.
    expect(stats.limitedBy[0]).toBe(2);
    expect(stats.seconds).toBeGreaterThanOrEqual(0.95);
    // Past the burst means nothing against a window, which lets its n through at once.
    expect(stats.averagePastBurst).toBe(null);
  });

  it("--lines with a line rate and a byte rate: lines whole, both counted, the text stats listing both", async () => {
    const input = Buffer.from(Array.from({ length: 300 }, (_, i) => `line ${i} ${"x".repeat(i % 40)}\n`).join(""));
    const result = await runCli(["--lines", "--rate", "1000/s", "--burst", "100", "--rate", "1mb", "--stats"], { input });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
    expect(result.stderr).toMatch(/^tbucket: [\d,]+ bytes \([^)]*\), 300 lines in .*; limits 1 --rate 1000\/s --burst 100 \(1000\/s, burst 100\)( waited [^,]+)?, 2 --rate 1mb \(1\.00 MiB\/s, burst 102\.40 KiB\)( waited [^;]+)?; (limited by [\d, ]+|none set a wait)\n$/);
  });

  it("--lines with lines alone limited by a rate and a window: the window holds the sixth line a second", async () => {
    const input = Buffer.from("one\ntwo\nthree\nfour\nfive\nsix\nseven\n");
    const result = await runCli(["--lines", "--rate", "1000/s", "--burst", "10", "--window", "5/1s", "--stats-format", "json"], { input });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
    const stats = JSON.parse(result.stderr);
    expect(stats).toMatchObject({ lines: 7, rateUnit: "lines/s", limitedBy: [2] });
    expect(stats.limits.map((limit: { unit: string }) => limit.unit)).toEqual(["count", "count"]);
    expect(stats.seconds).toBeGreaterThanOrEqual(0.95);
  });

  it.each([
    [["--rate", "1mb", "--burst", "1k", "--burst", "2k"], `tbucket: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst\n`],
    [["--rate", "1mb", "--window", "2mb"], `tbucket: --window: "2mb" is not a window: write N/W, at most N in any W; try "2mb/1s", "50gb/d" or "512k/10s"\n`],
    [["--rate", "1mb", "--window", "2mb/never"], `tbucket: --window: "2mb/never" is not a window: "never" is not a duration longer than zero; try "2mb/1s", "50gb/d" or "512k/10s"\n`],
    [["--rate", "1mb", "--window", "lots/1s"], `tbucket: --window: "lots/1s" is not a window: "lots" is not a whole number of bytes; try "2mb/1s", "50gb/d" or "512k/10s"\n`],
    [["--rate", "1mb", "--rate", "fast"], `tbucket: --rate: "fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"\n`],
    [["--lines", "--window", "1000/h", "--rate", "fast"], `tbucket: --rate: "fast" is not a rate; try "1mb" or "5/s"\n`],
  ])("refuses %j with one line and status 2", async (args, message) => {
    const result = await runCli(args, { input: "never read\n" });
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
    expect(result.stdout.length).toBe(0);
  });

  it("one --rate with --key works as before: the key is set and shared", async () => {
    const result = await runCli(["--key", "limits-e2e", "--store", "sqlite::memory:", "--rate", "inf"], { input: "as before\n" });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe("as before\n");
  });
});
