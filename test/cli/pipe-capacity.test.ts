import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

const MiB = 1024 * 1024;
const tbucket = (...args: string[]) => [process.execPath, TBUCKET, ...args].map((word) => `'${word}'`).join(" ");

/**
 * Perl that reports the capacity of its pipe on `handle` (F_GETPIPE_SZ) to standard error,
 * once it reaches 1 MiB or after `waitMs`, whichever comes first.
 */
function reportCapacity(handle: "STDIN" | "STDOUT", label: string, waitMs: number): string {
  return `for (1..${Math.ceil(waitMs / 50)}) { $s = fcntl(${handle}, 1032, 0); last if $s == ${MiB}; select(undef, undef, undef, 0.05) } print STDERR "${label}=$s\\n";`;
}

describe("tbucket pipe: pipe capacity on Linux", () => {
  it("asks for 1 MiB pipes on both sides at --rate inf, and the bytes are unchanged", async () => {
    const producer = `perl -e '$| = 1; print "abc"; ${reportCapacity("STDOUT", "in", 5000)}'`;
    const reader = `perl -e '${reportCapacity("STDIN", "out", 5000)} local $/; print <STDIN>'`;
    const result = await runShell(`${producer} | ${tbucket("--rate", "inf")} | ${reader}`);
    expect(result.stdout.toString()).toBe("abc");
    expect(result.stderr.split("\n").sort()).toEqual(["", `in=${MiB}`, `out=${MiB}`]);
  });

  it("asks for them when a slice (10 ms of the rate) outgrows 64 KiB: 100 MiB/s", async () => {
    const reader = `perl -e '${reportCapacity("STDIN", "out", 5000)} local $/; print length(<STDIN>)'`;
    const result = await runShell(`head -c 100 /dev/zero | ${tbucket("--rate", "100mib")} | ${reader}`);
    expect(result.stdout.toString()).toBe("100");
    expect(result.stderr).toBe(`out=${MiB}\n`);
  });

  it("leaves 64 KiB pipes alone at 1 MiB/s, where a slice fits", async () => {
    const producer = `perl -e '$| = 1; print "abc"; select(undef, undef, undef, 0.5); printf STDERR "in=%d\\n", fcntl(STDOUT, 1032, 0)'`;
    const reader = `perl -e 'select(undef, undef, undef, 0.5); printf STDERR "out=%d\\n", fcntl(STDIN, 1032, 0); local $/; print <STDIN>'`;
    const result = await runShell(`${producer} | ${tbucket("--rate", "1mib")} | ${reader}`);
    expect(result.stdout.toString()).toBe("abc");
    expect(result.stderr.split("\n").sort()).toEqual(["", "in=65536", "out=65536"]);
  });

  it("copies as before where perl cannot be found", async () => {
    const input = randomBytes(3 * MiB + 5);
    const result = await runCli(["--rate", "inf"], { input, env: { PATH: "/nonexistent" } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
  });
});
