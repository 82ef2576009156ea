import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProgram } from "../../src/cli/program.js";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";
import { runInTerminal } from "../helpers/terminal.js";

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

/** The commander command at `path`, from the program itself: what its help must list. */
function commandAt(path: readonly string[]): Command {
  let command: Command = createProgram(() => {});
  for (const name of path) command = command.commands.find((sub) => sub.name() === name)!;
  return command;
}

/** The section of a help text that starts with `title` (e.g. "Options:"), up to the next blank line. */
function section(text: string, title: string): string[] {
  const lines = text.split("\n");
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const end = lines.indexOf("", start);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** The long options an example gives tbucket: after "tbucket", up to a pipe, a redirection, a comment or the `--` before a launched command. */
function longOptionsOf(example: string): { words: string[]; longs: string[] } {
  const invocation = example.slice(example.indexOf("tbucket ") + "tbucket ".length).split(/ \| | -- | # | > | < |\)/)[0]!;
  const words = invocation.split(/\s+/);
  return { words, longs: words.filter((word) => /^--[a-z]/.test(word)).map((word) => word.replace(/=.*$/, "")) };
}

const HELP_USAGE: Array<[string[], string]> = [
  [[], "Usage: tbucket [options] [file...]"],
  [["pipe"], "Usage: tbucket pipe [options] [file...]"],
  [["run"], "Usage: tbucket run [options] [--] command [args...]"],
  [["simulate"], "Usage: tbucket simulate [options]"],
  [["key"], "Usage: tbucket key <command> [options]"],
  [["key", "set"], "Usage: tbucket key set <key> [options]"],
  [["key", "show"], "Usage: tbucket key show <key> [options]"],
  [["key", "delete"], "Usage: tbucket key delete <key> [options]"],
  [["key", "list"], "Usage: tbucket key list [options]"],
  [["completion"], "Usage: tbucket completion <bash|zsh|fish>"],
];

/** Every command path of the program, the top level first. */
function allPaths(command: Command = createProgram(() => {}), path: string[] = []): string[][] {
  return [path, ...command.commands.flatMap((sub) => allPaths(sub, [...path, sub.name()]))];
}

describe("--help on every command", () => {
  // Regression (issue 15): "(default: false)", "(default: \"8\")" and "Usage: tbucket key [options] [command] [subcommand]".
  it.each(allPaths().map((path) => [path.join(" ") || "(top)", path] as const))(
    "tbucket %s --help: defaults as a user writes them, a usage line that reads right",
    async (_name, path) => {
      const help = await runCli([...path, "--help"]);
      expect(help).toMatchObject({ code: 0, stderr: "" });
      const text = help.stdout.toString();
      expect(text).not.toContain(`(default: "`);
      expect(text).not.toMatch(/\(default: (false|true)\)/);
      expect(text).not.toContain(`(choices: "`);
      const usage = text.split("\n")[0]!;
      expect(usage).not.toMatch(/\[command\].*\[subcommand\]/);
      expect(usage).toMatch(new RegExp(`^Usage: tbucket ${path.join(" ")}${path.length > 0 ? " " : ""}\\S`));
    },
  );

  it("tbucket --help shows the pipe's main options first, as pv does, then the commands", async () => {
    const text = (await runCli(["--help"])).stdout.toString();
    const options = section(text, "Options:").join("\n");
    for (const flags of ["-r, --rate <rate>", "-b, --burst <size>", "-l, --lines", "-0, --null", "-s, --size <size>", "-p, --progress", "-q, --quiet", "--stats ", "-V, --version"]) {
      expect(options).toContain(`  ${flags}`);
    }
    expect(options.indexOf("--rate")).toBeLessThan(options.indexOf("--version"));
    expect(section(text, "Commands:").map((line) => line.split(/\s{2,}/)[1]).filter(Boolean)).toEqual(
      expect.arrayContaining(["pipe [file...]", "run [--] command [args...]", "simulate", "key <command>", "completion <bash|zsh|fish>"]),
    );
    expect(text).toContain("tbucket pipe --help");
  });

  it("pipe and run --help list the limit-set flags, and run's says how --concurrency and --jobs combine", async () => {
    const pipe = section((await runCli(["pipe", "--help"])).stdout.toString(), "Options:").join("\n");
    for (const flags of ["-r, --rate <rate>", "-b, --burst <size>", "--window <n/w>"]) expect(pipe).toContain(`  ${flags}`);
    expect(pipe).not.toContain("--concurrency");
    const run = (await runCli(["run", "--help"])).stdout.toString();
    for (const flags of ["-r, --rate <rate>", "-b, --burst <n>", "--window <n/w>", "--concurrency <n>", "-j, --jobs <n>"]) expect(section(run, "Options:").join("\n")).toContain(`  ${flags}`);
    expect(run).toContain("given both, the lower holds");
  });

  it.each(HELP_USAGE.map(([path, usage]) => [path.join(" ") || "(top)", path, usage] as const))(
    "tbucket %s --help: the usage line, every option the command declares, and examples of that command",
    async (_name, path, usage) => {
      const help = await runCli([...path, "--help"]);
      expect(help).toMatchObject({ code: 0, stderr: "" });
      const text = help.stdout.toString();
      expect(text.split("\n")[0]).toBe(usage);

      const command = commandAt(path);
      const options = section(text, "Options:").join("\n");
      // A command's option shows in its help; the top level's also shows the pipe's main options (tested above).
      for (const option of command.options.filter((declared) => !declared.hidden)) expect(options, `${usage}: ${option.flags}`).toContain(`  ${option.flags}`);
      expect(options).toContain("-h, --help");

      const examples = section(text, "Examples:");
      expect(examples.length, "examples").toBeGreaterThanOrEqual(2);
      for (const example of examples) {
        // An example runs tbucket, as this command (the top level's run each command; pipe's run the default one).
        expect(example, "example").toMatch(/^ {2}(\S.*)?\btbucket( |$)/);
        const { words, longs } = longOptionsOf(example);
        if (path[0] === "pipe") expect(words[0], example).toMatch(/^-/);
        else if (path.length > 0) expect(words.slice(0, path.length), example).toEqual(path);
        // Every option an example uses is one the command it runs declares (subcommands' included).
        const isCommand = commandAt([]).commands.some((sub) => sub.name() === words[0]);
        const runs = commandAt(path.length > 0 ? path : isCommand ? [words[0]!] : ["pipe"]);
        const declared = new Set([...runs.options.map((option) => option.long), ...runs.commands.flatMap((sub) => sub.options.map((option) => option.long)), "--help"]);
        for (const long of longs) expect(declared.has(long), `${example}: ${long}`).toBe(true);
      }
    },
  );
});

// Regression: below commander's minWidthToWrap the descriptions stayed one long line each, broken mid-word by the terminal.
describe("--help on a terminal 40 and 200 columns wide", () => {
  it.each(allPaths().map((path) => [path.join(" ") || "(top)", path] as const))("tbucket %s --help", async (_name, path) => {
    const [narrow, wide] = await Promise.all(
      [40, 200].map(async (columns) => {
        const result = await runInTerminal(`tbucket ${path.join(" ")} --help`, { columns });
        expect(result.code).toBe(0);
        return result.stdout.toString().replaceAll("\r\n", "\n");
      }),
    );
    // Prose (notes, the usage line) wrapped at spaces; indented lines (examples) as they are.
    for (const row of narrow!.split("\n").filter((row) => !/^\s/.test(row))) expect(row.length, row).toBeLessThanOrEqual(40);
    for (const title of ["Options:", "Commands:", "Arguments:"]) {
      const rows = section(narrow!, title);
      for (const row of rows) expect(row.length, row).toBeLessThanOrEqual(40);
      // Each term on a line of its own, its description under it.
      if (rows.length > 0) expect(rows[0]).toMatch(/^  \S/);
      for (const row of section(wide!, title)) expect(row, row).toMatch(/^  \S.*\S {2,}\S|^ {3,}\S/);
    }
  });
});

// Regression: `tbucket help simulte` printed the whole help on standard error, then "tbucket: (outputHelp)", status 2.
describe("tbucket help <command>", () => {
  it.each([
    [["help", "run"], ["run", "--help"]],
    [["help", "key", "show"], ["key", "show", "--help"]],
    [["help"], ["--help"]],
  ])("%j prints what %j prints, on standard output", async (args, same) => {
    const [help, direct] = await Promise.all([runCli(args), runCli(same)]);
    expect([help.code, help.stderr, help.stdout.toString()]).toEqual([0, "", direct.stdout.toString()]);
  });

  it.each([
    [["help", "simulte"], `tbucket: help: "simulte" is not a command; did you mean "tbucket help simulate"?\n`],
    [["help", "key", "shw"], `tbucket: help: "key shw" is not a command; did you mean "tbucket help key show"?\n`],
    [["help", "nosuch"], `tbucket: help: "nosuch" is not a command; see 'tbucket --help' for the commands\n`],
  ])("%j: one line, status 2, no help text", async (args, message) => {
    const result = await runCli(args);
    expect([result.code, result.stderr, result.stdout.toString()]).toEqual([2, message, ""]);
  });
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
