// Hostile input to the private limit sets of pipe, run and simulate, end to end on the built binary: exact bytes, exit codes, messages.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("private limit sets, given what breaks things", () => {
  it.each([
    [["--lines", "--window", "5b/1s"], "a line"],
    [["--lines", "--null", "--rate", "1mb", "--window", "5b/1s"], "a record"],
  ])("%j: a line longer than a byte window's n can never go out whole: what came before is written, then one line and status 1", async (args, record) => {
    const input = args.includes("--null") ? "ab\0hello world\0ab\0" : "ab\nhello world\nab\n";
    const result = await runCli(args, { input, timeoutMs: 5000 });
    expect(result.stdout.toString()).toBe(input.slice(0, 3));
    expect(result.stderr).toBe(
      `tbucket: ${record} of 12 bytes can never go out whole: --window 5b/1s lets 5 bytes through in any 1.0 s; give --window a larger n, or drop --lines to let lines be split\n`,
    );
    expect(result.code).toBe(1);
  });

  const TRY_BYTES = `try "2mb/1s", "50gb/d" or "512k/10s"`;
  const TRY_ANY = `try "1000/h" (lines) or "2mb/1s" (bytes)`;
  it.each([
    [["--window", "0/1s"], `"0/1s" is not a window: "0" must be more than zero; ${TRY_BYTES}`],
    [["--window", "1e20/1s"], `"1e20/1s" is not a window: "1e20" is too large (at most 9007199254740991 bytes); ${TRY_BYTES}`],
    [["--window", "9007199254740993/1s"], `"9007199254740993/1s" is not a window: "9007199254740993" is too large (at most 9007199254740991 bytes); ${TRY_BYTES}`],
    [["--lines", "--window", "1e20/1s"], `"1e20/1s" is not a window: "1e20" is too large (at most 9007199254740991); ${TRY_ANY}`],
    [["--window", "10/1e-9ms"], `"10/1e-9ms" is not a window: "1e-9ms" is shorter than 1 ms, the least a window may be; ${TRY_BYTES}`],
    [["--lines", "--window", "10/0.5ms"], `"10/0.5ms" is not a window: "0.5ms" is shorter than 1 ms, the least a window may be; ${TRY_ANY}`],
    [["--window", "1.5/1s"], `"1.5/1s" is not a window: "1.5" is not a whole number of bytes; ${TRY_BYTES}`],
    [["--window", "inf/1s"], `"inf/1s" is not a window: "inf" is not a whole number of bytes; ${TRY_BYTES}`],
  ])("refuses %j saying why, with status 2", async (args, message) => {
    const result = await runCli(args, { input: "never read\n" });
    expect(result.stderr).toBe(`tbucket: --window: ${message}\n`);
    expect(result.code).toBe(2);
    expect(result.stdout.length).toBe(0);
  });

  it("a window of 1 ms, the least, works: every byte comes through", async () => {
    const result = await runCli(["--window", "5/1ms"], { input: "hello world\n" });
    expect([result.code, result.stdout.toString(), result.stderr]).toEqual([0, "hello world\n", ""]);
  });

  const windows = (count: number, unit = "") => Array.from({ length: count }, (_, i) => ["--window", `${i + 1}${unit}/1s`]).flat();
  it.each([
    [[...windows(32, "kb")], "32"],
    [["run", "--rate", "5/s", ...windows(31), "--count", "1", "--", "true"], "32"],
    [["simulate", "--rate", "5/s", "--burst", "1", ...windows(31), "--arrivals", "burst 1"], "32"],
  ])("more limits than a set holds: one usage line, status 2 (%#)", async (args, count) => {
    const result = await runCli(args, { input: "never read\n" });
    expect(result.stderr).toBe(
      `tbucket: --rate, --window, --concurrency: ${count} limits given, at most 31 make a set; drop the ones that never bind (a wider window of the same rate, a duplicate)\n`,
    );
    expect(result.code).toBe(2);
    expect(result.stdout.length).toBe(0);
  });

  it("31 limits, the most, work", async () => {
    const result = await runCli(windows(31, "kb"), { input: "hello\n" });
    expect([result.code, result.stdout.toString(), result.stderr]).toEqual([0, "hello\n", ""]);
  });

  it("run --max-wait under a window: the launches it would hold too long are skipped, counted, and the window named as the limit that refused them", async () => {
    const text = await runCli(["run", "--window", "2/1s", "--max-wait", "100ms", "--count", "5", "--stats", "--", "true"]);
    expect(text.code).toBe(1);
    expect(text.stderr).toMatch(/^jobs: +2 started, 2 succeeded, 0 failed, 3 skipped, 0 retried\n(.*\n){2}limits: +1 --window 2\/1s \(2 in any 1\.0 s\) refused 3; limited by 1\n$/);
    const json = await runCli(["run", "--window", "2/1s", "--max-wait", "100ms", "--count", "5", "--stats-format", "json", "--", "true"]);
    const stats = JSON.parse(json.stderr);
    expect([json.code, stats.skipped, stats.limits, stats.limitedBy]).toEqual([
      1,
      3,
      [{ limit: 1, flag: "--window 2/1s", kind: "window", unit: "count", n: 2, windowSeconds: 1, waitedSeconds: 0, refused: 3 }],
      [1],
    ]);
  });

  it("a window smaller than one timer tick of its rate gets no advice to raise a --burst it does not have; a small bucket's burst still does", async () => {
    const input = Buffer.alloc(200, "w");
    const text = await runCli(["--window", "5/1ms", "--stats"], { input });
    expect([text.code, text.stdout.equals(input)]).toEqual([0, true]);
    expect(text.stderr).toMatch(/; limits 1 --window 5\/1ms \(5 B in any 1 ms\)( waited [^;]+)?; (limited by 1|none set a wait)\n$/);
    const json = JSON.parse((await runCli(["--window", "5/1ms", "--stats-format", "json"], { input })).stderr);
    expect(json.burstBelowTimerTick).toBeUndefined();
    const bucket = await runCli(["--rate", "1mb", "--burst", "100", "--window", "10mb/1s", "--stats"], { input });
    expect(bucket.stderr).toMatch(/; burst smaller than one timer tick of the rate, which it may not keep: --burst 15k can\n$/);
  });
});
