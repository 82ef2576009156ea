/**
 * `tbucket run --class`, end to end on the built binary: usage errors, an
 * item naming no defined class, and what --stats says of each class.
 */
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

const TWO = ["-r", "20/s", "--class", "a=15/s,prio=0", "--class", "b=5/s,prio=1"];

describe("tbucket run --class: usage errors exit 2 with one line", () => {
  const cases: Array<[string[], string]> = [
    [["run", ...TWO, "--key", "k", "--", "true"], `tbucket: --class: a shared key's classes are set with "tbucket key set k --class NAME=RATE ..."; with --key, choose each job's with --class-of\n`],
    [["run", "-r", "20/s", "--class-of", "a", "--", "true"], `tbucket: --class-of: only with --class, which defines the classes (or --key, whose classes are the key's); e.g. "--class web=15/s,prio=0 --class batch=5/s,prio=1 --class-of {2}"\n`],
    [["run", ...TWO, "--class-of", "c", "--", "true"], `tbucket: --class-of: no class "c"; the classes are a, b (define it with --class c=RATE, or name one of them)\n`],
    [
      ["run", ...TWO, "--class-of", "{2}", "--", "true"],
      `tbucket: --class-of {2}: the jobs have no items (no {} in the command) to read a class from; name one class for all, e.g. "--class-of a"\n`,
    ],
    [["run", ...TWO, "--class", "a=1/s", "--", "true"], `tbucket: --class: "a" is defined twice; give each class one --class\n`],
    [["run", "-r", "20/s", "--class", "a", "--", "true"], `tbucket: --class a: missing its guarantee after the name; e.g. "--class interactive=20/s,prio=0" or "--class batch=5/s,ceil=50/s,prio=1,weight=2"\n`],
  ];
  it.each(cases)("%j", async (args, stderr) => {
    const result = await runCli(args);
    expect({ code: result.code, stderr: result.stderr, stdout: result.stdout.toString() }).toEqual({ code: 2, stderr, stdout: "" });
  });
});

describe("tbucket run --class: items", () => {
  it("fails an item whose class is not defined, in one line naming its line, and runs the others (exit 1)", async () => {
    const result = await runCli(["run", ...TWO, "-j", "1", "--class-of", "{2}", "--", "echo", "{}"], { input: "x a\ny c\nz b\n" });
    expect(result.code).toBe(1);
    expect(result.stdout.toString()).toBe("x a\nz b\n");
    expect(result.stderr).toBe(
      `tbucket: run: line 2: no class "c"; the classes are a, b (define it with --class c=RATE, or name one of them); or pass --skip-bad to skip such items\n` +
        "tbucket: run: 2 started, 2 succeeded, 1 failed, 0 skipped, 0 retried\n",
    );
  });

  it("says which field an item lacks", async () => {
    const result = await runCli(["run", ...TWO, "--class-of", "{.p}", "--", "true", "{}"], { input: `{"p":"a"}\nnot json\n` });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("tbucket: run: line 2: class {.p}: the item is not JSON; or pass --skip-bad to skip such items\ntbucket: run: 1 started, 1 succeeded, 1 failed, 0 skipped, 0 retried\n");
  });

  it("--skip-bad skips an item whose class cannot be read, and the run succeeds", async () => {
    const result = await runCli(["run", ...TWO, "-j", "1", "--class-of", "{2}", "--skip-bad", "--", "echo", "{}"], { input: "x a\ny c\nz b\n" });
    expect([result.code, result.stdout.toString()]).toEqual([0, "x a\nz b\n"]);
    expect(result.stderr).toBe('tbucket: run: --skip-bad: skipped 1 bad item (the first: line 2: no class "c"; the classes are a, b (define it with --class c=RATE, or name one of them))\n');
  });

  it("gives each class's launches and share in --stats, text and JSON", async () => {
    const input = "1 a\n2 b\n3 a\n4 a\n";
    const text = await runCli(["run", ...TWO, "--class-of", "{2}", "--stats", "--", "true", "{}"], { input });
    expect(text.code).toBe(0);
    expect(text.stderr).toContain("classes:  a 3 (75.00%), b 1 (25.00%)\n");
    const json = await runCli(["run", ...TWO, "--class-of", "{2}", "--stats", "--stats-format", "json", "--", "true", "{}"], { input });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stderr).classes).toEqual([
      { name: "a", launches: 3, share: 0.75 },
      { name: "b", launches: 1, share: 0.25 },
    ]);
  });

  it("shows each class's share in the progress line (--progress)", async () => {
    const result = await runCli(["run", ...TWO, "--class-of", "{2}", "--progress", "--", "true", "{}"], { input: "1 a\n2 b\n3 a\n4 a\n" });
    expect(result.code).toBe(0);
    const lines = result.stderr.split(/[\r\n]/).filter((line) => line.includes("started"));
    expect(lines.at(-1)).toMatch(/ · a 75%, b 25%$/);
  });
});
