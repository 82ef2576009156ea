import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { fixture, runCli, runShell, sleep, startCli, TBUCKET } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

// Issue 12: run signalled only the processes it spawned. A job's grandchildren outlived
// tbucket (orphaned under PID 1), and a job waiting on one kept tbucket waiting too.

const tempDir = tempDirs("run");

/** The pids the jobs' grandchildren wrote (grandchild.sh, ignore-sigterm.sh). */
function grandchildPids(dir: string): number[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".pid"))
    .map((name) => Number(readFileSync(join(dir, name), "utf8")));
}

/** No such process, or a zombie: dead, waiting for PID 1 to reap it (which some inits do seconds late). */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

/** True once every pid is gone; a killed process takes a moment to die. */
async function allGone(pids: number[]): Promise<boolean> {
  for (let i = 0; i < 40; i++) {
    if (pids.every(isGone)) return true;
    await sleep(50);
  }
  for (const pid of pids) if (!isGone(pid)) process.kill(pid, "SIGKILL");
  return false;
}

describe.concurrent("tbucket run: each job in a process group of its own", () => {
  it.for([
    ["SIGTERM", 143, []],
    // A shell's background job ignores SIGINT and SIGQUIT (POSIX): --kill-after ends it.
    ["SIGINT", 130, ["--kill-after", "500ms"]],
    ["SIGQUIT", 131, ["--kill-after", "500ms"]],
    ["SIGHUP", 129, []],
    ["SIGTERM", 143, ["--output", "raw"]],
  ] as const)("%s (%i, %j) ends the jobs and their grandchildren, promptly", async ([signal, status, extra], { expect }) => {
    const dir = tempDir();
    const cli = startCli(["run", "-r", "inf", "--count", "2", ...extra, "--", fixture("grandchild.sh"), dir]);
    await cli.waitForOutput("ready", 2);
    const pids = grandchildPids(dir);
    expect(pids).toHaveLength(2);
    const sentAt = performance.now();
    cli.signal(signal);
    const { code } = await cli.exited;
    expect(performance.now() - sentAt).toBeLessThan(3000);
    expect(code).toBe(status);
    expect(cli.stderr()).toMatch(/tbucket: run: interrupted: 2 started, 0 succeeded, 0 failed, 2 interrupted, 0 skipped, 0 retried\n$/);
    expect(await allGone(pids)).toBe(true);
  });

  it("a second signal kills jobs that ignore the first, grandchildren included", async ({ expect }) => {
    const dir = tempDir();
    const cli = startCli(["run", "-r", "inf", "--count", "2", "--kill-after", "1m", "--", fixture("ignore-sigterm.sh"), dir]);
    await cli.waitForOutput("ready", 2);
    const pids = grandchildPids(dir);
    cli.signal("SIGTERM");
    await sleep(300);
    expect(cli.done()).toBe(false);
    const sentAt = performance.now();
    cli.signal("SIGTERM");
    const { code } = await cli.exited;
    expect(performance.now() - sentAt).toBeLessThan(3000);
    expect(code).toBe(143);
    expect(await allGone(pids)).toBe(true);
  });

  it("--kill-after: jobs that ignore the signal are killed that long after it", async ({ expect }) => {
    const dir = tempDir();
    const cli = startCli(["run", "-r", "inf", "--count", "1", "--kill-after", "1s", "--", fixture("ignore-sigterm.sh"), dir]);
    await cli.waitForOutput("ready");
    const pids = grandchildPids(dir);
    const sentAt = performance.now();
    cli.signal("SIGTERM");
    const { code } = await cli.exited;
    const tookMs = performance.now() - sentAt;
    expect(tookMs).toBeGreaterThanOrEqual(950);
    expect(tookMs).toBeLessThan(4000);
    expect(code).toBe(143);
    expect(await allGone(pids)).toBe(true);
  });

  it("the default --kill-after is 5 s", async ({ expect }) => {
    const dir = tempDir();
    const cli = startCli(["run", "-r", "inf", "--count", "1", "--", fixture("ignore-sigterm.sh"), dir]);
    await cli.waitForOutput("ready");
    const pids = grandchildPids(dir);
    const sentAt = performance.now();
    cli.signal("SIGTERM");
    await sleep(4000);
    expect(cli.done()).toBe(false);
    await cli.exited;
    expect(performance.now() - sentAt).toBeLessThan(9000);
    expect(await allGone(pids)).toBe(true);
  }, 20_000);

  it.for([["line"], ["raw"]] as const)("processes a job leaves behind end with the run (--output %s)", async ([mode], { expect }) => {
    const dir = tempDir();
    const script = `sleep 30 >/dev/null 2>&1 & echo $! > ${dir}/{#}.pid`;
    const result = await runCli(["run", "-r", "inf", "--count", "2", "--output", mode, "--shell", "--", script]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const pids = grandchildPids(dir);
    expect(pids).toHaveLength(2);
    expect(await allGone(pids)).toBe(true);
  });

  // Regression (issue 19): a background child holding the job's output kept the run waiting until it ended.
  it.for([["line"], ["group"]] as const)("a job ends when its process does, not when a child holding its output lets go (--output %s)", async ([mode], { expect }) => {
    const dir = tempDir();
    const script = `sleep 30 & echo $! > ${dir}/{#}.pid; echo hi`;
    const startedAt = performance.now();
    const result = await runCli(["run", "-r", "inf", "--count", "2", "--output", mode, "--shell", "--", script]);
    expect(performance.now() - startedAt).toBeLessThan(10_000);
    expect(result.stdout.toString()).toBe("hi\nhi\n");
    expect(result.stderr).toMatch(/^tbucket: run: job [12] ended but a process it started still holds its output; not waiting for it\n$/);
    expect(result.code).toBe(0);
    // Ended with the run, as any process a job leaves behind.
    expect(await allGone(grandchildPids(dir))).toBe(true);
  });

  it("a signal while tbucket ends what a job left behind still reaches it; a second one kills it", async ({ expect }) => {
    const dir = tempDir();
    // The job ends at once, leaving a sleep that ignores SIGTERM; tbucket then waits --kill-after for it.
    const script = `trap '' TERM; sleep 30 >/dev/null 2>&1 & echo $! > ${dir}/1.pid; echo ready`;
    const cli = startCli(["run", "-r", "inf", "--count", "1", "--kill-after", "1m", "--shell", "--", script]);
    await cli.waitForOutput("ready");
    await sleep(300);
    cli.signal("SIGTERM");
    await sleep(300);
    expect(cli.done()).toBe(false);
    const sentAt = performance.now();
    cli.signal("SIGTERM");
    const { code } = await cli.exited;
    expect(performance.now() - sentAt).toBeLessThan(3000);
    expect(code).toBe(143);
    expect(await allGone(grandchildPids(dir))).toBe(true);
  });

  it("a reader that goes away (| head -1): jobs end at once, exit 0 quietly", async ({ expect }) => {
    const dir = tempDir();
    // tbucket learns that the reader left when it next writes, as any program in a pipeline does: the jobs tick.
    const job = `sleep 30 & echo $! > ${dir}/{#}.pid; while :; do echo tick; sleep 0.1; done`;
    const script = `start=$(date +%s%N); "${process.execPath}" "${TBUCKET}" run -r inf --count 4 -j 2 --shell -- '${job}' | head -1; status=\${PIPESTATUS[0]}; echo "$status $(( ($(date +%s%N) - start) / 1000000 ))" >&2`;
    const result = await runShell(script);
    expect(result.stdout.toString()).toBe("tick\n");
    const [status, tookMs] = result.stderr.trim().split(" ").map(Number);
    expect(result.stderr).toMatch(/^\d+ \d+\n$/);
    expect(status).toBe(0);
    expect(tookMs).toBeLessThan(3000);
    expect(await allGone(grandchildPids(dir))).toBe(true);
  });
});
