import { describe, it } from "vitest";
import { runShell, TBUCKET } from "../helpers/cli.js";

// Issue 12: job output that could not be written (a full disk) was a warning, and the run exited 0.

const tbucket = `"${process.execPath}" "${TBUCKET}"`;

describe.concurrent("tbucket run: job output that cannot be written", () => {
  it.for([["line"], ["group"]] as const)("--output %s to /dev/full: exit 1, one line naming standard output, the loss counted", async ([mode], { expect }) => {
    const result = await runShell(`${tbucket} run -r inf --count 3 -j 1 --output ${mode} -- echo hi > /dev/full`);
    expect(result.code).toBe(1);
    // -j 1: the first job's line fails to be written, the run stops, and nothing else is launched.
    expect(result.stderr).toBe(
      "tbucket: run: standard output: no space left on device; 1 line (3 bytes) of job output not written; free some space or write elsewhere\n",
    );
  });

  it("--stats says how much job output was lost", async ({ expect }) => {
    // 8 bytes, 2 of them newlines; the unfinished last line is lost too.
    const json = await runShell(`${tbucket} run -r inf --count 1 --stats-format json -- printf 'a\\nbb\\nccc' > /dev/full`);
    expect(json.code).toBe(1);
    const [stats, message] = json.stderr.trimEnd().split("\n");
    expect(JSON.parse(stats!)).toMatchObject({ started: 1, lostBytes: 8, lostLines: 2 });
    expect(message).toBe("tbucket: run: standard output: no space left on device; 2 lines (8 bytes) of job output not written; free some space or write elsewhere");
    const text = await runShell(`${tbucket} run -r inf --count 1 --stats -- echo hi > /dev/full`);
    expect(text.stderr).toContain("\nlost:     1 line (3 bytes) of job output not written\n");
  });

  it("--output raw: the jobs write straight to the full device, fail, and so does the run", async ({ expect }) => {
    const result = await runShell(`${tbucket} run -r inf --count 2 --output raw -- echo hi > /dev/full`);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/tbucket: run: 2 started, 0 succeeded, 2 failed, 0 skipped, 0 retried\n$/);
  });

  it("a reader that goes away is no failure: exit 0, nothing on standard error", async ({ expect }) => {
    const result = await runShell(`${tbucket} run -r inf --count 50 -- seq 1000 | head -1; echo "status \${PIPESTATUS[0]}" >&2`);
    expect(result.stdout.toString()).toBe("1\n");
    expect(result.stderr).toBe("status 0\n");
  });
});
