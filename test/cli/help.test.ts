import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-help-"));
  env = { XDG_STATE_HOME: join(dir, "state"), TBUCKET_STORE: "" };
  const set = await runCli(["key", "set", "k", "--rate", "1mb"], { env });
  expect(set.code).toBe(0);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("--help on every command", () => {
  it.each([["pipe"], ["run"], ["simulate"], ["key"], ["key", "set"], ["key", "list"], ["completion"]])(
    "tbucket %s --help ends with examples of that command",
    async (...command: string[]) => {
      const help = await runCli([...command, "--help"]);
      expect(help.code).toBe(0);
      const text = help.stdout.toString().trimEnd();
      const examples = text.slice(text.lastIndexOf("\nExamples:\n") + 1).split("\n");
      expect(examples[0]).toBe("Examples:");
      expect(examples.length).toBeGreaterThan(1);
      for (const line of examples.slice(1)) expect(line).toMatch(/^ {2}\S.*tbucket|^ {2}\S/);
      expect(examples.slice(1).some((line) => line.includes(`tbucket ${command[0] === "pipe" ? "" : command[0]}`))).toBe(true);
    },
  );
});

/** Every command that prints a report or a script to standard output. */
const PRINTING_COMMANDS = [["--help"], ["pipe", "--help"], ["--version"], ["key", "list"], ["key", "show", "k"], ["completion", "bash"]].map(
  (args) => [args.join(" "), args] as const,
);
const tbucket = (args: string[]) => [process.execPath, TBUCKET, ...args].map((word) => `'${word}'`).join(" ");

describe("standard output that goes away, fills up or is closed (issue 12)", () => {
  // Regression: "Unhandled 'error' event ... EPIPE" with a stack trace in 8 runs out of 10.
  it.each(PRINTING_COMMANDS)("tbucket %s | head -0 and | true, ten times: status 0 and nothing on standard error", async (_name, args) => {
    const script = `for i in 1 2 3 4 5; do ${tbucket(args)} | head -0; echo "\${PIPESTATUS[0]}"; ${tbucket(args)} | true; echo "\${PIPESTATUS[0]}"; done`;
    const result = await runShell(script, { env });
    expect(result.stderr).toBe("");
    expect(result.stdout.toString()).toBe("0\n".repeat(10));
  });

  // Regression: ENOSPC stack traces.
  it.each(PRINTING_COMMANDS)("tbucket %s > /dev/full: one line, status 1", async (_name, args) => {
    const result = await runShell(`${tbucket(args)} > /dev/full`, { env });
    expect(result.stderr).toBe("tbucket: standard output: no space left on device; free some space or write elsewhere\n");
    expect(result.code).toBe(1);
  });

  it("tbucket --version with a read-only standard output (1</dev/null): one line, status 1", async () => {
    const result = await runShell(`${tbucket(["--version"])} 1</dev/null`, { env });
    expect(result.stderr).toBe("tbucket: standard output: not open for writing; redirect it to a file or a pipe (> file)\n");
    expect(result.code).toBe(1);
  });

  it("a message on a full standard error (key list on an empty store, 2>/dev/full) changes nothing else: status 0", async () => {
    const result = await runShell(`${tbucket(["key", "list", "--store", `sqlite:${join(dir, "empty.db")}`])} 2>/dev/full; echo "status=$?"`, { env });
    expect(result.stdout.toString()).toBe("status=0\n");
  });

  it("a failure to write a usage message on standard error changes nothing else: status 2, no crash", async () => {
    const result = await runShell(`${tbucket(["--rate", "fast"])} 2>/dev/full < /dev/null; echo "status=$?"`);
    expect(result.stdout.toString()).toBe("status=2\n");
  });
});
