import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { editDistance } from "../../src/cli/mistyped-command.js";
import { runCli } from "../helpers/cli.js";
import { runMain } from "../helpers/in-process.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("typo");

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
    [["--rate", "1mb", "--stats-format", "xml"], `tbucket: --stats-format: "xml" is not a format; try "text" or "json"`],
    [["--rate", "1mb", "-p", "-q"], `tbucket: --progress and --quiet: choose one`],
    // Regression: an empty name showed as ": " before the figures.
    [["--rate", "1mb", "-N", ""], `tbucket: --name: empty; give the progress line a name, e.g. -N upload`],
    [["--rate", "1mb", "--name", "  "], `tbucket: --name: empty; give the progress line a name, e.g. -N upload`],
    [[], `tbucket: --rate: missing; try "tbucket --rate 1mb" (or --lines --rate 100/s), or --key to use a shared bucket`],
    [["--rat", "1mb"], `tbucket: unknown option '--rat'; did you mean --rate?`],
    [["--rate"], `tbucket: option '-r, --rate <rate>' argument missing; see 'tbucket --help'`],
    [["--rate", "1mb", "--on-store-error", "retry", "--key", "k"], `tbucket: --on-store-error: "retry" is not a mode; try "fail" or "local"`],
    // "open" lets HTTP requests through; a pipe has nothing to let through unlimited.
    [["--rate", "1mb", "--on-store-error", "open", "--key", "k"], `tbucket: --on-store-error: "open" is not a mode; try "fail" or "local"`],
    [["--rate", "1mb", "--key", "k", "--store-timeout", "soon"], `tbucket: --store-timeout: "soon" is not a duration; try "250ms", "2s" or "1.5m"`],
  ];

  it.each(cases)("%j", async (args, message) => {
    expect(await runMain(args)).toEqual({ code: 2, stderr: `${message}\n`, stdout: "" });
  });

  it.each([cases[0]!, cases.find(([args]) => args[0] === "--rat")!])("as the built tbucket prints them: %j", async (args, message) => {
    const result = await runCli(args, { input: "data\n" });
    expect([result.code, result.stderr, result.stdout.length]).toEqual([2, `${message}\n`, 0]);
  });
});

// Regression (issue 15): `tbucket simulte` said "--rate: missing", `tbucket simulte --rate 5` "simulte: no such file or directory".
describe("a mistyped command is named as such, before the pipe's options are checked", () => {
  const DID_YOU_MEAN = (word: string, command: string) => `tbucket: "${word}" is neither a file nor a command; did you mean "${command}"?\n`;

  it.each([
    [["simulte"], "simulte", "simulate"],
    [["simulte", "--rate", "5"], "simulte", "simulate"],
    [["simulte", "--arrivals", "steady 8/s for 1s"], "simulte", "simulate"],
    [["simluate", "--rate", "fast"], "simluate", "simulate"],
    [["kye", "list"], "kye", "key"],
    [["rn", "-r", "5", "--", "true"], "rn", "run"],
    [["pip", "-r", "1mb"], "pip", "pipe"],
    [["comlpetion", "bash"], "comlpetion", "completion"],
    [["-r", "1mb", "simulte"], "simulte", "simulate"],
    [["pipe", "simulte", "-r", "1mb"], "simulte", "simulate"],
  ])("%j: exit 2", async (args, word, command) => {
    expect(await runMain(args)).toEqual({ code: 2, stderr: DID_YOU_MEAN(word, command), stdout: "" });
  });

  it("a word far from every command is a file, as before", async () => {
    const result = await runCli(["--rate", "1mb", "no-such-file"]);
    expect([result.code, result.stderr]).toEqual([1, "tbucket: no-such-file: no such file or directory; check the path\n"]);
  });

  // Regression: `tbucket -- simulte` guessed a command, where `tbucket -r 1mb -- run` reads the file run.
  it.each([[["--rate", "1mb", "--", "simulte"]], [["pipe", "--rate", "1mb", "--", "simulte"]]])(
    "%j: a word after -- is a file, never a mistyped command",
    async (args) => {
      const result = await runCli(args, { input: "" });
      expect([result.code, result.stderr]).toEqual([1, "tbucket: simulte: no such file or directory; check the path\n"]);
    },
  );

  it("an existing file of that name is still read", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "simulte"), "data\n");
    const result = await runCli(["simulte", "--rate", "1mb"], { cwd: dir });
    expect([result.code, result.stderr, result.stdout.toString()]).toEqual([0, "", "data\n"]);
  });

  it("through the built tbucket, as a user sees it", async () => {
    const result = await runCli(["simulte", "--rate", "5"], { input: "" });
    expect([result.code, result.stderr, result.stdout.length]).toEqual([2, DID_YOU_MEAN("simulte", "simulate"), 0]);
  });
});

describe("editDistance: Damerau-Levenshtein (optimal string alignment)", () => {
  it.each([
    ["simulte", "simulate", 1],
    ["simluate", "simulate", 1],
    ["kye", "key", 1],
    ["", "run", 3],
    ["run", "run", 0],
    ["complteion", "completion", 1],
    ["ca", "abc", 3],
  ])("%s → %s: %d", (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
  });
});
