import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatByteRate,
  formatByteSize,
  formatCountRate,
  formatDuration,
  parseAnyRate,
  parseByteRate,
  parseByteSize,
  parseCount,
  parseCountRate,
  parseDuration,
  parseRateOfKind,
  parseSizeOfKind,
  parseWindowOfKind,
  parseAnyWindow,
  rateKindOf,
  UnitError,
} from "../../src/core/units.js";
import { defaultBurst } from "../../src/core/default-burst.js";

describe("byte rates", () => {
  it.each([
    ["1mb", 1024 ** 2],
    ["1MB", 1024 ** 2],
    ["1Mb", 1024 ** 2],
    ["512k", 512 * 1024],
    ["1.5MiB/s", 1.5 * 1024 ** 2],
    ["10mbit", 1_250_000],
    ["250kbps", 31_250],
    ["100", 100],
    ["100b", 100],
    ["6gb/h", (6 * 1024 ** 3) / 3600],
    ["1kb/10s", 102.4],
    ["2t", 2 * 1024 ** 4],
    ["inf", Infinity],
    ["unlimited", Infinity],
  ])("%s is %d bytes per second", (text, want) => {
    expect(parseByteRate(text)).toBeCloseTo(want, 9);
  });

  it.each([
    ["fast", `"fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["0", `"0" is not a byte rate: it must be more than zero; try "1mb", "512k/s" or "10mbit"`],
    ["-1mb", `"-1mb" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["NaN", `"NaN" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["1e300", `"1e300" is not a byte rate: it is too large (at most 9007199254740991 bytes/s); try "1mb", "512k/s" or "10mbit"`],
    ["9007199254740994", `"9007199254740994" is not a byte rate: it is too large (at most 9007199254740991 bytes/s); try "1mb", "512k/s" or "10mbit"`],
    // Regression (issue 12): 1e309 reads as Infinity, which was "must be more than zero".
    ["1e309", `"1e309" is not a byte rate: it is too large (at most 9007199254740991 bytes/s); try "1mb", "512k/s" or "10mbit"`],
    ["1e-400", `"1e-400" is not a byte rate: it is too small; try "1mb", "512k/s" or "10mbit"`],
    ["Infinity mb", `"Infinity mb" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["0x10", `"0x10" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["-0", `"-0" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["1mb junk", `"1mb junk" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["1mb/1e309s", `"1mb/1e309s" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["5mbps/s", `"5mbps/s" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["1mb/0s", `"1mb/0s" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    ["", `"" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
  ])("refuses %j with a message that quotes it and shows an example", (text, message) => {
    expect(() => parseByteRate(text)).toThrow(new UnitError(message));
  });
});

describe("a rate of 0 where it means paused (allowZero)", () => {
  it.each([
    ["0", () => parseByteRate("0", { allowZero: true })],
    ["0mb", () => parseByteRate("0mb", { allowZero: true })],
    ["0.0kbit", () => parseByteRate("0.0kbit", { allowZero: true })],
    ["0/s", () => parseCountRate("0/s", { allowZero: true })],
    ["0/m", () => parseCountRate("0/m", { allowZero: true })],
  ])("accepts %s as 0", (_text, parse) => {
    expect(parse()).toBe(0);
  });

  it("still refuses a number too small to tell from zero, and a negative one", () => {
    expect(() => parseByteRate("1e-400", { allowZero: true })).toThrow(`"1e-400" is not a byte rate: it is too small`);
    expect(() => parseCountRate("-1", { allowZero: true })).toThrow(`"-1" is not a count rate`);
    expect(parseAnyRate("0mb", { allowZero: true })).toEqual({ kind: "bytes", perSecond: 0 });
    expect(parseAnyRate("0", { allowZero: true })).toEqual({ kind: "count", perSecond: 0 });
  });
});

describe("count rates", () => {
  it.each([
    ["5", 5],
    ["5/s", 5],
    ["300/m", 5],
    ["1000/h", 1000 / 3600],
    ["20000/d", 20000 / 86400],
    ["1/10s", 0.1],
    ["100/15m", 100 / 900],
    ["2/1.5s", 2 / 1.5],
    ["inf", Infinity],
  ])("%s is %d per second", (text, want) => {
    expect(parseCountRate(text)).toBeCloseTo(want, 12);
  });

  it("refuses a byte rate, saying that is what it is", () => {
    expect(() => parseCountRate("1mb")).toThrow(`"1mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"`);
  });

  it("parseAnyRate tells the kinds apart", () => {
    expect(parseAnyRate("100/s")).toEqual({ kind: "count", perSecond: 100 });
    expect(parseAnyRate("1kb")).toEqual({ kind: "bytes", perSecond: 1024 });
    expect(() => parseAnyRate("fast")).toThrow(`"fast" is not a rate; try "1mb" or "5/s"`);
  });
});

describe("durations, sizes and counts", () => {
  it.each([
    ["250ms", 250],
    ["2s", 2000],
    ["1.5m", 90_000],
    ["1h", 3_600_000],
    ["3", 3000],
    ["0", 0],
  ])("duration %s is %d ms", (text, want) => {
    expect(parseDuration(text)).toBe(want);
  });

  it("refuses a bad duration", () => {
    expect(() => parseDuration("soon")).toThrow(`"soon" is not a duration; try "250ms", "2s" or "1.5m"`);
    expect(() => parseDuration("5mb")).toThrow(UnitError);
  });

  it.each([
    ["8k", 8192],
    ["4mb", 4 * 1024 ** 2],
    ["1000", 1000],
    ["1.5k", 1536],
  ])("size %s is %d bytes", (text, want) => {
    expect(parseByteSize(text)).toBe(want);
  });

  it("refuses sizes that are not whole bytes, or zero", () => {
    expect(() => parseByteSize("1.5")).toThrow(`"1.5" is not a whole number of bytes (1.5); try "8k", "4mb" or "1000"`);
    expect(() => parseByteSize("0")).toThrow(`"0" is not a size: it must be more than zero; try "8k", "4mb" or "1000"`);
    expect(() => parseByteSize("1mb/s")).toThrow(`"1mb/s" is not a size; try "8k", "4mb" or "1000"`);
  });

  it("counts are whole and at least the minimum", () => {
    expect(parseCount("10")).toBe(10);
    expect(parseCount("0", 0)).toBe(0);
    expect(() => parseCount("0")).toThrow(`"0" is not a whole number 1 or more; try "1" or "10"`);
    expect(() => parseCount("2.5")).toThrow(UnitError);
  });
});

describe("values too large, too small or malformed (issue 12)", () => {
  const largest = Number.MAX_SAFE_INTEGER;

  it.each([
    ["parseCountRate", parseCountRate, "1e309", `"1e309" is not a count rate: it is too large (at most ${largest}/s); try "5", "300/m" or "1/10s"`],
    ["parseDuration", parseDuration, "1e309", `"1e309" is not a duration: it is too large (at most ${largest}ms); try "250ms", "2s" or "1.5m"`],
    ["parseDuration", parseDuration, "1e-400", `"1e-400" is not a duration: it is too small; try "250ms", "2s" or "1.5m"`],
    ["parseDuration", parseDuration, "-0", `"-0" is not a duration; try "250ms", "2s" or "1.5m"`],
    ["parseByteSize", parseByteSize, "1e309", `"1e309" is not a size: it is too large (at most ${largest} bytes); try "8k", "4mb" or "1000"`],
    // 2^53 + 1 reads as 2^53: no longer exact, so refused rather than rounded.
    ["parseByteSize", parseByteSize, "9007199254740993", `"9007199254740993" is not a size: it is too large (at most ${largest} bytes); try "8k", "4mb" or "1000"`],
    ["parseByteSize", parseByteSize, "Infinity", `"Infinity" is not a size; try "8k", "4mb" or "1000"`],
    ["parseCount", (text: string) => parseCount(text), "9007199254740993", `"9007199254740993" is not a whole number: it is too large (at most ${largest}); try "1" or "10"`],
    ["parseCount", (text: string) => parseCount(text), "1e309", `"1e309" is not a whole number: it is too large (at most ${largest}); try "1" or "10"`],
    ["parseCount", (text: string) => parseCount(text), "-0", `"-0" is not a whole number 1 or more; try "1" or "10"`],
    ["parseCount", (text: string) => parseCount(text), "0x10", `"0x10" is not a whole number 1 or more; try "1" or "10"`],
    ["parseCount", (text: string) => parseCount(text), "10 jobs", `"10 jobs" is not a whole number 1 or more; try "1" or "10"`],
    ["parseCount min 0", (text: string) => parseCount(text, 0), "", `"" is not a whole number 0 or more; try "0" or "8"`],
    ["parseCount min 0", (text: string) => parseCount(text, 0), "NaN", `"NaN" is not a whole number 0 or more; try "0" or "8"`],
    ["parseAnyRate", parseAnyRate, "1e309", `"1e309" is not a count rate: it is too large (at most ${largest}/s); try "5", "300/m" or "1/10s"`],
    ["parseAnyRate", parseAnyRate, "1e309mb", `"1e309mb" is not a byte rate: it is too large (at most ${largest} bytes/s); try "1mb", "512k/s" or "10mbit"`],
  ])("%s refuses %j", (_name, parse, text, message) => {
    expect(() => parse(text)).toThrow(new UnitError(message));
  });

  it("accepts the largest values, and counts written with an exponent", () => {
    expect(parseByteSize(String(largest))).toBe(largest);
    expect(parseCount(String(largest))).toBe(largest);
    expect(parseCount("1e3")).toBe(1000);
    expect(parseCount("0e0", 0)).toBe(0);
    expect(parseByteRate(`${largest}`)).toBe(largest);
  });
});

describe("round trips (property)", () => {
  const wholeBytes = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });

  it("every formatted byte size parses back to itself", () => {
    fc.assert(fc.property(wholeBytes, (bytes) => parseByteSize(formatByteSize(bytes)) === bytes));
  });

  it("every formatted byte rate parses back to itself", () => {
    fc.assert(fc.property(wholeBytes, (bytes) => parseByteRate(formatByteRate(bytes)) === bytes));
  });

  it("every formatted count rate parses back to itself", () => {
    const rates = fc.double({ min: 1e-6, max: 1e9, noNaN: true, noDefaultInfinity: true });
    fc.assert(fc.property(rates, (rate) => parseCountRate(formatCountRate(rate)) === rate));
  });

  it("every formatted duration parses back to itself", () => {
    const ms = fc.integer({ min: 1, max: 10 ** 12 });
    fc.assert(fc.property(ms, (value) => parseDuration(formatDuration(value)) === value));
  });

  it("junk is refused with a UnitError, never a crash or a number", () => {
    const junk = fc.string().filter((text) => !/^\s*(\d|\.\d|inf|unlimited)/i.test(text));
    fc.assert(
      fc.property(junk, (text) => {
        for (const parse of [parseByteRate, parseCountRate, parseDuration, parseByteSize, parseCount]) {
          expect(() => parse(text)).toThrow(UnitError);
        }
      }),
    );
  });
});

describe("a rate or size of a known kind", () => {
  it("reads bytes with the byte grammar and counts with the count grammar", () => {
    expect(parseRateOfKind("bytes", "1mb")).toBe(1024 ** 2);
    expect(parseRateOfKind("count", "300/m")).toBe(5);
    expect(parseSizeOfKind("bytes", "4k")).toBe(4096);
    expect(parseSizeOfKind("count", "10")).toBe(10);
  });

  it("refuses the other kind's units, and zero unless allowed", () => {
    expect(() => parseRateOfKind("count", "1mb")).toThrow(/byte rate, not a count rate/);
    expect(() => parseSizeOfKind("count", "4k")).toThrow(UnitError);
    expect(() => parseRateOfKind("bytes", "0")).toThrow(/more than zero/);
    expect(parseRateOfKind("bytes", "0", { allowZero: true })).toBe(0);
  });
});

describe("the default burst", () => {
  it("is 100 ms of a byte rate (at least 1 byte), 1 MiB unlimited, and 1 for a count", () => {
    expect(defaultBurst("bytes", 1024 ** 2)).toBe(104_857);
    expect(defaultBurst("bytes", 5)).toBe(1);
    expect(defaultBurst("bytes", Infinity)).toBe(1024 ** 2);
    expect(defaultBurst("count", 600)).toBe(1);
  });
});

describe("the kind a rate's unit names", () => {
  it.each([
    ["5/s", "count"],
    ["300/m", "count"],
    ["1mb", "bytes"],
    ["10mbit", "bytes"],
    ["0mb", "bytes"],
    ["1e300mb", "bytes"],
    ["inf", undefined],
    ["5 apples", undefined],
    ["", undefined],
  ])("%j is %s", (text, kind) => {
    expect(rateKindOf(text)).toBe(kind);
  });
});

describe("windows", () => {
  it.each([
    ["count", "100/1m", { n: 100, windowMs: 60_000 }],
    ["count", "1000/h", { n: 1000, windowMs: 3_600_000 }],
    ["count", "10/1.5s", { n: 10, windowMs: 1500 }],
    ["count", " 5 / 250ms ", { n: 5, windowMs: 250 }],
    ["bytes", "2mb/1s", { n: 2 * 1024 ** 2, windowMs: 1000 }],
    ["bytes", "50gb/d", { n: 50 * 1024 ** 3, windowMs: 86_400_000 }],
    ["bytes", "1000/10s", { n: 1000, windowMs: 10_000 }],
  ] as const)("%s window %j", (kind, text, want) => {
    expect(parseWindowOfKind(kind, text)).toEqual(want);
  });

  it.each([
    ["count", "100", `"100" is not a window: write N/W, at most N in any W; try "100/1m", "1000/h" or "10/1.5s"`],
    ["count", "100/fast", `"100/fast" is not a window: "fast" is not a duration longer than zero; try "100/1m", "1000/h" or "10/1.5s"`],
    ["count", "100/0s", `"100/0s" is not a window: "0s" is not a duration longer than zero; try "100/1m", "1000/h" or "10/1.5s"`],
    ["count", "2mb/1s", `"2mb/1s" is a window of bytes, not of counts; try "100/1m", "1000/h" or "10/1.5s"`],
    ["bytes", "1.5/1s", `"1.5/1s" is not a window: "1.5" is not a whole number of bytes; try "2mb/1s", "50gb/d" or "512k/10s"`],
    ["count", "0/1s", `"0/1s" is not a window: "0" is not a whole number 1 or more; try "100/1m", "1000/h" or "10/1.5s"`],
    ["count", "1.5/1s", `"1.5/1s" is not a window: "1.5" is not a whole number 1 or more; try "100/1m", "1000/h" or "10/1.5s"`],
  ] as const)("refuses %s window %j", (kind, text, message) => {
    expect(() => parseWindowOfKind(kind, text)).toThrow(new UnitError(message));
  });

  it("of either kind, the unit of N deciding: a plain N counts, a byte unit counts bytes", () => {
    expect(parseAnyWindow("1000/h")).toEqual({ kind: "count", n: 1000, windowMs: 3_600_000 });
    expect(parseAnyWindow("2mb/1.5s")).toEqual({ kind: "bytes", n: 2 * 1024 ** 2, windowMs: 1500 });
    for (const text of ["/1s", "10/", "10"]) {
      expect(() => parseAnyWindow(text)).toThrow(new UnitError(`"${text}" is not a window: write N/W, at most N in any W; try "1000/h" (lines) or "2mb/1s" (bytes)`));
    }
    expect(() => parseAnyWindow("1.1k/1s")).toThrow(new UnitError(`"1.1k/1s" is not a window: "1.1k" is not a whole number of bytes; try "1000/h" (lines) or "2mb/1s" (bytes)`));
  });
});
