import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixture, runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-output");

const LINES_PER_JOB = 160;
const NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
const LINE = /^(\w+):(\d+):0123456789abcdefghijklmnopqrstuvwxyz-(\w+)$/;

/** Checks that every line is whole (its two halves name the same job) and each job's lines come in order. */
function checkWholeLines(text: string, tagged: boolean): Map<string, number[]> {
  const seen = new Map<string, number[]>();
  expect(text.endsWith("\n")).toBe(true);
  for (const raw of text.slice(0, -1).split("\n")) {
    let line = raw;
    let tag: string | undefined;
    if (tagged) [tag, line] = raw.split("\t") as [string, string];
    const match = LINE.exec(line);
    expect(match, `torn line: ${JSON.stringify(raw)}`).not.toBeNull();
    const [, name, index, again] = match!;
    expect(again).toBe(name);
    if (tagged) expect(tag).toBe(name);
    seen.set(name!, [...(seen.get(name!) ?? []), Number(index)]);
  }
  const expected = Array.from({ length: LINES_PER_JOB }, (_, i) => i);
  for (const name of NAMES) expect(seen.get(name)).toEqual(expected);
  return seen;
}

describe.concurrent("tbucket run: output", () => {
  it("--output line (the default): whole lines only, never two jobs mixed in a line", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "0", "--", fixture("many-lines.sh"), "{}", String(LINES_PER_JOB)], { input: NAMES.join("\n") });
    expect(result.code).toBe(0);
    checkWholeLines(result.stdout.toString(), false);
  });

  it("--tag prefixes each line with the item and a tab", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "0", "--tag", "--", fixture("many-lines.sh"), "{}", String(LINES_PER_JOB)], { input: NAMES.join("\n") });
    checkWholeLines(result.stdout.toString(), true);
  });

  it("--tag without items prefixes the job number", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "1", "--count", "2", "--tag", "--", "printf", "a\\nb"]);
    // Tagged output is lines: the next job's tag starts a line; nothing is added at the end.
    expect(result.stdout.toString()).toBe("1\ta\n1\tb\n2\ta\n2\tb");
  });

  it("--output group: each job's output together, in one piece", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "-j", "0", "--output", "group", "--", fixture("many-lines.sh"), "{}", String(LINES_PER_JOB)], { input: NAMES.join("\n") });
    const text = result.stdout.toString();
    checkWholeLines(text, false);
    // Contiguous: the job's name changes exactly once per job.
    const names = text.trimEnd().split("\n").map((line) => line.split(":")[0]);
    const changes = names.filter((name, i) => i > 0 && name !== names[i - 1]).length;
    expect(changes).toBe(NAMES.length - 1);
  });

  it("--output group passes the bytes unchanged, an unfinished last line too", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--output", "group", "--", "printf", "a\\nno newline"]);
    expect(result.stdout.toString()).toBe("a\nno newline");
  });

  // Regression: a newline was added to every job's unfinished last line, so `cat file > copy` made a copy one byte longer.
  it("--output line: a job's unfinished last line gets a newline only where another job's output may run into it", async ({ expect }) => {
    const dir = tempDir();
    const file = join(dir, "no-final-newline");
    writeFileSync(file, "first line\nno newline at the end");
    const copy = await runCli(["run", "-r", "inf", "--count", "1", "--", "cat", file]);
    expect(copy.stdout).toEqual(readFileSync(file));
    expect(copy.code).toBe(0);
    // One at a time, the jobs' bytes follow each other as they are (as xargs gives them).
    const oneAtATime = await runCli(["run", "-r", "inf", "-j", "1", "--count", "2", "--", "printf", "no newline"]);
    expect(oneAtATime.stdout.toString()).toBe("no newlineno newline");
    // Side by side, the next job's output starts a line of its own; nothing is added at the end.
    const sideBySide = await runCli(["run", "-r", "inf", "-j", "2", "--count", "2", "--", "printf", "no newline"]);
    expect(sideBySide.stdout.toString()).toBe("no newline\nno newline");
    // tbucket's own line after the run starts on a line of its own.
    const failed = await runCli(["run", "-r", "inf", "--count", "1", "--shell", "--", "printf err >&2; exit 3"]);
    expect(failed.stderr).toBe("err\ntbucket: run: 1 started, 0 succeeded, 1 failed, 0 skipped, 0 retried\n");
  });

  it("--output raw: the job writes straight to our output, bytes unchanged", async ({ expect }) => {
    const result = await runCli(["run", "-r", "inf", "--count", "1", "--output", "raw", "--", "printf", "x\\0y"]);
    expect(result.stdout).toEqual(Buffer.from("x\0y"));
    const many = await runCli(["run", "-r", "inf", "-j", "0", "--output", "raw", "--", fixture("many-lines.sh"), "{}", "50"], { input: NAMES.join("\n") });
    expect(many.stdout.length).toBe(NAMES.reduce((sum, name) => sum + 50 * (name.length * 2 + 40) + [...Array(50).keys()].reduce((s, i) => s + String(i).length, 0), 0));
  });

  it("job standard output goes to standard output, job standard error to standard error", async ({ expect }) => {
    for (const mode of ["line", "group", "raw"]) {
      const result = await runCli(["run", "-r", "inf", "--count", "1", "--output", mode, "--shell", "--", "echo out; echo err >&2"]);
      expect([mode, result.stdout.toString(), result.stderr]).toEqual([mode, "out\n", "err\n"]);
    }
  });
});
