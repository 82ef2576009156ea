import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { countFileLines } from "../../src/cli/count-lines.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("count-lines");

describe("countFileLines (run's progress total)", () => {
  it("counts lines as run reads items: a last line without its newline counts, an empty file has none", async () => {
    const dir = tempDir();
    const cases: Array<[string, string | Buffer, number]> = [
      ["empty", "", 0],
      ["three", "a\nb\nc\n", 3],
      ["unended", "a\nb", 2],
      ["blank lines", "\n\n", 2],
      ["over a chunk", Buffer.alloc(3 * 1024 * 1024 + 5, "x\n"), (3 * 1024 * 1024 + 6) / 2],
    ];
    for (const [name, text, lines] of cases) {
      writeFileSync(join(dir, name), text);
      expect(await countFileLines(join(dir, name)), name).toBe(lines);
    }
  });

  it("leaves alone what is not a regular file (a FIFO would wait for a writer), and what is missing", async () => {
    const dir = tempDir();
    execFileSync("mkfifo", [join(dir, "fifo")]);
    expect(await countFileLines(join(dir, "fifo"))).toBeUndefined();
    expect(await countFileLines(dir)).toBeUndefined();
    expect(await countFileLines(join(dir, "missing"))).toBeUndefined();
  });
});
