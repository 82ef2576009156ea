import { describe, expect, it } from "vitest";
import {
  alignColumns,
  describeRate,
  describeSize,
  humanAmount,
  humanRate,
  describeThroughput,
  exactSeconds,
  grouped,
  exactByteRate,
  humanByteRate,
  humanBytes,
  humanCountRate,
  humanDuration,
  humanWait,
  msToSeconds,
  percent,
  plural,
  round9,
  secondsDecimals,
  significant,
} from "../../src/core/format.js";

describe("numbers for people", () => {
  it("rounds float noise away and keeps nanoseconds", () => {
    expect(round9(0.1 + 0.2)).toBe(0.3);
    expect(msToSeconds(3125)).toBe(3.125);
    expect(exactSeconds(7333.333333)).toBe("7.333333333 s");
    expect(significant(6.125, 3)).toBe("6.13");
    expect(significant(2, 3)).toBe("2");
    expect(grouped(1_048_576)).toBe("1,048,576");
    expect(percent(0.23333)).toBe("23.33%");
    expect(secondsDecimals(1000)).toBe(0);
    expect(secondsDecimals(250)).toBe(1);
    expect(secondsDecimals(0.5)).toBe(4);
  });

  it("sizes and byte rates in binary units, with no exact figure added", () => {
    expect(humanBytes(512)).toBe("512 B");
    expect(humanBytes(1536)).toBe("1.50 KiB");
    expect(humanBytes(1024 ** 4 * 3)).toBe("3.00 TiB");
    expect(humanByteRate(1024 ** 2)).toBe("1.00 MiB/s");
    expect(humanByteRate(Infinity)).toBe("unlimited");
  });

  // Regression: --stats at --rate 0.1 said "limit 0 B/s = 0 B/s".
  it("byte rates below 100 B/s to three significant digits, not rounded to whole bytes", () => {
    expect([0.1, 2.5, 1 / 3, 99.4, 0].map(humanByteRate)).toEqual(["0.1 B/s", "2.5 B/s", "0.333 B/s", "99.4 B/s", "0 B/s"]);
    expect([100.4, 512].map(humanByteRate)).toEqual(["100 B/s", "512 B/s"]);
    expect([0.1, 512, 1024 ** 2, 6 * 1024 ** 3 / 3600].map(exactByteRate)).toEqual(["0.1 B/s", "512 B/s", "1,048,576 B/s", "1,789,570 B/s"]);
  });

  it("count rates to a tenth, per minute below one a second", () => {
    expect(humanCountRate(Infinity)).toBe("inf");
    expect(humanCountRate(123.4)).toBe("123/s");
    expect(humanCountRate(2.54)).toBe("2.5/s");
    expect(humanCountRate(0.5)).toBe("30.0/min");
    // Regression: a progress line's first draw read "0.0/min".
    expect(humanCountRate(0)).toBe("0/s");
  });

  it("durations: coarse for elapsed times, three digits for waits", () => {
    expect(humanDuration(349.6)).toBe("350 ms");
    expect(humanDuration(1234)).toBe("1.2 s");
    expect(humanDuration(125_000)).toBe("2m05s");
    expect(humanDuration(3_725_000)).toBe("1h02m05s");
    expect(humanDuration(Infinity)).toBe("∞");
    expect(humanWait(0)).toBe("0");
    expect(humanWait(0.35)).toBe("350 µs");
    expect(humanWait(12.5)).toBe("12.5 ms");
    expect(humanWait(3125)).toBe("3.13 s");
    expect(humanWait(125_000)).toBe("2m05s");
    expect(humanWait(Infinity)).toBe("∞");
  });

  it("rates and sizes of either kind of token, with the exact figure", () => {
    expect(describeRate("count", 5.000000000000001)).toBe("5/s");
    expect(describeRate("count", Infinity)).toBe("inf");
    expect(describeRate("bytes", 512)).toBe("512 B/s");
    expect(describeRate("bytes", 1024 ** 2)).toBe("1.00 MiB/s (1048576 B/s)");
    expect(describeRate("bytes", Infinity)).toBe("unlimited");
    expect(describeSize("count", 8)).toBe("8");
    expect(describeSize("bytes", 512)).toBe("512 B");
    expect(describeSize("bytes", 2048)).toBe("2.00 KiB (2048 B)");
    expect(describeThroughput("count", 6.125)).toBe("6.13/s");
    expect(describeThroughput("bytes", 1.2 * 1024 ** 2)).toBe("1.20 MiB/s");
  });
});

describe("aligned columns", () => {
  it("pads left-aligned cells on the right except in the last column", () => {
    expect(alignColumns([["KEY", "KIND", "RATE"], ["a", "bytes", "1/s"], ["long-key", "count", ""]])).toEqual([
      "KEY       KIND   RATE",
      "a         bytes  1/s",
      "long-key  count  ",
    ]);
  });

  it("pads right-aligned cells on the left, the last column too", () => {
    expect(alignColumns([["time", "n"], ["0", "10"], ["12.5", "3"]], { align: "right" })).toEqual(["time   n", "   0  10", "12.5   3"]);
  });

  it("takes an alignment per column and another gap", () => {
    expect(alignColumns([["a", "1", "x"], ["bbb", "22", "y"]], { align: ["left", "right", "left"], gap: " " })).toEqual(["a    1 x", "bbb 22 y"]);
  });
});

describe("counts of things", () => {
  it("are plural unless there is one", () => {
    expect(plural(1, "line")).toBe("1 line");
    expect(plural(0, "byte")).toBe("0 bytes");
    expect(plural(3, "bad line")).toBe("3 bad lines");
  });
});

describe("humanRate and humanAmount: a bucket's settings as the progress line shows a limit", () => {
  it.each([
    ["bytes", 2 * 1024 * 1024, "2.00 MiB/s"],
    ["bytes", 512, "512 B/s"],
    ["count", 5, "5/s"],
    ["count", 1 / 10, "0.1/s"],
    ["bytes", 0, "0 (paused)"],
    ["count", Infinity, "unlimited"],
  ] as const)("humanRate(%s, %d) = %s", (kind, rate, text) => {
    expect(humanRate(kind, rate)).toBe(text);
  });

  it("humanAmount rounds a count to hundredths and sizes bytes", () => {
    expect([humanAmount("count", 2.504), humanAmount("bytes", 54528)]).toEqual(["2.5", "53.25 KiB"]);
  });
});
