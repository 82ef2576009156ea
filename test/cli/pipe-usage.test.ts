import { describe, expect, it, vi } from "vitest";
import { runCli } from "../helpers/cli.js";
import { runMain } from "../helpers/in-process.js";

// The table is checked in-process: the real entry point parses, the pipe itself never runs.
vi.mock("../../src/cli/standard-streams.js", async (importOriginal) => (await import("../helpers/in-process.js")).captureStandardStreams(importOriginal));
vi.mock("../../src/cli/pipe/run.js", () => ({
  runPipe: async () => {
    throw new Error("the arguments were accepted: the pipe started");
  },
}));

describe("tbucket pipe: bad input gets one clear line and status 2", () => {
  const cases: Array<[string[], string]> = [
    [["--rate", "fast"], `tbucket: --rate: "fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    [["--rate", "0"], `tbucket: --rate: "0" is not a byte rate: it must be more than zero; try "1mb", "512k/s" or "10mbit"`],
    [["--rate", "-5"], `tbucket: --rate: "-5" is not a byte rate; try "1mb", "512k/s" or "10mbit"`],
    [["--rate", "1mb", "--burst", "lots"], `tbucket: --burst: "lots" is not a size; try "8k", "4mb" or "1000"`],
    [["--rate", "1mb", "--burst", "0"], `tbucket: --burst: "0" is not a size: it must be more than zero; try "8k", "4mb" or "1000"`],
    [["--lines", "--rate", "10/s", "--burst", "2.5"], `tbucket: --burst: "2.5" is not a whole number 1 or more; try "1" or "10"`],
    [["--rate", "1mb", "--size", "big"], `tbucket: --size: "big" is not a size; try "8k", "4mb" or "1000"`],
    [["--rate", "1mb", "--stats-format", "xml"], `tbucket: --stats-format: "xml" is not a format; try "--stats-format text" or "--stats-format json"`],
    [["--rate", "1mb", "-p", "-q"], `tbucket: --progress and --quiet: choose one`],
    [[], `tbucket: --rate: missing; try "tbucket --rate 1mb" (or --lines --rate 100/s), or --key to use a shared bucket`],
    [["--rat", "1mb"], `tbucket: unknown option '--rat'; did you mean --rate?`],
    [["--rate"], `tbucket: option '-r, --rate <rate>' argument missing; see 'tbucket --help'`],
    [["--rate", "1mb", "--on-store-error", "retry", "--key", "k"], `tbucket: --on-store-error: "retry" is not a mode; try "fail" or "local"`],
  ];

  it.each(cases)("%j", async (args, message) => {
    expect(await runMain(args)).toEqual({ code: 2, stderr: `${message}\n`, stdout: "" });
  });

  it.each([cases[0]!, cases.find(([args]) => args[0] === "--rat")!])("as the built tbucket prints them: %j", async (args, message) => {
    const result = await runCli(args, { input: "data\n" });
    expect([result.code, result.stderr, result.stdout.length]).toEqual([2, `${message}\n`, 0]);
  });
});
