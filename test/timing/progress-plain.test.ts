import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { runInTerminal } from "../helpers/terminal.js";

const tempDir = tempDirs("progress-plain");

// Issue 15, point 11: with TERM=dumb, one progress line at the start, then nothing for 25 s.
describe("progress where the terminal cannot redraw", () => {
  it("TERM=dumb: a plain line a second, no carriage returns or escapes, the last at the end", async () => {
    const dir = tempDir();
    // 400 KiB at 100 KiB/s: about 4 s, for at least two lines before the last.
    writeFileSync(join(dir, "in"), randomBytes(400 * 1024));
    const result = await runInTerminal(`tbucket --rate 100k --progress "$IN" > /dev/null`, { env: { TERM: "dumb", IN: join(dir, "in") } });
    expect(result.code).toBe(0);
    const screen = result.stdout.toString();
    expect(screen).not.toMatch(/\x1b|\r(?!\n)/);
    const lines = screen.split("\r\n").filter((line) => line !== "");
    expect(lines.length, screen).toBeGreaterThanOrEqual(3);
    expect(lines.at(-1)).toMatch(/^400\.00 KiB {2}.+100\.0%$/);
    for (const line of lines.slice(0, -1)) expect(line).toMatch(/ETA/);
  });
});

// Issue 15, point 6: run's progress showed no total and no ETA.
describe("run's progress with items from a file", () => {
  it("counts the file's lines for the total, and shows the ETA", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "items"), Array.from({ length: 25 }, (_, i) => `item${i}\n`).join(""));
    const result = await runCli(["run", "--rate", "10", "--progress", "--input", join(dir, "items"), "--", "true", "{}"]);
    expect(result.code).toBe(0);
    const lines = result.stderr.trim().split("\n");
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[0]).toMatch(/^\d+\/25 started · .* · ETA [\d.]+ (s|ms)$/);
    expect(lines.at(-1)).toMatch(/^25\/25 started · 0 running · 25 done · 0 failed · /);
  });
});
