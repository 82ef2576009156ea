import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixture, runCli, runShell, TBUCKET } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run");
const lines = (buffer: Buffer) => buffer.toString().split("\n").filter(Boolean);

describe.concurrent("tbucket run: jobs and results", () => {
  it("one job per line of standard input: {} is the item, {#} the number", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--", "echo", "{#}:{}"], { input: "a\nb c\n\nd" });
    expect(result.stdout.toString()).toBe("1:a\n2:b c\n3:\n4:d\n");
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
  });

  it("reads items from --input, and --count takes at most that many", async ({ expect }) => {
    const dir = tempDir();
    writeFileSync(join(dir, "items.txt"), "x\ny\nz\n");
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--input", join(dir, "items.txt"), "--count", "2", "--", "echo", "{}"]);
    expect(result.stdout.toString()).toBe("x\ny\n");
    expect(result.code).toBe(0);
  });

  // Regression: items from standard input redirected from a file showed no total, where --input of the same file did.
  it("--progress: standard input redirected from a file gives the total, as --input does; a pipe gives none", async ({ expect }) => {
    const dir = tempDir();
    writeFileSync(join(dir, "items.txt"), "a\nb\nc\n");
    const fromFile = await runShell(`"$NODE" "$TBUCKET" run -r 10 -p -- echo {} < "$ITEMS"`, { env: { NODE: process.execPath, TBUCKET, ITEMS: join(dir, "items.txt") } });
    expect(fromFile.stderr.trimEnd().split("\n").at(-1)).toMatch(/^3\/3 started · /);
    const fromPipe = await runShell(`cat "$ITEMS" | "$NODE" "$TBUCKET" run -r inf -p -- echo {}`, { env: { NODE: process.execPath, TBUCKET, ITEMS: join(dir, "items.txt") } });
    expect(fromPipe.stderr.trimEnd().split("\n").at(-1)).toMatch(/^3 started · /);
  });

  it("an unreadable --input: exit 1, one line", async ({ expect }) => {
    const result = await runCli(["run", "-r", "5", "--input", "/nonexistent/items.txt", "--", "echo", "{}"]);
    expect(result.stderr).toBe("tbucket: --input: /nonexistent/items.txt: no such file or directory; check the path\n");
    expect(result.code).toBe(1);
  });

  it("children get no standard input when the items come from it", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--", fixture("print-stdin.sh"), "{}"], { input: "item-1\n" });
    expect(result.stdout.toString()).toBe("eof\n");
  });

  it("children share our standard input when items come from elsewhere", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--", fixture("print-stdin.sh")], { input: "hello\n" });
    expect(result.stdout.toString()).toBe("stdin: hello\neof\n");
  });

  it("exit 1 and a one-line summary when jobs fail", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--", fixture("exit-with.sh"), "{}"], { input: "0\n3\n0\n" });
    expect(result.stderr).toBe("tbucket: run: 3 started, 2 succeeded, 1 failed, 0 skipped, 0 retried\n");
    expect(result.code).toBe(1);
  });

  // Regression (issue 15, point 14): the counts were printed by --stats, then again in the last line.
  it("--stats with failures: the counts once, exit 1", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--stats", "--", fixture("exit-with.sh"), "{}"], { input: "0\n3\n0\n" });
    expect(result.code).toBe(1);
    const lines = result.stderr.split("\n");
    expect(lines[0]).toBe("jobs:     3 started, 2 succeeded, 1 failed, 0 skipped, 0 retried");
    expect(lines).toHaveLength(4);
    expect(lines[3]).toBe("");
    expect(result.stderr.match(/3 started/g)).toHaveLength(1);
  });

  it("--retries reruns a failed job; every attempt is a launch", async ({ expect }) => {
    const dir = tempDir();
    const counter = join(dir, "attempts");
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--retries", "3", "--joblog", join(dir, "log"), "--", fixture("fail-until.sh"), counter, "3"]);
    expect(result.stdout.toString()).toBe("attempt 1\nattempt 2\nattempt 3\n");
    expect(result.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "log"), "utf8"))).toMatchObject({ number: 1, exit: 0, attempts: 3 });
  });

  it("--retries that run out: the job fails once, its retries counted", async ({ expect }) => {
    const dir = tempDir();
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--retries", "1", "--", fixture("fail-until.sh"), join(dir, "n"), "5"]);
    expect(result.stdout.toString()).toBe("attempt 1\nattempt 2\n");
    expect(result.stderr).toBe("tbucket: run: 1 started, 0 succeeded, 1 failed, 0 skipped, 1 retried\n");
    expect(result.code).toBe(1);
  });

  it("--max-wait skips jobs that would wait too long for a token, and says so", async ({ expect }) => {
    const result = await runCli(["run", "-r", "1", "--count", "3", "--max-wait", "200ms", "--", "echo", "ran"]);
    expect(result.stdout.toString()).toBe("ran\n");
    expect(result.stderr).toBe("tbucket: run: 1 started, 1 succeeded, 0 failed, 2 skipped, 0 retried\n");
    expect(result.code).toBe(1);
  });

  it("--joblog: one JSON line per job with number, item, start, end, wait, exit, signal, attempts", async ({ expect }) => {
    const dir = tempDir();
    const log = join(dir, "jobs.jsonl");
    const before = Date.now() / 1000;
    const result = await runCli(["run", "-r", "2", "--joblog", log, "--", fixture("exit-with.sh"), "{}"], { input: "0\n2\n" });
    const after = Date.now() / 1000;
    expect(result.code).toBe(1);
    const records = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line)).sort((a, b) => a.number - b.number);
    expect(records).toHaveLength(2);
    // The report's columns (cost, settled, throttled, server_wait) come after the first ones, which stay as they are.
    expect(Object.keys(records[0])).toEqual(["number", "item", "start", "end", "wait", "exit", "signal", "attempts", "cost", "settled", "throttled", "server_wait"]);
    expect(records.map((r) => [r.number, r.item, r.exit, r.signal, r.attempts])).toEqual([[1, "0", 0, null, 1], [2, "2", 2, null, 1]]);
    for (const r of records) {
      expect(r.start).toBeGreaterThanOrEqual(before);
      expect(r.end).toBeGreaterThanOrEqual(r.start);
      expect(r.end).toBeLessThanOrEqual(after);
    }
    // The second waited for its token: at most 1/2 s, less what reading and launching the first took
    // (on a loaded machine that can be all of it), so its grant is never closer than 500 ms to the
    // first's. `start` is taken when each launch begins, after its grant: the first launch, the run's
    // first spawn, may begin later after its grant than the second (seen: 3 ms, and 16 ms with the
    // whole suite running beside it), hence 50 ms of tolerance; start times are in whole ms.
    expect(records[0].wait).toBeLessThan(0.5);
    expect(records[1].wait).toBeGreaterThanOrEqual(0);
    // A timer fires late on a busy machine, never early: the wait may overrun 1/2 s by that lateness.
    expect(records[1].wait).toBeLessThanOrEqual(0.5 + 0.1);
    expect(records[1].start - records[0].start).toBeGreaterThanOrEqual(0.45);
  });

  it("--stats-format json reports the counts, the launches and the limit", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "4", "--stats-format", "json", "--", "true"]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stderr)).toMatchObject({ started: 4, succeeded: 4, failed: 0, interrupted: 0, skipped: 0, retried: 0, launches: 4, rate: null, burst: 1 });
  });

  it("--shell: an item can never inject shell syntax", async ({ expect }) => {
    const dir = tempDir();
    mkdirSync(join(dir, "x"));
    const evil = "$(touch pwned); rm -rf x `touch pwned2` 'q\" \\";
    const shell = await runCli(["run", "-r", "inf", "--shell", "--", "echo {} | cat"], { input: `${evil}\n`, cwd: dir });
    const direct = await runCli(["run", "-r", "inf", "--", "echo", "{}"], { input: `${evil}\n`, cwd: dir });
    expect(shell.stdout.toString()).toBe(`${evil}\n`);
    expect(direct.stdout.toString()).toBe(`${evil}\n`);
    expect(existsSync(join(dir, "pwned"))).toBe(false);
    expect(existsSync(join(dir, "pwned2"))).toBe(false);
    expect(existsSync(join(dir, "x"))).toBe(true);
  });

  // Regression: a {} inside "…" was single-quoted there, where ' is literal, and $(…) in the item ran.
  it("--shell: an item inside \"…\" or '…' is quoted for that place, and still never runs", async ({ expect }) => {
    const dir = tempDir();
    const items = ["$(touch pwned)", "`touch pwned`", `"; touch pwned; "`, `'; touch pwned; '`, "\\", "tab\there"];
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--shell", "--", `printf '%s|%s\\n' "a{}b" 'c{}d'`], { input: `${items.join("\n")}\n`, cwd: dir });
    expect(result.stdout.toString()).toBe(items.map((item) => `a${item}b|c${item}d\n`).join(""));
    expect(result.code).toBe(0);
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("--shell: a {} that cannot be quoted safely (in backquotes) is a usage error saying what to write", async ({ expect }) => {
    const dir = tempDir();
    const result = await runCli(["run", "-r", "inf", "--shell", "--", "echo `echo {}`"], { input: "$(touch pwned)\n", cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe("tbucket: --shell: {} inside backquotes cannot be quoted safely; write $(…) instead of `…`\n");
    expect(result.stdout.toString()).toBe("");
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("--shell runs the script with /bin/sh and {#} in it", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--shell", "--", "echo n={#} && exit 3"]);
    expect(result.stdout.toString()).toBe("n=1\n");
    expect(result.code).toBe(1);
  });

  it("without {}, --count N runs the command N times with {#} numbered", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "5", "--", "echo", "job {#}"]);
    expect(lines(result.stdout).sort()).toEqual(["job 1", "job 2", "job 3", "job 4", "job 5"]);
  });

  it("--duration stops launching after that long and exits 0", async ({ expect }) => {
    const result = await runCli(["run", "-r", "10", "--duration", "450ms", "--", "echo", "x"]);
    expect(result.code).toBe(0);
    // Launches at 0, 100, 200, 300, 400 ms at most (fewer when launching is slow on a busy machine).
    expect(lines(result.stdout).length).toBeGreaterThanOrEqual(1);
    expect(lines(result.stdout).length).toBeLessThanOrEqual(5);
  });
});
