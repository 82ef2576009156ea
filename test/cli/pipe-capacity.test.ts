import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

const MiB = 1024 * 1024;
const tbucket = (...args: string[]) => [process.execPath, TBUCKET, ...args].map((word) => `'${word}'`).join(" ");
/** Perl's F_GETPIPE_SZ: the capacity of the pipe on a handle. */
const capacity = (handle: "STDIN" | "STDOUT") => `fcntl(${handle}, 1032, 0)`;

/** A producer of `bytes` that then reports its pipe's capacity once it reaches 1 MiB, or after 5 s. */
function producer(bytes: number): string {
  return `perl -e '$| = 1; print "x" x ${bytes}; for (1..100) { $s = ${capacity("STDOUT")}; last if $s == ${MiB}; select(undef, undef, undef, 0.05) } print STDERR "in=$s\\n"'`;
}

/**
 * A reader that reads to the end, then reports its pipe's capacity and the length read. The end
 * comes only once every writer has closed the pipe, tbucket's perl too, so the report is final.
 */
const reader = `perl -e 'local $/; my $data = <STDIN>; printf STDERR "out=%d\\n", ${capacity("STDIN")}; print length($data)'`;

describe("tbucket pipe: pipe capacity on Linux", () => {
  it("asks for 1 MiB pipes on both sides at --rate inf once a stream outgrows 1 MiB, and the bytes are unchanged", async () => {
    const result = await runShell(`${producer(2 * MiB)} | ${tbucket("--rate", "inf")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(2 * MiB));
    expect(result.stderr.split("\n").sort()).toEqual(["", `in=${MiB}`, `out=${MiB}`]);
  });

  it("asks for them when a slice (10 ms of the rate) outgrows 64 KiB: 100 MiB/s", async () => {
    const result = await runShell(`head -c ${2 * MiB} /dev/zero | ${tbucket("--rate", "100mib")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(2 * MiB));
    expect(result.stderr).toBe(`out=${MiB}\n`);
  });

  it("leaves 64 KiB pipes alone where a slice fits in them: 6 MB/s", async () => {
    const result = await runShell(`head -c ${2 * MiB} /dev/zero | ${tbucket("--rate", "6mb")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(2 * MiB));
    expect(result.stderr).toBe("out=65536\n");
  });

  it("leaves them alone for a short stream, even at --rate inf: perl would cost more than the copy", async () => {
    const result = await runShell(`head -c ${MiB - 1} /dev/zero | ${tbucket("--rate", "inf")} | ${reader}`);
    expect(result.stdout.toString()).toBe(String(MiB - 1));
    expect(result.stderr).toBe("out=65536\n");
  });

  it("copies as before where perl cannot be found", async () => {
    const input = randomBytes(3 * MiB + 5);
    const result = await runCli(["--rate", "inf"], { input, env: { PATH: "/nonexistent" } });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
  });
});
