// Hostile input to the pipe's private limit sets, end to end on the built binary: exact bytes, exit codes, messages.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("tbucket pipe with a set of limits, given what breaks things", () => {
  it.each([
    [["--lines", "--window", "5b/1s"], "a line"],
    [["--lines", "--null", "--rate", "1mb", "--window", "5b/1s"], "a record"],
  ])("%j: a line longer than a byte window's n can never go out whole: what came before is written, then one line and status 1", async (args, record) => {
    const input = args.includes("--null") ? "ab\0hello world\0ab\0" : "ab\nhello world\nab\n";
    const result = await runCli(args, { input, timeoutMs: 5000 });
    expect(result.stdout.toString()).toBe(input.slice(0, 3));
    expect(result.stderr).toBe(
      `tbucket: ${record} of 12 bytes can never go out whole: --window 5b/1s lets 5 bytes through in any 1.0 s; give --window a larger n, or drop --lines to let lines be split\n`,
    );
    expect(result.code).toBe(1);
  });
});
