// `tbucket completion bash|zsh|fish`: each script is checked by its own shell,
// and each shell is asked for real completions of the same lines: bash by
// calling its completion function, fish by `complete -C`, zsh by typing the
// line and Tab into an interactive zsh in a pseudo-terminal.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProgram } from "../../src/cli/program.js";
import { fileURLToPath } from "node:url";
import { runCli, TBUCKET } from "../helpers/cli.js";

const ZSH_COMPLETE = fileURLToPath(new URL("../helpers/zsh-complete.zsh", import.meta.url));

let dir: string;
/** The environment of every shell: tbucket on PATH, and a default store of this test's own. */
let env: NodeJS.ProcessEnv;
const scripts: Record<string, string> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-completion-"));
  mkdirSync(join(dir, "bin"));
  symlinkSync(TBUCKET, join(dir, "bin", "tbucket"));
  env = { PATH: `${join(dir, "bin")}:${process.env.PATH}`, HOME: dir, XDG_STATE_HOME: join(dir, "state"), TBUCKET_STORE: "" };
  const other = `sqlite:${join(dir, "other.db")}`;
  for (const [name, rate, store] of [["backups", "20mb", ""], ["api", "5/s", ""], ["elsewhere", "1mb", other], ["tenant:api", "5/s", other]]) {
    const set = await runCli(["key", "set", name!, "--rate", rate!, ...(store ? ["--store", store] : [])], { env });
    expect(set.code).toBe(0);
  }
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
function shell(name: "bash" | "zsh" | "fish", args: string[], extraEnv: NodeJS.ProcessEnv = {}): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(name, args, { encoding: "utf8", cwd: dir, env: { ...env, ...extraEnv }, timeout: 20_000 });
  if (result.error) throw new Error(`${name} is not installed (Debian: apt-get install ${name}); scripts/ensure-system-packages.sh should install it`);
  return result;
}

/**
 * What bash's completion function offers for the words typed so far (the last one is being completed).
 * The words reach it as bash splits them: = and : are in COMP_WORDBREAKS, so --store=sqlite:/x is five words.
 */
function bashComplete(...typed: string[]): string[] {
  const words = typed.flatMap((word) => (word === "" ? [""] : word.split(/([=:])/).filter((piece) => piece !== "")));
  const quoted = words.map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(" ");
  const run = shell("bash", ["-c", `source "$SCRIPT"; COMP_WORDS=(tbucket ${quoted}); COMP_CWORD=${words.length}; COMP_LINE="$LINE"; _tbucket; printf '%s\\n' "\${COMPREPLY[@]}"`], {
    SCRIPT: scripts.bash,
    LINE: ["tbucket", ...typed].join(" "),
  });
  expect(run.stderr).toBe("");
  return run.stdout.split("\n").filter(Boolean);
}

/** What fish offers for a command line, as `complete -C` answers (names only). */
function fishComplete(line: string): string[] {
  const run = shell("fish", ["-c", `source "$SCRIPT"; complete -C "$LINE"`], { SCRIPT: scripts.fish, LINE: line });
  expect(run.stderr).toBe("");
  return run.stdout.split("\n").filter(Boolean).map((entry) => entry.split("\t")[0]!);
}

/** What zsh offers when the line is typed and Tab pressed, in an interactive zsh after compinit. */
function zshComplete(line: string): string[] {
  const run = shell("zsh", ["-f", ZSH_COMPLETE, scripts.zsh!, line]);
  expect([run.status, run.stderr]).toEqual([0, ""]);
  return run.stdout.split("\n").map((entry) => entry.trimEnd()).filter(Boolean);
}

/** The same lines, completed by each shell: what a user sees after typing the line and Tab. */
const COMPLETE: Record<"bash" | "zsh" | "fish", (line: string) => string[]> = {
  bash: (line) => bashComplete(...line.split(" ").slice(1)),
  zsh: zshComplete,
  fish: fishComplete,
};
const sorted = (words: string[]) => [...words].sort();

/** Every command path with its options' long names, read from the program itself. */
function programTree(command: Command, path: string[] = []): Array<{ path: string[]; longs: string[] }> {
  return [
    { path, longs: command.options.filter((option) => !option.hidden).map((option) => option.long).filter((long): long is string => long !== undefined) },
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
    expect(bashComplete("-r", "1mb", "--st")).toEqual(["--stats", "--stats-format", "--store", "--store-timeout"]);
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

describe("tbucket completion --keys, which the scripts run", () => {
  it("prints the names one a line; a store it cannot read gives nothing, silently, status 0", async () => {
    expect(await runCli(["completion", "--keys"], { env })).toMatchObject({ code: 0, stderr: "" });
    expect((await runCli(["completion", "--keys"], { env })).stdout.toString()).toBe("api\nbackups\n");
    for (const store of ["ftp://x", "redis://127.0.0.1:1", `sqlite:${join(dir, "none", "x.db")}`, "memory:"]) {
      const result = await runCli(["completion", "--keys", "--store", store], { env });
      expect([result.code, result.stdout.toString(), result.stderr], store).toEqual([0, "", ""]);
    }
    expect(existsSync(join(dir, "none"))).toBe(false);
  });

  it("is not in the help", async () => {
    expect((await runCli(["completion", "--help"])).stdout.toString()).not.toContain("--keys");
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

describe.each(["bash", "zsh", "fish"] as const)("%s completes what a user types (the same lines in every shell)", (name) => {
  const complete = (line: string) => COMPLETE[name](line);

  it("commands and options", () => {
    expect(complete("tbucket ru")).toEqual(["run"]);
    expect(complete("tbucket --ra")).toEqual(["--rate"]);
    expect(sorted(complete("tbucket key s"))).toEqual(["set", "show"]);
    expect(sorted(complete("tbucket run --jo"))).toEqual(["--joblog", "--jobs"]);
    expect(sorted(complete("tbucket completion "))).toEqual(["bash", "fish", "zsh"]);
    expect(complete("tbucket ")).toEqual(expect.arrayContaining(["run", "simulate", "key", "completion"]));
  });

  // Issue 15: option values complete, from the same list commander checks.
  it.each([
    ["tbucket simulate --policy ", ["drop", "queue"]],
    ["tbucket simulate --format ", ["csv", "json", "jsonl", "summary", "table"]],
    ["tbucket simulate --cost ", ["bytes", "count"]],
    ["tbucket run --output ", ["group", "line", "raw"]],
    ["tbucket key set k --kind ", ["bytes", "count"]],
    ["tbucket --on-store-error ", ["fail", "local"]],
    ["tbucket run --stats-format ", ["json", "text"]],
    ["tbucket --stats-format j", ["json"]],
    ["tbucket proxy --per ", ["all", "client", "connection", "ip", "link"]],
    ["tbucket proxy --policy ", ["drop", "queue"]],
  ])("option values: %s", (line, values) => {
    expect(sorted(complete(line))).toEqual(values);
  });

  it.each([
    ["tbucket key show ", ["api", "backups"]],
    ["tbucket key delete b", ["backups"]],
    ["tbucket key set a", ["api"]],
    ["tbucket --key ", ["api", "backups"]],
    ["tbucket run -r 5 --key a", ["api"]],
  ])("key names from the default store: %s", (line, names) => {
    expect(sorted(complete(line))).toEqual(names);
  });

  it("key names from the --store on the line; none, and no store created, where there is none", () => {
    expect(complete(`tbucket key show --store sqlite:${join(dir, "other.db")} `)).toEqual(["elsewhere", "tenant:api"]);
    expect(complete(`tbucket --store=sqlite:${join(dir, "other.db")} --key `)).toEqual(["elsewhere", "tenant:api"]);
    expect(complete(`tbucket run --store sqlite:${join(dir, "other.db")} --key e`)).toEqual(["elsewhere"]);
    expect(complete(`tbucket key show --store sqlite:${join(dir, "missing.db")} `)).toEqual([]);
    expect(existsSync(join(dir, "missing.db"))).toBe(false);
    expect(complete("tbucket key show --store redis://127.0.0.1:1 ")).toEqual([]);
  });

  it("a key name with a colon (tenant:api), which bash splits into words", () => {
    // Bash replaces only what follows the colon, so it is offered that part.
    const rest = name === "bash" ? "api" : "tenant:api";
    expect(complete(`tbucket key show --store sqlite:${join(dir, "other.db")} tenant:a`)).toEqual([rest]);
    expect(complete(`tbucket key show --store sqlite:${join(dir, "other.db")} tenant:`)).toEqual([rest]);
  });

  // Issue 15: "--stats <TAB>" offered subcommands, which commander reads as files after an option.
  it("after an option, files and no commands: tbucket --stats <Tab>, tbucket -r 1mb <Tab>", () => {
    for (const line of ["tbucket --stats ", "tbucket -r 1mb ", "tbucket -q ru"]) {
      const offered = complete(line);
      for (const command of ["run", "simulate", "key", "completion"]) expect(offered, line).not.toContain(command);
      // bash leaves file names to its own default completion (complete -o default).
      if (name !== "bash" && !line.endsWith("ru")) expect(offered, line).toEqual(expect.arrayContaining(["tbucket.bash", "tbucket.zsh"]));
    }
  });
});

