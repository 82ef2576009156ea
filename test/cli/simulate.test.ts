import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

const HAND = ["simulate", "--rate", "5", "--burst", "10", "--arrivals", "steady 8/s for 7.5s"];
const dir = mkdtempSync(join(tmpdir(), "tbucket-simulate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function ok(args: string[], input?: string) {
  const result = await runCli(args, { input });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.toString("utf8");
}

async function usage(args: string[], message: string, code = 2, input?: string) {
  const result = await runCli(args, { input });
  expect(result.stderr).toBe(`tbucket: ${message}\n`);
  expect(result.code).toBe(code);
  expect(result.stdout.toString()).toBe("");
}

describe("tbucket simulate: formats", () => {
  it("summary: the hand-checkable case, exactly", async () => {
    expect(await ok([...HAND, "--format", "summary"])).toBe(
      [
        "bucket        rate 5/s, burst 10, drop (Allow), one bucket",
        "arrivals      60 over 7.5 s (8/s)",
        "admitted      46  (76.67%)",
        "refused       14  (23.33%), the first at 3.125 s",
        "throughput    6.13/s admitted over 7.5 s (the burst included)",
        "bucket empty  47.00% of the time",
        "",
      ].join("\n"),
    );
  });

  it("jsonl: one object per event in the documented schema, in arrival order", async () => {
    const lines = (await ok([...HAND, "--format", "jsonl"])).trimEnd().split("\n");
    expect(lines).toHaveLength(60);
    expect(lines[0]).toBe(`{"t":0,"cost":1,"admitted":true,"wait":0,"tokens":9}`);
    expect(lines[24]).toBe(`{"t":3,"cost":1,"admitted":true,"wait":0,"tokens":0}`);
    expect(lines[25]).toBe(`{"t":3.125,"cost":1,"admitted":false,"wait":0,"tokens":0.625}`);
    const events = lines.map((line) => JSON.parse(line));
    expect(events.filter((e) => e.admitted)).toHaveLength(46);
    expect(events.slice(0, 25).every((e) => e.admitted)).toBe(true);
  });

  it("jsonl in queue mode carries the wait in seconds and the key when keyed", async () => {
    const input = "0 a\n0 a\n0 a\n0 b\n";
    const out = await ok(["simulate", "-r", "2", "-b", "2", "--policy", "queue", "--trace", "-", "--per-key", "--key-field", "2", "--format", "jsonl"], input);
    expect(out).toBe(
      [
        `{"t":0,"key":"a","cost":1,"admitted":true,"wait":0,"tokens":1}`,
        `{"t":0,"key":"a","cost":1,"admitted":true,"wait":0,"tokens":0}`,
        `{"t":0,"key":"a","cost":1,"admitted":true,"wait":0.5,"tokens":-1}`,
        `{"t":0,"key":"b","cost":1,"admitted":true,"wait":0,"tokens":1}`,
        "",
      ].join("\n"),
    );
  });

  it("table (the default off a terminal) and csv: one row per step, the same numbers", async () => {
    const table = (await ok(HAND)).split("\n");
    expect(table[0]).toBe("time (s)  arrived  admitted  refused  level  max wait (s)");
    expect(table[1]).toBe("     0.0        2         2        0   9.00             0");
    expect(table).toHaveLength(38 + 2);
    const csv = (await ok([...HAND, "--format", "csv"])).trimEnd().split("\n");
    expect(csv[0]).toBe("start_s,end_s,arrived,admitted,refused,level,max_wait_s");
    expect(csv[1]).toBe("0,0.2,2,2,0,9,0");
    expect(csv[16]).toBe("3,3.2,2,1,1,1,0");
    expect(csv).toHaveLength(39);
    const rows = csv.slice(1).map((row) => row.split(",").map(Number));
    expect(rows.reduce((sum, r) => sum + r[3]!, 0)).toBe(46);
    expect(rows.reduce((sum, r) => sum + r[4]!, 0)).toBe(14);
    const stepped = (await ok([...HAND, "--format", "csv", "--step", "1s"])).trimEnd().split("\n");
    expect(stepped.slice(1, 4)).toEqual(["0,1,8,8,0,7,0", "1,2,8,8,0,4,0", "2,3,8,8,0,1,0"]);
  });

  it("json: the summary and the steps", async () => {
    const json = JSON.parse(await ok([...HAND, "--format", "json", "--policy", "queue"]));
    expect(json).toMatchObject({ rate: 5, burst: 10, policy: "queue", events: 60, admitted: 60, refused: 0, duration: 7.5, step: 0.2 });
    expect(json.wait.max).toBe(2.625); // the 60th waits (60 − 10 − 5 × 7.375) / 5 s
    // Regression (issue 15, point 9): throughput was measured over the arrivals' 7.5 s (8/s), though the
    // queue served the last one at 7.375 + 2.625 = 10 s: 60 admitted over 10 s.
    expect(json).toMatchObject({ throughput: 6, throughputOver: 10 });
    expect(json.steps).toHaveLength(38);
    expect(json.steps[0]).toEqual({ t: 0, arrived: 2, admitted: 2, refused: 0, level: 9, maxWait: 0 });
  });

  it("queue: throughput over the time until the last admitted arrival was served", async () => {
    const out = await ok([...HAND, "--format", "summary", "--policy", "queue"]);
    expect(out).toContain("\nthroughput     6/s admitted over 10 s, until the last admitted one was served (the burst included)\n");
  });

  it("--chart adds the terminal chart to the summary", async () => {
    const result = await runCli([...HAND, "--format", "summary", "--chart"], { env: { COLUMNS: "" } });
    const out = result.stdout.toString();
    expect(out).toContain("throughput    6.13/s admitted over 7.5 s (the burst included)");
    expect(out).toContain("bucket level at the end of each 0.2 s (tokens; burst 10)\n10 ┤");
    expect(out).toContain("arrivals per 0.2 s: admitted █, refused ░");
    // Not a terminal, no $COLUMNS: 80 columns.
    const chart = out.split("\n").slice(out.split("\n").indexOf("bucket level at the end of each 0.2 s (tokens; burst 10)"));
    expect(Math.max(...chart.map((line) => [...line].length))).toBeLessThanOrEqual(80);
    expect(chart).toContain(`   └${"─".repeat(76)}`);
  });

  // Regression (issue 15, point 10): at 40 columns the chart's rows wrapped ("2\n0 s").
  it("on a terminal 40 columns wide, the summary's chart fits it", async () => {
    // script(1) gives tbucket a pseudo-terminal; stty sets its width. Paths come in through the environment.
    const result = await runShell(
      `script -qfec 'stty cols 40 rows 60; "$TB" simulate --rate 5 --burst 10 --arrivals "steady 8/s for 7.5s"' /dev/null`,
      { env: { TB: TBUCKET, COLUMNS: "" } },
    );
    expect(result.code).toBe(0);
    const lines = result.stdout.toString().replace(/\r/g, "").trimEnd().split("\n");
    const chart = lines.slice(lines.indexOf("bucket level at the end of each 0.4 s"));
    expect(chart.length).toBeGreaterThan(20);
    expect(Math.max(...chart.map((line) => [...line].length))).toBeLessThanOrEqual(40);
  });

  it("--chart fits $COLUMNS when standard output is no terminal", async () => {
    const result = await runCli([...HAND, "--format", "summary", "--chart"], { env: { COLUMNS: "40" } });
    expect(result.code).toBe(0);
    const lines = result.stdout.toString().trimEnd().split("\n");
    const chart = lines.slice(lines.indexOf("bucket level at the end of each 0.4 s"));
    expect(chart.length).toBeGreaterThan(20);
    expect(Math.max(...chart.map((line) => [...line].length))).toBeLessThanOrEqual(40);
    expect(lines.at(-1)).toMatch(/^ +0 s +7\.6 s$/);
  });

  it("--svg writes a self-contained plot next to the usual output", async () => {
    const file = join(dir, "plot.svg");
    await ok([...HAND, "--format", "summary", "--svg", file]);
    const svg = readFileSync(file, "utf8");
    expect(svg.startsWith(`<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"`)).toBe(true);
    for (const series of ["level", "admitted", "refused", "refill"]) expect(svg).toContain(`data-series="${series}"`);
    // Drop never waits: no wait panel.
    expect(svg).not.toContain(`data-series="wait"`);
    await ok([...HAND, "--format", "summary", "--policy", "queue", "--svg", file]);
    expect(readFileSync(file, "utf8")).toContain(`data-series="wait"`);
  });

  it("the same input and seed give byte-identical output; another seed does not", async () => {
    const args = ["simulate", "-r", "20", "-b", "5", "--arrivals", "poisson 25/s for 20s, burst 10, ramp 5/s..40/s for 10s", "--format"];
    for (const format of ["summary", "jsonl", "json", "csv"]) {
      const [a, b] = await Promise.all([ok([...args, format, "--seed", "7"]), ok([...args, format, "--seed", "7"])]);
      expect(a).toBe(b);
    }
    expect(await ok([...args, "jsonl", "--seed", "8"])).not.toBe(await ok([...args, "jsonl", "--seed", "7"]));
    expect(await ok([...args, "summary", "--seed", "7"])).toContain(", seed 7\n");
  });

  it("reads an access log with --cost bytes and --per-key, and lists the keys most refused", async () => {
    const log = [
      `10.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET /a HTTP/1.1" 200 1000`,
      `10.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET /b HTTP/1.1" 200 1000`,
      `10.0.0.2 - - [10/Oct/2026:13:55:36 +0000] "GET /c HTTP/1.1" 200 1500 "-" "curl/8.0"`,
      `10.0.0.1 - - [10/Oct/2026:13:55:37 +0000] "GET /d HTTP/1.1" 200 1000`,
      `10.0.0.2 - - [10/Oct/2026:13:55:37 +0000] "GET /e HTTP/1.1" 200 1500`,
      "",
    ].join("\n");
    const file = join(dir, "access.log");
    writeFileSync(file, log);
    const out = await ok(["simulate", "-r", "1000", "-b", "1500", "--cost", "bytes", "--trace", file, "--per-key", "--max-keys", "1", "--format", "summary"]);
    expect(out).toBe(
      [
        "bucket        rate 1000 B/s, burst 1.46 KiB (1500 B), drop (Allow), one bucket per key, at most 1",
        "arrivals      5 over 1 s (5/s)",
        "admitted      4  (80.00%), 4.88 KiB (5000 B)",
        "refused       1  (20.00%), the first at 0 s",
        "throughput    4.88 KiB/s admitted over 1 s",
        "keys          2 seen, 3 evictions",
        "most refused  10.0.0.1: 1 of 3 refused",
        "",
      ].join("\n"),
    );
  });

  it("--skip-bad reports what it skipped", async () => {
    const out = await ok(["simulate", "-r", "5", "-b", "1", "--trace", "-", "--skip-bad", "--format", "summary"], "0\nnope\n1\n");
    expect(out).toContain("arrivals      2 over 1 s (2/s)\n");
    expect(out).toContain(`skipped       1 bad line (--skip-bad)\n              line 2: "nope" is not a time;`);
  });

  it("--skip-bad names the field flag of a skipped line, in the summary and in json", async () => {
    const args = ["simulate", "-r", "5", "-b", "1", "--trace", "-", "--cost-field", "2", "--skip-bad"];
    const input = "0 1\n1\n2 x\n3 2\n";
    const examples = [`line 2: has 1 field, expected at least 2 (--cost-field 2)`, `line 3: field 2 "x" is not a cost; expected a number of 0 or more (--cost-field 2)`];
    const summary = await ok([...args, "--format", "summary"], input);
    expect(summary).toContain(`skipped       2 bad lines (--skip-bad)\n              ${examples[0]}\n              ${examples[1]}\n`);
    const json = JSON.parse(await ok([...args, "--format", "json"], input));
    expect(json.trace.skippedExamples).toEqual(examples);
  });

  it("--suggest prints the answer and the trade-off table; json for programs", async () => {
    const text = await ok(["simulate", "-r", "5", "--arrivals", "steady 8/s for 7.5s", "--suggest", "--target", "reject<=0%"]);
    expect(text.split("\n").slice(0, 3)).toEqual([
      "target      refused <= 0%, drop, rate 5/s",
      "suggestion  burst 24: refused 0.00%",
      "            burst 23 does not meet it: refused 1.67%",
    ]);
    expect(text).toContain("\nburst  refused   share  p99 wait  max wait  meets\n");
    expect(text).toContain("\n   23        1   1.67%         0         0     no\n → 24        0   0.00%         0         0    yes\n");
    const json = JSON.parse(await ok(["simulate", "-r", "auto", "-b", "10", "--arrivals", "steady 8/s for 7.5s", "--suggest", "--target", "reject<=0%", "--format", "json"]));
    expect(json).toMatchObject({ search: "rate", burst: 10, answer: 6.78, below: { value: 6.77, meets: false } });
  });

  // Regression (issue 15, point 9): steady 8/s at rate 5 got "burst 60" with no word that it holds for 20 s only.
  it("--suggest says when the arrivals outpace the rate: the burst holds for the trace's length only", async () => {
    const text = await ok(["simulate", "-r", "5", "--arrivals", "steady 8/s for 20s", "--suggest"]);
    expect(text.split("\n").slice(0, 7)).toEqual([
      "target      refused <= 1%, drop, rate 5/s",
      "suggestion  burst 60: refused 0.63%",
      "            burst 59 does not meet it: refused 1.25%",
      "note        the arrivals average 8/s, above the rate 5/s:",
      "            the burst meets the target for these 20 s only, none for ever;",
      "            a longer run needs more (--rate auto searches a rate instead)",
      "searched    18 simulations",
    ]);
    const json = JSON.parse(await ok(["simulate", "-r", "5", "--arrivals", "steady 8/s for 20s", "--suggest", "--format", "json"]));
    expect(json).toMatchObject({ search: "burst", rate: 5, duration: 20, arrivalRate: 8, outpacesRate: true, answer: 60 });
    // Arrivals within the rate: no note.
    const within = await ok(["simulate", "-r", "10", "--arrivals", "steady 8/s for 20s", "--suggest"]);
    expect(within).not.toContain("note");
    const withinJson = JSON.parse(await ok(["simulate", "-r", "10", "--arrivals", "steady 8/s for 20s", "--suggest", "--format", "json"]));
    expect(withinJson).toMatchObject({ arrivalRate: 8, outpacesRate: false });
  });

  it("--help ends with examples", async () => {
    const out = await ok(["simulate", "--help"]);
    expect(out).toMatch(/Examples:\n  tbucket simulate --rate 5 --burst 10 --arrivals "steady 8\/s for 20s"\n/);
  });
});

describe("tbucket simulate: errors", () => {
  const PATTERNS = `try "steady 8/s for 10s", "idle 5s", "burst 30", "poisson 4/s for 30s" or "ramp 1/s..20/s for 20s"`;
  it.each([
    [["simulate", "-r", "5", "-b", "1"], `--arrivals or --trace: missing; try --arrivals "steady 8/s for 10s" or --trace access.log`],
    [["simulate", "-b", "1", "--arrivals", "burst 1"], `--rate: missing; the bucket under test needs one, e.g. "--rate 5/s"`],
    [["simulate", "-r", "fast", "-b", "1", "--arrivals", "burst 1"], `--rate: "fast" is not a count rate; try "5", "300/m" or "1/10s"`],
    [["simulate", "-r", "5", "--arrivals", "burst 1"], `--burst: missing; the bucket under test needs one, e.g. "--burst 10" (or --suggest to search it)`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "bust 3"], `--arrivals: segment 1 "bust 3": "bust" is not a kind of segment; ${PATTERNS}`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--policy", "fifo"], `--policy: "fifo" is not a policy; try "drop" or "queue"`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--policy", "drop", "--max-wait", "1s"], `--max-wait: only with --policy queue; drop never waits`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--format", "xml"], `--format: "xml" is not a format; try "summary", "table", "csv", "jsonl" or "json"`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--cost", "lines"], `--cost: "lines" is not a cost unit; try "count" or "bytes"`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--per-key"], `--per-key: a pattern has no keys; use --trace with --key-field N or an access log`],
    [["simulate", "-r", "5", "-b", "1", "--trace", "-", "--per-key", "--key-field", "2", "--ipv6-prefix", "129"], `--ipv6-prefix: "129" is not a prefix length; give the bits of an IPv6 address that make one client, 1 to 128 (56, the default, is one customer's network; 128 the whole address)`],
    [["simulate", "-r", "5", "-b", "1", "--trace", "-", "--ipv6-prefix", "64"], `--ipv6-prefix: only with --per-key; try "--per-key --ipv6-prefix 64"`],
    [["simulate", "-r", "5", "-b", "1", "--arrivals", "burst 1", "--target", "reject<=1%"], `--target: only with --suggest; try "--suggest --target reject<=1%"`],
    [["simulate", "-r", "5", "--arrivals", "burst 1", "--suggest", "--target", "p99wait<=1s"], `--target: "p99wait<=1s" needs --policy queue; drop never waits (try "reject<=1%")`],
    [["simulate", "-r", "auto", "-b", "1", "--arrivals", "burst 1"], `--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`],
    [["simulate", "-r", "5", "-b", "1", "--trace", "-", "--per-key"], `--per-key: this trace is not an access log; name the field holding each key with --key-field N`],
    [["simulate", "-r", "5", "-b", "1", "--trace", "-", "--cost-field", "2"], `--trace standard input: line 3: has 1 field, expected at least 2 (--cost-field 2); or pass --skip-bad to skip such lines`],
    [["simulate", "-r", "5", "-b", "1", "--trace", "-"], `--trace standard input: line 4: "12:00" is not a time; expected seconds from the start (12.5), epoch seconds (1760104536.25) or an ISO-8601 time (2026-10-10T13:55:36.25Z); or pass --skip-bad to skip such lines`],
  ])("exit 2 with one line: %j", async (args, message) => {
    await usage(args, message, 2, "0 1\n1 1\n2\n12:00\n");
  });

  it("a trace that cannot be read: exit 1", async () => {
    await usage(["simulate", "-r", "5", "-b", "1", "--trace", join(dir, "missing.log")], `--trace ${join(dir, "missing.log")}: no such file or directory; check the path`, 1);
  });
});
