import { describe, it } from "vitest";
import { fixture, runShell, sleep, startCli, TBUCKET } from "../helpers/cli.js";

describe.concurrent("tbucket run: signals", () => {
  it("Ctrl-C stops launching, forwards SIGINT, waits; a second Ctrl-C kills; exit 130 with the summary", async ({ expect }) => {
    const cli = startCli(["run", "-r", "inf", "--count", "2", "--", fixture("ignore-sigint.sh")]);
    await cli.waitForOutput("ready", 2);
    cli.signal("SIGINT");
    await cli.waitForOutput("got SIGINT", 2);
    await sleep(300);
    expect(cli.done()).toBe(false);
    cli.signal("SIGINT");
    const { code } = await cli.exited;
    expect(code).toBe(130);
    expect(cli.stderr()).toBe("tbucket: run: interrupted: 2 started, 0 succeeded, 0 failed, 2 interrupted, 0 skipped, 0 retried\n");
  });

  it("Ctrl-C: jobs that end on SIGINT end, nothing more is launched, exit 130", async ({ expect }) => {
    const cli = startCli(["run", "-r", "inf", "-j", "2", "--count", "50", "--", fixture("sleep.sh"), "10"]);
    await cli.waitForOutput("ready", 2);
    cli.signal("SIGINT");
    const { code } = await cli.exited;
    expect(code).toBe(130);
    expect(cli.stdout()).toBe("ready\nready\nstopped by SIGINT\nstopped by SIGINT\n");
    expect(cli.stderr()).toBe("tbucket: run: interrupted: 2 started, 0 succeeded, 0 failed, 2 interrupted, 0 skipped, 0 retried\n");
  });

  it("under timeout, which sends its signal twice (to tbucket and to its group), jobs get it once and are not killed", async ({ expect }) => {
    const run = `"${process.execPath}" "${TBUCKET}" run -r inf --count 1 --stats -- "${fixture("ignore-sigint.sh")}"`;
    // 5 s: time for a loaded machine to start Node and launch the job before the signal.
    const result = await runShell(`timeout 5 ${run}; echo "status $?" >&2`);
    // A second SIGTERM would have been a second signal: SIGKILL for the job, before its trap ran.
    expect(result.stdout.toString()).toBe("ready\ngot SIGTERM\n");
    // The job's shell may report its `sleep` as "Terminated".
    expect(result.stderr.toString().replace(/^Terminated\n/, "")).toMatch(/^jobs: {5}1 started, 0 succeeded, 0 failed, 1 interrupted, 0 skipped, 0 retried\n(.*\n)*tbucket: run: interrupted\nstatus 124\n$/);
  });

  it("SIGTERM is forwarded likewise; exit 143", async ({ expect }) => {
    const cli = startCli(["run", "-r", "inf", "--count", "1", "--", fixture("ignore-sigint.sh")]);
    await cli.waitForOutput("ready");
    cli.signal("SIGTERM");
    const { code } = await cli.exited;
    expect(code).toBe(143);
    expect(cli.stdout()).toBe("ready\ngot SIGTERM\n");
    // The job's whole process group got SIGTERM: its shell may report its `sleep` as "Terminated".
    expect(cli.stderr().replace(/^Terminated\n/, "")).toBe("tbucket: run: interrupted: 1 started, 0 succeeded, 0 failed, 1 interrupted, 0 skipped, 0 retried\n");
  });

  it("without --count, runs until Ctrl-C, which ends it with 130", async ({ expect }) => {
    const cli = startCli(["run", "-r", "20", "--", "echo", "tick"]);
    await cli.waitForOutput("tick", 3);
    cli.signal("SIGINT");
    const { code } = await cli.exited;
    expect(code).toBe(130);
    // A job still running when the signal came was ended by it: it was interrupted, not failed.
    const match = /^tbucket: run: interrupted: (\d+) started, (\d+) succeeded, 0 failed(?:, (1) interrupted)?, 0 skipped, 0 retried\n$/.exec(cli.stderr());
    expect(match, cli.stderr()).not.toBeNull();
    expect(Number(match![1])).toBe(Number(match![2]) + Number(match![3] ?? 0));
    expect(Number(match![1])).toBeGreaterThanOrEqual(3);
  });

  // Regression (issue 15, point 14): jobs ended by Ctrl-C were counted as failed, and --stats
  // printed the counts, then the same counts again in the last line.
  it("--stats after Ctrl-C: the interrupted jobs counted apart, the counts printed once", async ({ expect }) => {
    const cli = startCli(["run", "-r", "inf", "-j", "2", "--count", "50", "--stats", "--", fixture("sleep.sh"), "10"]);
    await cli.waitForOutput("ready", 2);
    cli.signal("SIGINT");
    const { code } = await cli.exited;
    expect(code).toBe(130);
    const lines = cli.stderr().split("\n");
    expect(lines[0]).toBe("jobs:     2 started, 0 succeeded, 0 failed, 2 interrupted, 0 skipped, 0 retried");
    expect(lines[1]).toMatch(/^launches: 2 in \d+ ms, \S+ \(no limit\)$/);
    expect(lines.slice(3)).toEqual(["tbucket: run: interrupted", ""]);
  });

  it("--stats-format json after Ctrl-C: \"interrupted\" apart from \"failed\"", async ({ expect }) => {
    const cli = startCli(["run", "-r", "inf", "-j", "2", "--count", "50", "--stats-format", "json", "--", fixture("sleep.sh"), "10"]);
    await cli.waitForOutput("ready", 2);
    cli.signal("SIGINT");
    expect((await cli.exited).code).toBe(130);
    const [json, last, ...rest] = cli.stderr().split("\n");
    expect(JSON.parse(json!)).toMatchObject({ started: 2, succeeded: 0, failed: 0, interrupted: 2 });
    expect([last, ...rest]).toEqual(["tbucket: run: interrupted", ""]);
  });
});
