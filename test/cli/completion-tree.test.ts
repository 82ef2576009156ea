// The command tree the completion scripts are generated from, read in-process.
import { describe, expect, it } from "vitest";
import { allCommands, describeCommandTree } from "../../src/cli/completion/command-tree.js";
import { createProgram, DEFAULT_COMMAND } from "../../src/cli/program.js";

const longs = (options: Array<{ long?: string }>) => options.map((option) => option.long);

describe("describeCommandTree", () => {
  it("names the command commander runs when none is given", () => {
    // The one place that reads commander's private field: if it moves, this fails, not completion.
    const program = createProgram(() => {}) as unknown as { _defaultCommandName?: string };
    expect(program._defaultCommandName).toBe(DEFAULT_COMMAND);
  });

  it("gives the root the default command's options and operands, and only when it is named", () => {
    const withDefault = describeCommandTree(createProgram(() => {}), DEFAULT_COMMAND);
    expect(longs(withDefault.options)).toEqual(expect.arrayContaining(["--version", "--help", "--rate", "--burst", "--lines"]));
    expect(withDefault.operands).toEqual({ kind: "files", values: [] });
    const without = describeCommandTree(createProgram(() => {}));
    expect(longs(without.options)).toEqual(["--version", "--help"]);
    expect(without.operands).toEqual({ kind: "none", values: [] });
  });

  it("describes values, fixed choices and file options as plain data", () => {
    const tree = describeCommandTree(createProgram(() => {}), DEFAULT_COMMAND);
    const command = (path: string) => allCommands(tree).find((spec) => spec.path.join(" ") === path)!;
    const option = (path: string, long: string) => command(path).options.find((spec) => spec.long === long)!;
    expect(option("run", "--rate")).toMatchObject({ short: "-r", value: "required", valueName: "rate", choices: [], files: false });
    expect(option("run", "--stats-format")).toMatchObject({ value: "required", choices: ["text", "json"] });
    expect(option("simulate", "--trace")).toMatchObject({ value: "required", files: true });
    expect(option("run", "--stats")).toMatchObject({ value: "none" });
    // A limit set: every --rate, --burst and --window is kept, so completion offers them again.
    for (const path of ["pipe", "run"]) {
      for (const long of ["--rate", "--burst", "--window"]) expect(option(path, long)).toMatchObject({ value: "required", repeatable: true });
    }
    expect(option("run", "--concurrency")).toMatchObject({ value: "required", valueName: "n", repeatable: false });
    expect(option("run", "--jobs")).toMatchObject({ repeatable: false });
    expect(command("completion").operands).toEqual({ kind: "words", values: ["bash", "zsh", "fish"] });
    expect(command("run").operands.kind).toBe("command");
    expect(command("help").operands).toEqual({ kind: "words", values: ["pipe", "run", "simulate", "key", "proxy", "completion"] });
    expect(command("key").subcommands.map((sub) => sub.path)).toEqual(expect.arrayContaining([["key", "set"], ["key", "show"]]));
  });
});
