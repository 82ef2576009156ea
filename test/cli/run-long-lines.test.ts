import { describe, it } from "vitest";
import { fixture, runCli, runShell, TBUCKET } from "../helpers/cli.js";

// Issue 12: a line longer than 1 MiB was passed on in pieces, so --tag landed inside it and
// another job's output could too. Now a long line streams through while its job holds the output.

const MIB = 1024 * 1024;

/** Each line: [tag, tab,] then `length` copies of one letter, the letter its job was given. */
function checkLines(text: string, tagged: boolean, length: number): string[] {
  const letters: string[] = [];
  for (const line of text.slice(0, -1).split("\n")) {
    const body = tagged ? line.slice(2) : line;
    const letter = body[0]!;
    if (tagged && line.slice(0, 2) !== `${letter}\t`) throw new Error(`line of ${letter} tagged ${JSON.stringify(line.slice(0, 2))}`);
    if (body.length !== length || body !== letter.repeat(length)) throw new Error(`line of ${letter} is not whole (${body.length} bytes)`);
    letters.push(letter);
  }
  return letters.sort();
}

describe.concurrent("tbucket run: lines longer than any buffer stay whole", () => {
  it.for([[true], [false]] as const)("-j 2, 3 MiB lines, --tag %s: every line is one job's, tagged once at its start", async ([tagged], { expect }) => {
    const args = ["run", "-r", "inf", "-j", "2", ...(tagged ? ["--tag"] : []), "--", fixture("long-lines.sh"), "{}", "3", String(3 * MIB)];
    const result = await runCli(args, { input: "a\nb\n" });
    expect(result.code).toBe(0);
    const text = result.stdout.toString("latin1");
    expect(text.endsWith("\n")).toBe(true);
    expect(checkLines(text, tagged, 3 * MIB)).toEqual(["a", "a", "a", "b", "b", "b"]);
  });

  it("memory stays bounded: two jobs' 128 MiB lines go through without being held", async ({ expect }) => {
    // The peak resident size of tbucket, read from /proc just before it ends. Its pid is the background pipeline's
    // first (jobs -p): found by name after a pause, it was missed where node took longer to start, or another suite's.
    const script = `"${process.execPath}" "${TBUCKET}" run -r inf -j 2 --tag -- "${fixture("long-lines.sh")}" {} 1 ${128 * MIB} <<< $'a\\nb' | wc -c & \
      pid=$(jobs -p); peak=0; \
      while kill -0 "$pid" 2>/dev/null; do v=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null); [ -n "$v" ] && peak=$v; sleep 0.05; done; \
      wait; echo "$peak" >&2`;
    const result = await runShell(script);
    expect(result.stdout.toString().trim()).toBe(String(2 * (128 * MIB + 2 + 1)));
    const peakKiB = Number(result.stderr.trim());
    expect(peakKiB).toBeGreaterThan(0);
    // Measured: 45 MB for a tiny run, 90 MB (stream buffers not yet collected) for 64 MiB and 256 MiB
    // lines alike; holding either line would add 128 MiB to the 45.
    expect(peakKiB).toBeLessThan(150 * 1024);
  });
});
