import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

const MiB = 1024 * 1024;
/** The native part, as `npm ci` builds it: the tests read pipe capacities with it too. */
const ADDON = fileURLToPath(new URL("../../build/Release/tbucket_io.node", import.meta.url));
const tbucket = (...args: string[]) => [process.execPath, TBUCKET, ...args].map((word) => `'${word}'`).join(" ");
const node = (script: string) => `'${process.execPath}' -e '${script}'`;
const loadAddon = `const io = { exports: {} }; process.dlopen(io, ${JSON.stringify(ADDON)});`;

/** A producer of `bytes` that then reports its pipe's capacity once it reaches `expected`, or after 3 s. */
function producer(bytes: number, expected: number): string {
  return node(
    `${loadAddon} require("fs").writeSync(1, Buffer.alloc(${bytes}, 120)); let s, n = 0;
     const check = () => { s = io.exports.pipeSize(1); if (s === ${expected} || ++n === 60) process.stderr.write("in=" + s + "\\n"); else setTimeout(check, 50); }; check();`,
  );
}

/**
 * A reader that reads to the end, then reports its pipe's capacity and the length read. The end
 * comes only once every writer has closed the pipe, so the report is final.
 */
const reader = node(`${loadAddon} const d = require("fs").readFileSync(0); process.stderr.write("out=" + io.exports.pipeSize(0) + "\\n"); process.stdout.write(String(d.length));`);

describe("tbucket pipe: pipe capacity on Linux", () => {
  it("the native part was built at install (npm ci runs scripts/build-native.mjs)", () => {
    expect(existsSync(ADDON)).toBe(true);
  });

  it("asks for 1 MiB pipes on both sides at --rate inf, and the bytes are unchanged", async () => {
    const result = await runShell(`${producer(2 * MiB, MiB)} | ${tbucket("--rate", "inf")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(2 * MiB));
    expect(result.stderr.split("\n").sort()).toEqual(["", `in=${MiB}`, `out=${MiB}`]);
  });

  it("asks for them from 50 MiB/s on: 100 MiB/s", async () => {
    const result = await runShell(`head -c ${2 * MiB} /dev/zero | ${tbucket("--rate", "100mib")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(2 * MiB));
    expect(result.stderr).toBe(`out=${MiB}\n`);
  });

  it("leaves 64 KiB pipes alone below that, where larger ones made no difference: 10 MB/s", async () => {
    const result = await runShell(`head -c ${MiB} /dev/zero | ${tbucket("--rate", "10mb")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(MiB));
    expect(result.stderr).toBe("out=65536\n");
  });

  it("--pipe-size sets the capacity at any rate", async () => {
    const result = await runShell(`head -c ${MiB} /dev/zero | ${tbucket("--rate", "inf", "--pipe-size", "256k")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(MiB));
    expect(result.stderr).toBe(`out=${256 * 1024}\n`);
  });

  it("--pipe-size outside 4k..2g is a usage error", async () => {
    for (const size of ["1k", "3g"]) {
      const result = await runCli(["--rate", "inf", "--pipe-size", size]);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`tbucket: --pipe-size: must be from 4k to 2g, not ${size}\n`);
    }
  });

  it("--pipe-size without the native part says so in one line and copies as before", async () => {
    const input = randomBytes(3 * MiB + 5);
    const result = await runShell(`cat | ${tbucket("--rate", "inf", "--pipe-size", "1m")} | cat`, { input, env: { TBUCKET_NATIVE: "0" } });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^tbucket: --pipe-size: pipes keep their size: tbucket's native part is missing here \(.*\)\n$/);
    expect(result.stdout.equals(input)).toBe(true);
  });

  it("--pipe-size beyond /proc/sys/fs/pipe-max-size says so and copies as before", async () => {
    const input = randomBytes(MiB);
    // What lets root pass pipe-max-size is CAP_SYS_RESOURCE: as root, tbucket runs without it (util-linux's setpriv).
    // Still root, it reads the clone wherever it is (issue 19: run as nobody, a clone in a 0700 folder could not be loaded).
    const unprivileged = process.getuid?.() === 0 ? "setpriv --inh-caps=-sys_resource --bounding-set=-sys_resource " : "";
    const result = await runShell(`cat | ${unprivileged}${tbucket("--rate", "inf", "--pipe-size", "64m")} | cat`, { input });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/^tbucket: --pipe-size: standard input keeps its size: more than \/proc\/sys\/fs\/pipe-max-size.*\n.*standard output keeps its size/);
    expect(result.stdout.equals(input)).toBe(true);
  });

  it("copies pipe to pipe by splice(2), zero-copy, and through read and write with TBUCKET_NATIVE=0 or --lines", async () => {
    const input = randomBytes(3 * MiB + 5);
    for (const [env, args, zeroCopy] of [
      [{}, [], true],
      [{ TBUCKET_NATIVE: "0" }, [], false],
      [{}, ["--lines"], false],
    ] as const) {
      const result = await runShell(`cat | ${tbucket("--rate", "inf", "--stats-format", "json", ...args)} | cat`, { input, env });
      expect(result.code).toBe(0);
      expect(result.stdout.equals(input)).toBe(true);
      expect(JSON.parse(result.stderr)).toMatchObject({ bytes: input.length, zeroCopy });
    }
  });

  it("splices a pipe into a file or /dev/null too, byte for byte, and a file into a pipe", async () => {
    const input = randomBytes(2 * MiB + 3);
    const dir = mkdtempSync(join(tmpdir(), "tbucket-splice-"));
    try {
      const inputPath = join(dir, "in");
      writeFileSync(inputPath, input);
      const toFile = await runShell(`cat | ${tbucket("--rate", "20mb", "--stats-format", "json")} > '${join(dir, "out")}'`, { input });
      expect(JSON.parse(toFile.stderr)).toMatchObject({ bytes: input.length, zeroCopy: true });
      expect(readFileSync(join(dir, "out")).equals(input)).toBe(true);
      const toNull = await runShell(`cat | ${tbucket("--rate", "inf", "--stats-format", "json")} > /dev/null`, { input });
      expect(JSON.parse(toNull.stderr)).toMatchObject({ bytes: input.length, zeroCopy: true });
      const fromFile = await runShell(`${tbucket("--rate", "inf", "--stats-format", "json", inputPath, inputPath)} | cat`);
      expect(JSON.parse(fromFile.stderr)).toMatchObject({ bytes: 2 * input.length, zeroCopy: true });
      expect(fromFile.stdout.equals(Buffer.concat([input, input]))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("starts no process: no perl, whatever PATH holds", async () => {
    const input = randomBytes(3 * MiB + 5);
    const result = await runCli(["--rate", "inf", "--pipe-size", "1m"], { input, env: { PATH: "/nonexistent" } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
  });

  it("strace -f -e trace=execve shows tbucket alone", async () => {
    // scripts/ensure-system-packages.sh installs strace for this test.
    expect(spawnSync("strace", ["-V"]).error, "strace is not installed (Debian: apt-get install strace)").toBeUndefined();
    // The trace goes to standard output, after the copy: strace -o cannot open a socket's /dev/fd/N.
    // -s: strace cuts strings at 32 characters, and the path of a clone is often longer.
    const result = await runShell(
      `t=$(mktemp); head -c ${4 * MiB} /dev/zero | strace -f -qq -s 4096 -e trace=execve -o "$t" ${tbucket("--rate", "inf", "--pipe-size", "1m")} | cat > /dev/null; cat "$t"; rm -f "$t"`,
    );
    const execs = result.stdout.toString().split("\n").filter((line) => line.includes("execve("));
    expect(execs, result.stderr).toHaveLength(1);
    expect(execs[0]).toContain(TBUCKET);
  });
});
