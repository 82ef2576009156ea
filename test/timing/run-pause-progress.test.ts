import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { drawScreen, runInTerminal } from "../helpers/terminal.js";

const tempDir = tempDirs("run-pause-progress");

/** The first attempt is told 429, Retry-After: 2; every later one succeeds. */
const throttledOnce = (dir: string) =>
  `if [ ! -e ${join(dir, "seen")} ]; then touch ${join(dir, "seen")}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 2\\r\\n' > "$TBUCKET_REPORT"; exit 22; fi`;

describe("run's progress while the server's pause holds launches", () => {
  it("on a terminal: a spinner says the seconds left in the line's place, and the line comes back after", async ({ expect }) => {
    const dir = tempDir();
    const result = await runInTerminal(`tbucket run --progress --rate 5 --count 3 --retries 1 -- sh -c "$SCRIPT"; echo after`, { columns: 100, env: { SCRIPT: throttledOnce(dir) } });
    expect(result.code).toBe(0);
    const screen = result.stdout.toString();
    // ora's frames: a braille spinner character, then the text, counting down.
    const spun = [...screen.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").matchAll(/([\u2800-\u28ff]) paused by the server: (\d) s/g)];
    expect(spun.length).toBeGreaterThan(3);
    expect(new Set(spun.map((match) => match[2]))).toEqual(new Set(["2", "1"]));
    // After the pause the progress line is drawn again, and the run's last line stays on the screen.
    const rows = drawScreen(screen, 100);
    expect(rows[0]).toMatch(/^3\/3 started · 0 running · 3 done · 0 failed · /);
    expect(rows[1]).toBe("after");
  });

  it("without a terminal (--progress on a pipe): the plain lines say it", async ({ expect }) => {
    const dir = tempDir();
    const result = await runCli(["run", "--progress", "--rate", "5", "--count", "3", "--retries", "1", "--", "sh", "-c", throttledOnce(dir)]);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/ · paused by the server: [12] s/);
    expect(result.stderr.trimEnd().split("\n").at(-1)).not.toContain("paused");
  });
});
