// `tbucket completion bash|zsh|fish`: each script is checked by its own shell,
// and bash's and fish's are asked for real completions.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProgram } from "../../src/cli/program.js";
import { runCli } from "../helpers/cli.js";

let dir: string;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-completion-"));
  for (const shell of ["bash", "zsh", "fish"]) {
    const result = await runCli(["completion", shell]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    scripts[shell] = join(dir, `tbucket.${shell}`);
    writeFileSync(scripts[shell]!, result.stdout);
  }
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a shell; a shell that is not installed fails the test with how to install it. */
function shell(name: "bash" | "zsh" | "fish", args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(name, args, { encoding: "utf8", cwd: dir, env: { PATH: process.env.PATH, HOME: dir } });
  if (result.error) throw new Error(`${name} is not installed (Debian: apt-get install ${name}); scripts/ensure-system-packages.sh should install it`);
  return result;
}

/** What bash's completion function offers for the words typed so far (the last one is being completed). */
function bashComplete(...words: string[]): string[] {
  const quoted = words.map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(" ");
  const run = shell("bash", ["-c", `source '${scripts.bash}'; COMP_WORDS=(tbucket ${quoted}); COMP_CWORD=${words.length}; _tbucket; printf '%s\\n' "\${COMPREPLY[@]}"`]);
  expect(run.stderr).toBe("");
  return run.stdout.split("\n").filter(Boolean);
}

/** What fish offers for a command line, as `complete -C` answers (names only). */
function fishComplete(line: string): string[] {
  const run = shell("fish", ["-c", `source '${scripts.fish}'; complete -C '${line}'`]);
  expect(run.stderr).toBe("");
  return run.stdout.split("\n").filter(Boolean).map((entry) => entry.split("\t")[0]!);
}

/** Every command path with its options' long names, read from the program itself. */
function programTree(command: Command, path: string[] = []): Array<{ path: string[]; longs: string[] }> {
  return [
    { path, longs: command.options.map((option) => option.long).filter((long): long is string => long !== undefined) },
    ...command.commands.flatMap((sub) => programTree(sub, [...path, sub.name()])),
  ];
}

describe("tbucket completion bash", () => {
  it("is valid bash (bash -n)", () => {
    expect(shell("bash", ["-n", scripts.bash!])).toMatchObject({ status: 0, stderr: "" });
  });

  it("offers commands, and options of the default pipe, at the top", () => {
    expect(bashComplete("ru")).toEqual(["run"]);
    expect(bashComplete("sim")).toEqual(["simulate"]);
    expect(bashComplete("--ra")).toEqual(["--rate"]);
    expect(bashComplete("-r", "1mb", "--st")).toEqual(["--stats", "--stats-format", "--store"]);
    // --stats takes no value: after it come files again; --stats-format offers its two formats.
    expect(bashComplete("run", "--stats-format", "")).toEqual(["text", "json"]);
    expect(bashComplete("--stats-format", "")).toEqual(["text", "json"]);
  });

  it("offers a command's own options after its name, skipping option values", () => {
    expect(bashComplete("run", "--jo")).toEqual(["--jobs", "--joblog"]);
    expect(bashComplete("run", "--rate", "5", "--ret")).toEqual(["--retries"]);
    expect(bashComplete("completion", "")).toEqual(["bash", "zsh", "fish"]);
    expect(bashComplete("help", "ru")).toEqual(["run"]);
    expect(bashComplete("key", "s")).toEqual(["show", "set"]);
  });

  it("offers nothing for a value that cannot be guessed (a rate) and commands after run --", () => {
    expect(bashComplete("--rate", "")).toEqual([]);
    expect(bashComplete("run", "-r", "5", "--", "ech")).toContain("echo");
  });

  it("knows every command and option of the program (it is generated from it)", () => {
    for (const { path, longs } of programTree(createProgram(() => {}))) {
      const run = shell("bash", ["-c", `source '${scripts.bash}'; __tbucket_options '${path.join(" ")}'`]);
      const offered = run.stdout.trim().split(" ");
      for (const long of longs) expect(offered, `tbucket ${path.join(" ")} ${long}`).toContain(long);
      if (path.length === 1) expect(bashComplete(path[0]!.slice(0, -1))).toContain(path[0]);
    }
  });
});

describe("tbucket completion zsh", () => {
  it("is valid zsh (zsh -n)", () => {
    expect(shell("zsh", ["-n", scripts.zsh!])).toMatchObject({ status: 0, stderr: "" });
  });

  it("registers _tbucket when sourced after compinit, and when autoloaded from $fpath", () => {
    // Sourced: it calls compdef (compinit's, here a stand-in that shows what it was given).
    const sourced = shell("zsh", ["-c", `compdef() { print -r -- "compdef $*" }; source '${scripts.zsh}'`]);
    expect(sourced).toMatchObject({ status: 0, stdout: "compdef _tbucket tbucket\n" });
    const functions = join(dir, "zfunc");
    mkdirSync(functions, { recursive: true });
    writeFileSync(join(functions, "_tbucket"), spawnSync("cat", [scripts.zsh!]).stdout);
    const autoloaded = shell("zsh", ["-c", `fpath=('${functions}' $fpath); autoload -U compinit && compinit -u -D && print -r -- $_comps[tbucket]`]);
    expect(autoloaded).toMatchObject({ status: 0, stdout: "_tbucket\n" });
  });

  it("has one function per command, each declaring that command's options", () => {
    const text = spawnSync("cat", [scripts.zsh!], { encoding: "utf8" }).stdout;
    expect(text.startsWith("#compdef tbucket\n")).toBe(true);
    for (const name of ["_tbucket()", "_tbucket__run()", "_tbucket__completion()"]) expect(text).toContain(name);
    expect(text).toMatch(/'\(-j --jobs\)'?-j\[/);
  });
});

describe("tbucket completion fish", () => {
  it("is valid fish (fish -n)", () => {
    expect(shell("fish", ["-n", scripts.fish!])).toMatchObject({ status: 0, stderr: "" });
  });

  it("completes commands, options and values", () => {
    expect(fishComplete("tbucket --ra")).toEqual(["--rate"]);
    expect(fishComplete("tbucket ")).toEqual(expect.arrayContaining(["run", "simulate", "completion"]));
    expect(fishComplete("tbucket run --jo")).toEqual(expect.arrayContaining(["--jobs", "--joblog"]));
    expect(fishComplete("tbucket run --rate 5 --ret")).toEqual(["--retries"]);
    expect(fishComplete("tbucket completion ")).toEqual(["bash", "fish", "zsh"]);
    expect(fishComplete("tbucket key s")).toEqual(["set", "show"]);
    // A file is expected: fish offers the folder's files (the scripts written by this test).
    expect(fishComplete("tbucket simulate --trace tbucket.")).toEqual(["tbucket.bash", "tbucket.fish", "tbucket.zsh"]);
  });

  it("completes the launched command after run --", () => {
    expect(fishComplete("tbucket run -r 5 -- ech")).toContain("echo");
  });
});

describe("tbucket completion with a wrong shell", () => {
  it("names the shells it knows and exits 2", async () => {
    const wrong = await runCli(["completion", "tcsh"]);
    expect(wrong).toMatchObject({ code: 2, stderr: `tbucket: completion: "tcsh" is not a supported shell; use bash, zsh or fish\n` });
    expect(wrong.stdout.length).toBe(0);
    const missing = await runCli(["completion"]);
    expect(missing).toMatchObject({ code: 2, stderr: `tbucket: completion: no shell named; use bash, zsh or fish, e.g. "tbucket completion bash"\n` });
  });
});
