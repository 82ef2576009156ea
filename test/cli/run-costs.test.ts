import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-costs");

function items(lines: string[]): string {
  const path = join(tempDir(), "items");
  writeFileSync(path, lines.join("\n") + "\n");
  return path;
}

describe("tbucket run --cost", () => {
  it.each([
    [["--cost", "{.x}"], `tbucket: --cost: no limit counts it; add --cost-rate or --cost-window, e.g. "--cost '{.max_tokens}' --cost-rate 90000/m"\n`],
    [["--cost-rate", "10/s"], `tbucket: --cost-rate: counts each job's cost, and no --cost says what it is; e.g. "--cost '{.max_tokens}' --cost-rate 90000/m"\n`],
    [["--cost", "5", "--cost-rate", "10/s", "--cost-burst", "1", "--cost-burst", "2"], "tbucket: --cost-burst: 2 bursts for 1 cost rate; each goes with a --cost-rate (the i-th with the i-th)\n"],
    [["--cost", "{2}", "--cost-rate", "1mb"], `tbucket: --cost-rate: "1mb" is a byte rate, not a count rate; try "5", "300/m" or "1/10s"\n`],
    [["--cost", "5", "--cost-window", "10"], `tbucket: --cost-window: "10" is not a window: write N/W, at most N in any W; try "100/1m", "1000/h" or "10/1.5s"\n`],
    [["--cost", "{.n}", "--cost-rate", "10/s", "--class", "a=1/s"], "tbucket: --cost: classes do not count costs yet; drop --class, or --cost and its limits\n"],
    [
      ["--cost", "{.n}", "--cost", "{.m}", "--cost-rate", "10/s", "--cost-rate", "20/s", "--cost-window", "100/1m"],
      "tbucket: --cost: 2 costs for 3 cost limits; give one --cost that every cost limit counts, or one for each (the i-th for the i-th: the --cost-rates in order, then the --cost-windows)\n",
    ],
  ])("refuses %j with one line, exit 2", async (args, stderr) => {
    const result = await runCli(["run", "--rate", "5", ...args, "--input", items(['{"n":1}']), "--", "echo", "{}"]);
    expect([result.code, result.stderr, result.stdout.toString()]).toEqual([2, stderr, ""]);
  });

  it("several --cost: the i-th counted by the i-th cost limit, each in --stats, an item missing either failing by its line", async () => {
    // Input tokens 10 a job against 1000/s, output tokens 400 against 1000/s (burst 1000): the second binds.
    const input = items(['{"in":10,"out":400}', '{"in":10,"out":400}', '{"in":10}', '{"in":10,"out":400}']);
    const result = await runCli([
      "run", "--rate", "inf", "-j", "1", "--cost", "{.in}", "--cost", "{.out}", "--cost-rate", "1000/s", "--cost-rate", "1000/s", "--stats-format", "json", "--input", input, "--", "echo", "{}",
    ]);
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe("tbucket: run: line 3: cost {.out}: the item has no field .out; or pass --skip-bad to skip such items");
    const stats = JSON.parse(lines.at(-1)!) as { limits: Array<{ flag: string }>; succeeded: number; failed: number };
    expect(stats).toMatchObject({ succeeded: 3, failed: 1 });
    expect(stats.limits.map((limit) => limit.flag)).toEqual(["--rate inf", "--cost-rate 1000/s", "--cost-rate 1000/s"]);
  });

  it("--skip-bad: bad items (missing, not a number, negative, past 2^53 - 1, not JSON) are skipped and counted, said once; the run succeeds", async () => {
    const input = items([
      '{"max_tokens":100}', '{"n":1}', '{"max_tokens":"x"}', '{"max_tokens":-3}', '{"max_tokens":9007199254740993}', "not json", '{"max_tokens":50}',
    ]);
    const args = ["run", "--rate", "inf", "-j", "1", "--cost", "{.max_tokens}", "--cost-rate", "1000/s", "--skip-bad", "--input", input];
    const result = await runCli([...args, "--", "echo", "{}"]);
    expect([result.code, result.stdout.toString()]).toEqual([0, '{"max_tokens":100}\n{"max_tokens":50}\n']);
    expect(result.stderr).toBe("tbucket: run: --skip-bad: skipped 5 bad items (the first: line 2: cost {.max_tokens}: the item has no field .max_tokens)\n");
    const stats = await runCli([...args, "--stats-format", "json", "--", "echo", "{}"]);
    expect(JSON.parse(stats.stderr.trimEnd().split("\n").at(-1)!)).toMatchObject({ succeeded: 2, failed: 0, skipped: 5 });
  });

  it("takes an unlimited cost rate (it limits nothing) as an unlimited launch rate is taken", async () => {
    const result = await runCli(["run", "--rate", "inf", "--count", "2", "--cost", "3", "--cost-rate", "inf", "--", "true"]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
  });

  it("refuses a cost read from items when the command takes none", async () => {
    const result = await runCli(["run", "--rate", "5", "--count", "1", "--cost", "{.n}", "--cost-rate", "10/s", "--", "true"]);
    expect([result.code, result.stderr]).toEqual([2, `tbucket: --cost {.n}: the jobs have no items (no {} in the command) to read a cost from; give a number for all, e.g. "--cost 100"\n`]);
  });

  it("an item without a cost fails with one line naming its line; the others run; --stats names the cost limit", async () => {
    const input = items(['{"max_tokens":100}', '{"n":1}', '{"max_tokens":-3}', '{"max_tokens":50}']);
    const result = await runCli(["run", "--rate", "inf", "-j", "1", "--cost", "{.max_tokens}", "--cost-rate", "1000/s", "--stats-format", "json", "--input", input, "--", "echo", "{}"]);
    expect(result.code).toBe(1);
    expect(result.stdout.toString()).toBe('{"max_tokens":100}\n{"max_tokens":50}\n');
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines.slice(0, 2)).toEqual([
      "tbucket: run: line 2: cost {.max_tokens}: the item has no field .max_tokens; or pass --skip-bad to skip such items",
      expect.stringMatching(/^tbucket: run: line 3: cost \{\.max_tokens\}: .*negative; or pass --skip-bad/),
    ]);
    const stats = JSON.parse(lines.at(-1)!) as { limits: Array<{ flag: string }>; succeeded: number; failed: number };
    expect(stats).toMatchObject({ succeeded: 2, failed: 2 });
    expect(stats.limits.map((limit) => limit.flag)).toEqual(["--rate inf", "--cost-rate 1000/s"]);
  });

  it("a job costing more than the cost burst waits for a full bucket and runs it into debt, said once", async () => {
    const input = items(['{"c":500}', '{"c":600}', '{"c":10}']);
    const result = await runCli(["run", "--rate", "inf", "-j", "0", "--cost", "{.c}", "--cost-rate", "4000/s", "--cost-burst", "400", "--input", input, "--", "echo", "{}"]);
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe('{"c":500}\n{"c":600}\n{"c":10}\n');
    expect(result.stderr).toBe("tbucket: run: a job costs 500, more than a cost limit's burst (400): it waits for full buckets and runs them into debt\n");
  });

  it("a job costing more than a shared key's cost burst ends the run with one line saying what to raise", async () => {
    const dir = tempDir();
    const input = items(['{"c":500}', '{"c":10}']);
    const result = await runCli(["run", "--key", "api", "--store", `sqlite:${join(dir, "buckets.db")}`, "--rate", "100/s", "--cost", "{.c}", "--cost-rate", "400/s", "--input", input, "--", "echo", "{}"], { env: { XDG_STATE_HOME: dir } });
    expect([result.code, result.stdout.toString()]).toEqual([1, ""]);
    expect(result.stderr).toBe(
      "tbucket: run: a job costs 500, more than a limit can take at once (400), and a shared key or --max-wait cannot run into debt; raise --cost-burst (or the window's n) to 500 at least\n",
    );
  });

  it("on a shared key the cost limit is part of the key's set (SQLite)", async () => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const input = items(['{"c":100}', '{"c":200}']);
    const env = { XDG_STATE_HOME: dir };
    const run = await runCli(["run", "--key", "api", "--store", store, "--rate", "100/s", "--cost", "{.c}", "--cost-rate", "90000/m", "--input", input, "--", "true", "{}"], { env });
    expect([run.code, run.stderr]).toEqual([0, ""]);
    const show = await runCli(["key", "show", "api", "--store", store, "--json"], { env });
    const state = JSON.parse(show.stdout.toString()) as { limits: Array<{ kind: string; unit: string; rate: number; burst: number; level: number }> };
    expect(state.limits.map(({ kind, unit, rate, burst }) => ({ kind, unit, rate, burst }))).toEqual([
      { kind: "bucket", unit: "count", rate: 100, burst: 1 },
      // 90000/m holds 90,000 by default, as providers size their buckets.
      { kind: "bucket", unit: "cost", rate: 1500, burst: 90000 },
    ]);
    expect(state.limits[1]!.level).toBeLessThanOrEqual(90000 - 300 + 1500 * 5);
  });
});
