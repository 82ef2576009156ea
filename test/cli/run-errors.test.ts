import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";

// Issue 12: raw errno messages (EISDIR, ENOSPC, spawn E2BIG, Node's internal wording) and
// wrong advice (a directory told to "make it executable", a missing interpreter "command not found").

const dir = mkdtempSync(join(tmpdir(), "tbucket-run-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.concurrent("tbucket run: what failed, on which file, and what to do", () => {
  it("--input naming a directory: exit 1, one line", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--input", dir, "--", "echo", "{}"]);
    expect(result.stderr).toBe(`tbucket: --input: ${dir}: is a directory; name a file\n`);
    expect(result.code).toBe(1);
  });

  it("--joblog that cannot be written: exit 1, one line naming it, nothing more launched", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--count", "3", "--joblog", "/dev/full", "--", "echo", "ran"]);
    expect(result.stderr).toBe("tbucket: run: --joblog: /dev/full: no space left on device; free some space or write elsewhere\n");
    expect(result.code).toBe(1);
    expect(result.stdout.toString()).toBe("ran\n");
  });

  it("an item too long for a command line: that job fails in one clear line, the others run, exit 1", async ({ expect }) => {
    const huge = "x".repeat(3_000_000);
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--", "echo", "{}"], { input: `short\n${huge}\nlast\n` });
    expect(result.stdout.toString()).toBe("short\nlast\n");
    expect(result.stderr).toBe(
      "tbucket: run: job 2 could not start: one of its arguments is 3000000 bytes long, more than the system allows for one (131072); " +
        "put long data in files and pass their names as items, or give it to the command on its standard input\n" +
        "tbucket: run: 3 started, 2 succeeded, 1 failed, 0 skipped, 0 retried\n",
    );
    expect(result.code).toBe(1);
  });

  it("arguments each short enough but too long together: says how long the command line is", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--", "echo", ...Array(25).fill("{}")], { input: `${"y".repeat(100_000)}\n` });
    expect(result.stderr).toBe(
      "tbucket: run: job 1 could not start: the command line is 2500030 bytes long, more than the system allows; " +
        "put long data in files and pass their names as items, or give it to the command on its standard input\n" +
        "tbucket: run: 1 started, 0 succeeded, 1 failed, 0 skipped, 0 retried\n",
    );
    expect(result.code).toBe(1);
  });

  it("an empty item as the command name, or an item holding a NUL byte: that job fails in one clear line", async ({ expect }) => {
    const empty = await runCli(["run", "-r", "inf", "-j", "1", "--", "{}"], { input: "\ntrue\n" });
    expect(empty.stderr).toBe(
      "tbucket: run: job 1 could not start: the command name is empty; an empty item cannot be the command name\n" +
        "tbucket: run: 2 started, 1 succeeded, 1 failed, 0 skipped, 0 retried\n",
    );
    expect(empty.code).toBe(1);
    const nul = await runCli(["run", "-r", "inf", "-j", "1", "--", "echo", "{}"], { input: "a\0b\n" });
    expect(nul.stderr).toBe(
      "tbucket: run: job 1 could not start: the command line holds a NUL byte, which no command line can carry; remove NUL bytes from the items\n" +
        "tbucket: run: 1 started, 0 succeeded, 1 failed, 0 skipped, 0 retried\n",
    );
  });

  it("a directory as the command: exit 126, says it is a directory", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "3", "--", dir]);
    expect(result.stderr).toBe(`tbucket: run: "${dir}": is a directory, not a command; name the program to run\n`);
    expect(result.code).toBe(126);
  });

  it("a script whose #! interpreter is missing: exit 126, names the interpreter, by path or found on PATH", async ({ expect }) => {
    const script = join(dir, "bad-interp.sh");
    writeFileSync(script, "#!/nonexistent/interp -x\necho hi\n");
    chmodSync(script, 0o755);
    const byPath = await runCli(["run", "-r", "inf", "--count", "2", "--", script]);
    expect(byPath.stderr).toBe(
      `tbucket: run: "${script}": its interpreter "/nonexistent/interp" (from its #! line) is not found; install it or correct the script's #! line\n`,
    );
    expect(byPath.code).toBe(126);
    const onPath = await runCli(["run", "-r", "inf", "--count", "1", "--", "bad-interp.sh"], { env: { PATH: `${dir}:${process.env.PATH}` } });
    expect(onPath.stderr).toBe(
      `tbucket: run: "bad-interp.sh": its interpreter "/nonexistent/interp" (from its #! line) is not found; install it or correct the script's #! line\n`,
    );
    expect(onPath.code).toBe(126);
    expect(readFileSync(script, "utf8")).toContain("#!");
  });
});

describe("tbucket run when a job removes the report directory", () => {
  it("makes it again for the next attempts: every job runs", async ({ expect }) => {
    const result = await runCli(["run", "-r", "50/s", "-j", "1", "--", "sh", "-c", 'rm -rf "$(dirname "$TBUCKET_REPORT")"; echo "job $1"', "sh", "{}"], { input: "1\n2\n3\n" });
    expect({ code: result.code, stdout: result.stdout.toString(), stderr: result.stderr }).toEqual({ code: 0, stdout: "job 1\njob 2\njob 3\n", stderr: "" });
  });
});
