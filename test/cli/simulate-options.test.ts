import { describe, expect, it } from "vitest";
import { chartWidth } from "../../src/cli/simulate/run.js";
import { parseSimulateOptions, type SimulateFlags } from "../../src/cli/simulate/options.js";
import { limitFlagsOf } from "../helpers/limit-flags.js";

describe("simulate options (parsed apart from behaviour)", () => {
  it("resolves rates and bursts by the cost unit: counts, or bytes with --cost bytes", () => {
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "300/m", "-b", "10"]), arrivals: "burst 1" })).toMatchObject({ ratePerSecond: 5, burst: 10, costUnit: "count" });
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "1mb", "-b", "4mb"]), cost: "bytes", trace: "access.log" })).toMatchObject({
      ratePerSecond: 1024 * 1024,
      burst: 4 * 1024 * 1024,
      costUnit: "bytes",
    });
  });

  it("--max-wait implies the queue policy; --per-key takes --max-keys", () => {
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", maxWait: "250ms" })).toMatchObject({ policy: "queue", maxWaitMs: 250 });
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1" })).toMatchObject({ policy: "drop", maxWaitMs: Infinity });
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", perKey: true, maxKeys: "100", keyField: "2" })).toMatchObject({
      perKey: true,
      maxKeys: 100,
      keyField: 2,
    });
  });

  it("--per-key keys IPv6 by /56 unless --ipv6-prefix says otherwise", () => {
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", perKey: true })).toMatchObject({ ipv6Prefix: 56 });
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", perKey: true, ipv6Prefix: "128" })).toMatchObject({ ipv6Prefix: 128 });
  });

  it("a pattern knows its length and whether it is random; --seed is kept", () => {
    const config = parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "steady 2/s for 3s, poisson 1/s for 2s", seed: "42" });
    expect(config.source).toMatchObject({ kind: "pattern", durationMs: 5000, random: true });
    expect(config.seed).toBe(42);
  });

  it("--suggest searches the burst by default, the rate with --rate auto, aiming at reject<=1% unless told", () => {
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5"]), arrivals: "burst 1", suggest: true })).toMatchObject({
      burst: undefined,
      suggest: { kind: "reject", maxShare: 0.01 },
    });
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "auto", "-b", "4"]), arrivals: "burst 1", suggest: true, target: "p99wait<=2s", policy: "queue" })).toMatchObject({
      ratePerSecond: "auto",
      burst: 4,
      suggest: { kind: "wait", quantile: 0.99, maxWaitMs: 2000 },
    });
  });

  it.each([
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", trace: "x" }, `--arrivals and --trace: choose one; a pattern or a file of events`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", cost: "bytes" }, `--cost bytes: needs sizes; use --trace with an access log or --cost-field N`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", seed: "1" }, `--seed: only with --arrivals; a trace is not random`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", keyField: "2" }, `--key-field: only with --trace; a pattern's arrivals cost 1 and have no key`],
    [{ ...limitFlagsOf(["-r", "5mb", "-b", "1"]), arrivals: "burst 1" }, `--rate: "5mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1.5"]), arrivals: "burst 1" }, `--burst: "1.5" is not a whole number 1 or more; try "1" or "10"`],
    [{ ...limitFlagsOf(["-r", "1mb", "-b", "1.5"]), cost: "bytes", trace: "-" }, `--burst: "1.5" is not a whole number of bytes (1.5); try "8k", "4mb" or "1000"`],
    [{ ...limitFlagsOf(["-r", "1mb"]), cost: "bytes", trace: "-" }, `--burst: missing; the bucket under test needs one, e.g. "--burst 4mb" (or --suggest to search it)`],
    [{ ...limitFlagsOf(["-r", "auto"]), arrivals: "burst 1", suggest: true }, `--burst: missing; --rate auto searches the rate for a given burst, e.g. "--burst 10"`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", maxKeys: "3" }, `--max-keys: only with --per-key; try "--per-key --max-keys 3"`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", perKey: true, maxKeys: "0" }, `--max-keys: "0" is not a whole number 1 or more; try "1" or "10"`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", ipv6Prefix: "64" }, `--ipv6-prefix: only with --per-key; try "--per-key --ipv6-prefix 64"`],
    ...["0", "129", "56.5", "/56", "all"].map((bits): [SimulateFlags, string] => [
      { ...limitFlagsOf(["-r", "5", "-b", "1"]), trace: "-", perKey: true, ipv6Prefix: bits },
      `--ipv6-prefix: "${bits}" is not a prefix length; give the bits of an IPv6 address that make one client, 1 to 128`,
    ]),
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", step: "0" }, `--step: "0" is no width; try "1s" or "100ms"`],
    [{ ...limitFlagsOf(["-r", "5", "-b", "1"]), arrivals: "burst 1", chart: true, format: "csv" }, `--chart: not with --format csv, which is for programs; use --format summary or table, or --svg FILE`],
    // Regression (issue 15, point 9): --burst was silently ignored by a search of the burst.
    [
      { ...limitFlagsOf(["-r", "5", "-b", "10"]), arrivals: "burst 1", suggest: true },
      `--burst: not with --suggest at a fixed rate, which searches the burst; leave --burst out, or give --rate auto to search the rate for this burst`,
    ],
    [{ ...limitFlagsOf(["-r", "5"]), arrivals: "burst 1", suggest: true, format: "jsonl" }, `--format: jsonl is not a --suggest format; try summary, csv or json`],
    [{ ...limitFlagsOf(["-r", "5"]), arrivals: "burst 1", suggest: true, svg: "x.svg" }, `--svg: not with --suggest; run again with the suggested setting to plot it`],
    [{ ...limitFlagsOf(["-r", "5"]), arrivals: "burst 1", suggest: true, target: "fast" }, `--target: "fast" is not a target; try "reject<=1%" or "p99wait<=500ms"`],
  ])("refuses %j", (flags, message) => {
    expect(() => parseSimulateOptions(flags)).toThrow(message);
  });
});

describe("the chart's width", () => {
  it("is the terminal's, else $COLUMNS when a whole number, else 80", () => {
    expect(chartWidth({ isTTY: true, columns: 40 }, { COLUMNS: "120" })).toBe(40);
    expect(chartWidth({ isTTY: false }, { COLUMNS: "120" })).toBe(120);
    expect(chartWidth({ isTTY: true, columns: 0 }, {})).toBe(80);
    for (const columns of ["", "wide", "-3", "0", "12.5"]) expect(chartWidth({}, { COLUMNS: columns })).toBe(80);
  });
});

describe("simulate options: a set of limits", () => {
  it("one --rate is the bucket under test alone: no set", () => {
    expect(parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "10"]), arrivals: "burst 1" })).toMatchObject({ ratePerSecond: 5, burst: 10, limits: undefined });
  });

  it("pairs the i-th --burst with the i-th --rate, gives later rates their kind's default burst, and numbers limits in command-line order", () => {
    const config = parseSimulateOptions({ ...limitFlagsOf(["-r", "5", "-b", "10", "--window", "1000/h", "-r", "300/m", "-b", "4", "-r", "2"]), arrivals: "burst 1" });
    expect(config).toMatchObject({ ratePerSecond: 5, burst: 10 });
    expect(config.limits).toEqual([
      { kind: "bucket", unit: "count", rate: 5, burst: 10 },
      { kind: "window", unit: "count", n: 1000, windowMs: 3_600_000 },
      { kind: "bucket", unit: "count", rate: 5, burst: 4 },
      { kind: "bucket", unit: "count", rate: 2, burst: 1 },
    ]);
    // A --window before the first --rate is limit 1; the bucket under test is still the first --rate.
    const windowFirst = parseSimulateOptions({ ...limitFlagsOf(["--window", "3/1s", "-r", "5", "-b", "10"]), arrivals: "burst 1" });
    expect(windowFirst).toMatchObject({ ratePerSecond: 5, burst: 10 });
    expect(windowFirst.limits?.map((limit) => limit.kind)).toEqual(["window", "bucket"]);
  });

  it("counts bytes in every limit with --cost bytes: byte rates, sizes for bursts and windows, 100 ms of a rate by default", () => {
    const config = parseSimulateOptions({ ...limitFlagsOf(["-r", "1mb", "-b", "4mb", "-r", "10mb", "--window", "50gb/d"]), cost: "bytes", trace: "access.log" });
    expect(config.limits).toEqual([
      { kind: "bucket", unit: "bytes", rate: 2 ** 20, burst: 4 * 2 ** 20 },
      { kind: "bucket", unit: "bytes", rate: 10 * 2 ** 20, burst: 2 ** 20 },
      { kind: "window", unit: "bytes", n: 50 * 2 ** 30, windowMs: 86_400_000 },
    ]);
  });
});
