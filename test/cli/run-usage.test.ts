import { describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import { runMain } from "../helpers/in-process.js";

// The table is checked in-process: the real entry point parses, the command itself never runs.
vi.mock("../../src/cli/standard-streams.js", async (importOriginal) => (await import("../helpers/in-process.js")).captureStandardStreams(importOriginal));
vi.mock("../../src/cli/run/run.js", () => ({
  runRun: async () => {
    throw new Error("the arguments were accepted: run started");
  },
}));

describe("tbucket run: usage errors exit 2 with one line", () => {
  const cases: Array<[string[], string]> = [
    [
      ["run", "--rate", "1mb", "--", "curl", "-s", "x"],
      `tbucket: --rate: "1mb" is a byte rate; run launches commands, so it takes a count rate such as "5" or "300/m"; to limit a command's bandwidth, pipe it: curl -s URL | tbucket --rate 1mb > file\n`,
    ],
    [["run", "--", "true"], `tbucket: --rate: missing; try "tbucket run --rate 5 -- <command>", or --key to use a shared bucket\n`],
    [["run", "--rate", "5"], `tbucket: run: no command given; try "tbucket run --rate 5 -- curl -s https://example.com"\n`],
    [["run", "-r", "fast", "true"], `tbucket: --rate: "fast" is not a count rate; try "5", "300/m" or "1/10s"\n`],
    [["run", "-r", "5", "-j", "-1", "true"], `tbucket: --jobs: "-1" is not a whole number 0 or more; try "0" or "8"\n`],
    [["run", "-r", "5", "--output", "tty", "true"], `tbucket: --output: "tty" is not an output mode; try "line", "group" or "raw"\n`],
    [
      ["run", "-r", "5", "--output", "raw", "--tag", "true"],
      `tbucket: --tag: raw output is not split into lines, so it cannot be tagged; use "--output line" or "--output group"\n`,
    ],
    [
      ["run", "-r", "5", "--input", "x.txt", "echo"],
      `tbucket: --input: no argument of the command holds {}; write {} where the item goes, e.g. "curl -s {}"\n`,
    ],
    [["run", "-r", "5", "--duration", "0", "true"], `tbucket: --duration: "0" is not a duration here: it must be more than zero; try "30s" or "10m"\n`],
    [["run", "-r", "5", "--", ""], `tbucket: run: the command name is empty; name the program to run, e.g. "tbucket run --rate 5 -- curl -s https://example.com"\n`],
    [["run", "-r", "5", "--kill-after", "soon", "--", "true"], `tbucket: --kill-after: "soon" is not a duration; try "250ms", "2s" or "1.5m"\n`],
    [["run", "-r", "5", "--stats-format=xml", "--", "true"], `tbucket: --stats-format: "xml" is not a format; try "text" or "json"\n`],
    // --stats takes no value: the = form, as 0.1 wrote it, points to --stats-format.
    [["run", "-r", "5", "--stats=json", "--", "true"], `tbucket: --stats takes no value; did you mean --stats-format json?\n`],
  ];
  it.each(cases)("%j", async (args, stderr) => {
    expect(await runMain(args)).toEqual({ code: 2, stderr, stdout: "" });
  });

  it("as the built tbucket prints them: exit 2 and the one line, nothing on standard output", async () => {
    const [args, stderr] = cases[0]!;
    const result = await runCli(args);
    expect([result.code, result.stderr, result.stdout.length]).toEqual([2, stderr, 0]);
  });
});

describe("tbucket run: command line", () => {
  it("passes the command's own options through, with or without --", async () => {
    const withDashes = await runCli(["run", "-r", "inf", "--count", "1", "--", "printf", "%s|", "-r", "--count"]);
    const without = await runCli(["run", "-r", "inf", "--count", "1", "printf", "%s|", "-r", "--count"]);
    for (const result of [withDashes, without]) {
      expect(result.stdout.toString()).toBe("-r|--count|");
      expect(result.code).toBe(0);
    }
  });

  // Regression (issue 14): argv was rewritten to guess whether the word after --stats was a format.
  it("takes the word after --stats as the command, whatever it is", async () => {
    const result = await runCli(["run", "-qr", "5", "--count", "1", "--stats", "true"]);
    expect([result.code, result.stdout.toString()]).toEqual([0, ""]);
    expect(result.stderr).toMatch(/^jobs: +1 started, 1 succeeded/);
    const json = await runCli(["run", "-qr", "5", "--count", "1", "--stats", "json"]);
    expect(json.code).toBe(127);
    expect(json.stderr).toMatch(/json/);
  });

  it("leaves everything from the command word on untouched, --stats included", async () => {
    const result = await runCli(["run", "-r", "50", "--count", "1", "echo", "--stats", "x"]);
    expect(result.stdout.toString()).toBe("--stats x\n");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const own = await runCli(["run", "-r", "50", "--count", "1", "--stats-format", "json", "echo", "y"]);
    expect(own.stdout.toString()).toBe("y\n");
    expect(JSON.parse(own.stderr)).toMatchObject({ started: 1, succeeded: 1 });
  });

  it("a missing command: exit 127 and one clear line, nothing more launched", async () => {
    const result = await runCli(["run", "-r", "inf", "--count", "5", "--", "tbucket-no-such-command", "x"]);
    expect(result.code).toBe(127);
    expect(result.stderr).toBe(`tbucket: run: "tbucket-no-such-command": command not found; check the name and your PATH\n`);
  });

  it("--help ends with examples and shows the defaults", async () => {
    const result = await runCli(["run", "--help"]);
    const help = result.stdout.toString();
    expect(result.code).toBe(0);
    expect(help).toContain(`(default: 8)`);
    expect(help).toContain(`(default: line)`);
    expect(help).toMatch(/Examples:\n {2}tbucket run --rate 5 -- curl/);
    expect(help).toContain("tbucket --rate 1mb > file");
    expect(help.trimEnd().split("\n").at(-1)).toMatch(/^ {2}.*tbucket run /);
  });
});
