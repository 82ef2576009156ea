import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-classes");

// One at a time: these measure time, and the machine is shared.
describe("tbucket run --class: timing", () => {
  it("two classes asking far more than 20/s: each gets at least 90 % of its guarantee, the total stays in the envelope", async ({ expect }) => {
    const dir = tempDir();
    const log = join(dir, "log");
    const input = join(dir, "items");
    // 300 items of each class, alternating: far more than either gets in 3 s (a: 45, b: 15).
    writeFileSync(input, Array.from({ length: 600 }, (_, i) => `${i} ${i % 2 === 0 ? "a" : "b"}`).join("\n") + "\n");
    // A moment before the first launch: the upper bound counts from here.
    const beforeMs = Date.now();
    const result = await runCli([
      "run", "--rate", "20/s", "--burst", "1", "--class", "a=15/s,prio=0", "--class", "b=5/s,prio=1", "--class-of", "{2}",
      "-j", "0", "--duration", "3s", "--input", input, "--joblog", log, "--", "true", "{}",
    ]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const jobs = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as { item: string; start: number; exit: number });
    const startsMs = jobs.map((job) => job.start * 1000).sort((x, y) => x - y);
    const launches = { a: 0, b: 0 };
    for (const job of jobs) launches[job.item.split(" ")[1] as "a" | "b"]++;
    expect(jobs.every((job) => job.exit === 0)).toBe(true);
    // The lower bounds over the time the launches took (first to last); the joblog's starts are whole milliseconds.
    const spanS = (startsMs.at(-1)! - startsMs[0]! - 1) / 1000;
    expect(spanS).toBeGreaterThan(2);
    expect(launches.a, `a: ${launches.a} in ${spanS} s`).toBeGreaterThanOrEqual(15 * spanS * 0.9);
    expect(launches.b, `b: ${launches.b} in ${spanS} s`).toBeGreaterThanOrEqual(5 * spanS * 0.9);
    // The upper bound over the time from before the process started to the last launch.
    const totalS = (startsMs.at(-1)! + 1 - beforeMs) / 1000;
    expect(jobs.length, `${jobs.length} in ${totalS} s`).toBeLessThanOrEqual(1 + 20 * totalS);
  });
});
