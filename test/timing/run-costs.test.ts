import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-costs");

describe("tbucket run --cost: timing", () => {
  it("the cost of what was launched by any moment stays within burst + rate × t of the cost limit, and the cost rate is met", async ({ expect }) => {
    const dir = tempDir();
    const log = join(dir, "log");
    const input = join(dir, "items.jsonl");
    // 60 jobs of 50 each (3,000 in all) through 1000/s with its default burst (1,000): about 2 s.
    writeFileSync(input, Array.from({ length: 60 }, (_, i) => JSON.stringify({ id: i, max_tokens: 50 })).join("\n") + "\n");
    const beforeMs = Date.now();
    const result = await runCli(["run", "--rate", "inf", "-j", "0", "--cost", "{.max_tokens}", "--cost-rate", "1000/s", "--input", input, "--joblog", log, "--", "true", "{}"]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const startsMs = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => (JSON.parse(line) as { start: number }).start * 1000).sort((x, y) => x - y);
    expect(startsMs).toHaveLength(60);
    // Upper: by each launch, the cost launched so far is within 1000 + 1000 × t, t from before the process
    // started (the joblog's starts are whole milliseconds, hence the 1 ms).
    startsMs.forEach((atMs, i) => expect((i + 1) * 50, `launch ${i + 1} at ${atMs - beforeMs} ms`).toBeLessThanOrEqual(1000 + (1000 * (atMs + 1 - beforeMs)) / 1000));
    // Lower: past the burst, the rate is met within 10 % over the span of the launches.
    const spanS = (startsMs.at(-1)! - startsMs[0]! + 1) / 1000;
    expect(spanS).toBeGreaterThan(1.5);
    expect((60 * 50 - 1000) / spanS, `${spanS} s`).toBeGreaterThanOrEqual(900);
  });
});
