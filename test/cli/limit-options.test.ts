// The one grammar of a command's limits (--rate/--burst, --window, --concurrency), parsed in-process.
import { describe, expect, it } from "vitest";
import { type LimitGrammar, needsLimitSet, parseLimitOptions } from "../../src/cli/limit-options.js";
import { limitFlagsOf } from "../helpers/limit-flags.js";

/** Parses `args` as commander does for a command with the limit options, then resolves them. */
function limitsOf(args: string[], grammar: LimitGrammar) {
  return parseLimitOptions(limitFlagsOf(args), grammar);
}

const usageOf = (args: string[], grammar: LimitGrammar) => {
  try {
    limitsOf(args, grammar);
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
  return "no error";
};

const BYTES: LimitGrammar = { units: "bytes" };
const LINES: LimitGrammar = { units: "any" };
const LAUNCHES: LimitGrammar = { units: "count", byteRateHint: "pipe it" };

describe("parseLimitOptions", () => {
  it("keeps command-line order across the flags, the i-th burst with the i-th rate, and the default burst of each kind", () => {
    const { limits } = limitsOf(["--window", "1000/h", "--rate", "100/s", "--rate", "64kb", "--burst", "5", "--concurrency", "4", "--burst", "1mb"], LINES);
    expect(limits.map((limit) => limit.spec)).toEqual([
      { kind: "window", unit: "count", n: 1000, windowMs: 3_600_000 },
      { kind: "bucket", unit: "count", rate: 100, burst: 5 },
      { kind: "bucket", unit: "bytes", rate: 65_536, burst: 1_048_576 },
      { kind: "concurrency", n: 4 },
    ]);
    expect(limits.map((limit) => limit.flag)).toEqual(["--window 1000/h", "--rate 100/s --burst 5", "--rate 64kb --burst 1mb", "--concurrency 4"]);
    const defaults = limitsOf(["--rate", "100/s", "--rate", "4mb"], LINES).limits;
    expect(defaults.map((limit) => [limit.spec, limit.burstGiven])).toEqual([
      [{ kind: "bucket", unit: "count", rate: 100, burst: 1 }, false],
      [{ kind: "bucket", unit: "bytes", rate: 4_194_304, burst: 419_430 }, false],
    ]);
  });

  it("reads a window's N as a size for bytes and a count otherwise, and its W as a duration or a bare unit", () => {
    const windows = (args: string[], grammar: LimitGrammar) => limitsOf(args, grammar).limits.map((limit) => limit.spec);
    expect(windows(["--window", "2mb/1s", "--window", "50gb/d", "--window", "1000/h"], BYTES)).toEqual([
      { kind: "window", unit: "bytes", n: 2 * 1024 ** 2, windowMs: 1000 },
      { kind: "window", unit: "bytes", n: 50 * 1024 ** 3, windowMs: 86_400_000 },
      // Without --lines a bare number is bytes, as in --rate 100.
      { kind: "window", unit: "bytes", n: 1000, windowMs: 3_600_000 },
    ]);
    expect(windows(["--window", "1000/h", "--window", "2mb/1.5s"], LINES)).toEqual([
      { kind: "window", unit: "count", n: 1000, windowMs: 3_600_000 },
      { kind: "window", unit: "bytes", n: 2 * 1024 ** 2, windowMs: 1500 },
    ]);
    expect(windows(["--window", "10/1s", "--window", "100/15m"], LAUNCHES)).toEqual([
      { kind: "window", unit: "count", n: 10, windowMs: 1000 },
      { kind: "window", unit: "count", n: 100, windowMs: 900_000 },
    ]);
  });

  it("says what to write instead, naming the flag, for every bad value", () => {
    const cases: Array<[string[], LimitGrammar, string]> = [
      [["--rate", "5", "--burst", "1", "--burst", "2"], LAUNCHES, `UsageError: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`],
      [["--burst", "2"], LAUNCHES, `UsageError: --burst: 1 burst for no rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`],
      [["--window", "5mb"], BYTES, `UsageError: --window: "5mb" is not a window: write N/W, at most N in any W; try "2mb/1s", "50gb/d" or "512k/10s"`],
      [["--window", "10/"], LAUNCHES, `UsageError: --window: "10/" is not a window: write N/W, at most N in any W; try "100/1m", "1000/h" or "10/1.5s"`],
      [["--window", "ten/1s"], LAUNCHES, `UsageError: --window: "ten/1s" is not a window: "ten" is not a whole number 1 or more; try "100/1m", "1000/h" or "10/1.5s"`],
      [["--window", "0/1s"], LAUNCHES, `UsageError: --window: "0/1s" is not a window: "0" is not a whole number 1 or more; try "100/1m", "1000/h" or "10/1.5s"`],
      [["--window", "10/0s"], LAUNCHES, `UsageError: --window: "10/0s" is not a window: "0s" is not a duration longer than zero; try "100/1m", "1000/h" or "10/1.5s"`],
      [["--window", "10/soon"], LAUNCHES, `UsageError: --window: "10/soon" is not a window: "soon" is not a duration longer than zero; try "100/1m", "1000/h" or "10/1.5s"`],
      [["--window", "2mb/1s"], LAUNCHES, `UsageError: --window: "2mb/1s" is a window of bytes, not of counts; pipe it`],
      [["--rate", "1mb"], LAUNCHES, `UsageError: --rate: "1mb" is a byte rate; pipe it`],
      [["--rate", "fast"], BYTES, `UsageError: --rate: "fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
      [["--rate", "1mb", "--burst", "lots"], LINES, `UsageError: --burst: "lots" is not a size; try "8k", "4mb" or "1000"`],
      [["--rate", "5", "--concurrency", "0"], LAUNCHES, `UsageError: --concurrency: "0" is not a whole number 1 or more; try "1" or "10"`],
      [["--rate", "5", "--concurrency", "2", "--concurrency", "3"], LAUNCHES, `UsageError: --concurrency: given 2 times; give it once, e.g. "--concurrency 4"`],
      [["--rate", "0"], LAUNCHES, `UsageError: --rate: "0" is not a count rate: it must be more than zero; try "5", "300/m" or "1/10s"`],
    ];
    for (const [args, grammar, message] of cases) expect(usageOf(args, grammar), args.join(" ")).toBe(message);
  });

  it("with a key: a rate of 0 pauses it, and a --burst alone sets its burst", () => {
    expect(limitsOf(["--rate", "0"], { ...LAUNCHES, keyed: true }).limits[0]!.spec).toEqual({ kind: "bucket", unit: "count", rate: 0, burst: 1 });
    expect(limitsOf(["--burst", "4mb"], { ...BYTES, keyed: true })).toEqual({ limits: [], loneBurst: 4 * 1024 ** 2 });
  });

  it("with autoRate (simulate --suggest): a lone --rate auto makes no limit, and its --burst is the lone burst", () => {
    const SEARCHED: LimitGrammar = { units: "count", autoRate: true };
    expect(limitsOf(["--rate", "auto", "--burst", "4"], SEARCHED)).toEqual({ limits: [], loneBurst: 4 });
    expect(limitsOf(["--rate", "Auto"], SEARCHED)).toEqual({ limits: [], loneBurst: undefined });
    expect(usageOf(["--rate", "auto", "--burst", "4", "--burst", "5"], SEARCHED)).toBe(
      `UsageError: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`,
    );
    // Without it, auto is no rate.
    expect(usageOf(["--rate", "auto"], { units: "count" })).toBe(`UsageError: --rate: "auto" is not a count rate; try "5", "300/m" or "1/10s"`);
  });

  it("without a byteRateHint, a count grammar says what the units say", () => {
    expect(usageOf(["--rate", "1mb"], { units: "count" })).toBe(`UsageError: --rate: "1mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"`);
    expect(usageOf(["--window", "1mb/1s"], { units: "count" })).toBe(`UsageError: --window: "1mb/1s" is a window of bytes, not of counts; try "100/1m", "1000/h" or "10/1.5s"`);
  });

  it("needs a set beyond one bucket", () => {
    const one = limitsOf(["--rate", "5"], LAUNCHES).limits;
    const two = limitsOf(["--rate", "5", "--window", "100/m"], LAUNCHES).limits;
    const window = limitsOf(["--window", "100/m"], LAUNCHES).limits;
    expect([needsLimitSet(one), needsLimitSet(two), needsLimitSet(window)]).toEqual([false, true, true]);
  });
});
