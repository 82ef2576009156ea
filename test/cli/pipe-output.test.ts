import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-pipe-output-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A shell command line for tbucket with these arguments, run in `dir` (file names are relative). */
const tbucket = (...args: string[]) => [process.execPath, TBUCKET, ...args].map((word) => `'${word}'`).join(" ");
const inDir = (script: string) => runShell(script, { cwd: dir });

function write(name: string, content: string): void {
  writeFileSync(join(dir, name), content);
}

const read = (name: string) => readFileSync(join(dir, name), "utf8");
const isOutput = (name: string) => `tbucket: ${name}: input file is output file; write the output to another file\n`;

describe("tbucket pipe: an input that is the output file (issue 12)", () => {
  // Regression: `tbucket --rate 1mb f >> f` grew f without end. `timeout` keeps a regression from filling the disk.
  it("f >> f is refused as cat refuses it, and f is left as it was", async () => {
    write("f", "hello\n");
    const result = await inDir(`timeout 10 ${tbucket("--rate", "1mb", "f")} >> f`);
    expect(result.stderr).toBe(isOutput("f"));
    expect(result.code).toBe(1);
    expect(read("f")).toBe("hello\n");
  });

  it("among several inputs, only the one that is the output is skipped; the others are copied; status 1", async () => {
    write("f", "hello\n");
    write("a", "a\n");
    write("b", "b\n");
    const result = await inDir(`timeout 10 ${tbucket("--rate", "1mb", "a", "f", "b")} >> f`);
    expect(result.stderr).toBe(isOutput("f"));
    expect(result.code).toBe(1);
    expect(read("f")).toBe("hello\na\nb\n");
  });

  it.each([
    ["< f >> f (standard input, no names)", `${tbucket("--rate", "1mb")} < f >> f`],
    ["a - < f >> f", `${tbucket("--rate", "1mb", "a", "-")} < f >> f`],
  ])("%s: standard input is the output file", async (_name, command) => {
    write("f", "hello\n");
    write("a", "a\n");
    const result = await inDir(`timeout 10 ${command}`);
    expect(result.stderr).toBe(isOutput("standard input"));
    expect(result.code).toBe(1);
    expect(read("f")).toBe(command.includes("'a'") ? "hello\na\n" : "hello\n");
  });

  it("a f > f: f is refused once a has been written ahead of it", async () => {
    write("f", "hello\n");
    write("a", "a\n");
    const result = await inDir(`timeout 10 ${tbucket("--rate", "1mb", "a", "f")} > f`);
    expect(result.stderr).toBe(isOutput("f"));
    expect(result.code).toBe(1);
    expect(read("f")).toBe("a\n");
  });

  it("copies that end are allowed, as cat allows them: f > f (emptied by the shell), and f b 1<>f (written behind the reader)", async () => {
    write("f", "hello\n");
    const emptied = await inDir(`timeout 10 ${tbucket("--rate", "1mb", "f")} > f`);
    expect(emptied.stderr).toBe("");
    expect(emptied.code).toBe(0);
    expect(read("f")).toBe("");
    write("f", "x\n");
    write("b", "y\n");
    const behind = await inDir(`timeout 10 ${tbucket("--rate", "1mb", "f", "b")} 1<>f`);
    expect(behind.stderr).toBe("");
    expect(behind.code).toBe(0);
    expect(read("f")).toBe("x\ny\n");
  });
});

describe("tbucket pipe: standard output that fails (issue 12)", () => {
  // Regression: "tbucket: ENOSPC: no space left on device, write", naming no stream.
  it("> /dev/full: one line naming standard output, status 1", async () => {
    write("g", "hi\n");
    const result = await inDir(`${tbucket("--rate", "inf", "g")} > /dev/full`);
    expect(result.stderr).toBe("tbucket: standard output: no space left on device; free some space or write elsewhere\n");
    expect(result.code).toBe(1);
  });

  // Regression: "tbucket: EBADF: bad file descriptor, write".
  it("a read-only standard output (1</dev/null): one line, status 1", async () => {
    write("g", "hi\n");
    const result = await inDir(`${tbucket("--rate", "1mb", "g")} 1</dev/null`);
    expect(result.stderr).toBe("tbucket: standard output: not open for writing; redirect it to a file or a pipe (> file)\n");
    expect(result.code).toBe(1);
  });

  it("a write that fails part way says how much went out, and --stats counts only that", async () => {
    // The shell's file size limit makes write(2) fail with EFBIG after 1 KiB (SIGXFSZ ignored, as tbucket's children inherit).
    const script = `trap '' XFSZ; ulimit -f 1; head -c 10000 /dev/zero | ${tbucket("--rate", "inf", "--stats-format", "json")} > out`;
    const result = await inDir(script);
    const [stats, message] = result.stderr.trimEnd().split("\n");
    expect(message).toBe("tbucket: standard output: file too large after 1,024 bytes; raise the file size limit (ulimit -f), or write elsewhere");
    expect(JSON.parse(stats!).bytes).toBe(1024);
    expect(readFileSync(join(dir, "out")).length).toBe(1024);
    expect(result.code).toBe(1);
  });

  it("a reader that goes away (yes | tbucket | head -1) ends it quietly with status 0, five times out of five", async () => {
    const script = `for i in 1 2 3 4 5; do yes | ${tbucket("--rate", "1mb")} | head -1 > /dev/null; echo "\${PIPESTATUS[1]}"; done`;
    const result = await inDir(script);
    expect(result.stderr).toBe("");
    expect(result.stdout.toString()).toBe("0\n".repeat(5));
  });

  it("with --stats, a reader that goes away still gets the stats: it is a normal end", async () => {
    const result = await inDir(`yes | ${tbucket("--rate", "1mb", "--stats-format", "json")} | head -c 10 > /dev/null; echo "\${PIPESTATUS[1]}"`);
    expect(result.stdout.toString()).toBe("0\n");
    expect(JSON.parse(result.stderr).bytes).toBeGreaterThanOrEqual(10);
  });
});

describe("tbucket pipe: standard error that fails never costs standard output's data (issue 12)", () => {
  it.each([
    ["full (2>/dev/full)", "2>/dev/full"],
    ["read-only (2</dev/null)", "2</dev/null"],
    ["closed (2>&-)", "2>&-"],
  ])("progress and stats on a standard error %s: every byte out, status 0", async (_name, redirection) => {
    write("lines", "line\n".repeat(10_000));
    const result = await inDir(`${tbucket("--rate", "100k", "--progress", "--stats", "lines")} ${redirection}; echo "status=$?" >&2`);
    expect(result.stdout.toString()).toBe("line\n".repeat(10_000));
    expect(result.stderr).toBe("status=0\n");
  });

  it("an unreadable file is still status 1 when the message about it cannot be written", async () => {
    write("g", "hi\n");
    const result = await inDir(`${tbucket("--rate", "1mb", "missing", "g")} 2>/dev/full; echo "status=$?"`);
    expect(result.stdout.toString()).toBe("hi\nstatus=1\n");
  });
});

describe("tbucket pipe: values too large (issue 12)", () => {
  it.each([
    [["--rate", "1e309"], `tbucket: --rate: "1e309" is not a byte rate: it is too large (at most 9007199254740991 bytes/s); try "1mb", "512k/s" or "10mbit"\n`],
    [
      ["--lines", "--rate", "10/s", "--burst", "9007199254740993"],
      `tbucket: --burst: "9007199254740993" is not a whole number: it is too large (at most 9007199254740991); try "1" or "10"\n`,
    ],
  ])("tbucket %j: one line, status 2", async (args, message) => {
    const result = await runCli(args);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });
});
