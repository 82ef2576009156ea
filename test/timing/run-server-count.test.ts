import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-server-count");

describe("run: the server's remaining count lowers the launch buckets, private or a shared key's in its store", () => {
  it.for([
    ["a private bucket", () => []],
    ["a one-bucket shared key", (remaining: string) => ["--key", `k${remaining}`, "--store", `sqlite:${join(tempDir(), "buckets.db")}`]],
    ["a shared key holding a set (with --cost-rate)", (remaining: string) => ["--key", `k${remaining}`, "--store", `sqlite:${join(tempDir(), "buckets.db")}`, "--cost-rate", "1000/s", "--cost", "1"]],
  ] as Array<[string, (remaining: string) => string[]]>)("%s: told 2 requests remain, a burst of 10 launches 2 more at once and then only at the rate", async ([, where], { expect }) => {
    const report = (remaining: string) => `printf 'HTTP/1.1 200 OK\\r\\nx-ratelimit-remaining-requests: ${remaining}\\r\\nx-ratelimit-reset-requests: 10s\\r\\n' > "$TBUCKET_REPORT"`;
    const timed = async (remaining: string) => {
      const beforeMs = Date.now();
      const args = ["run", ...where(remaining), "--rate", "10/s", "--burst", "10", "-j", "1", "--count", "10"];
      const result = await runCli([...args, "--", "sh", "-c", report(remaining)]);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      return Date.now() - beforeMs;
    };
    // Plenty left: the burst of 10 goes at once (one job at a time, a few ms each). 2 left: 3 at once, then 7 at 10/s (0.7 s).
    const plentyMs = await timed("500");
    const lowMs = await timed("2");
    expect(lowMs).toBeGreaterThan(650);
    expect(lowMs - plentyMs).toBeGreaterThan(450);
  });
});

describe("run: tbucket-cost settles several costs in order", () => {
  it("the i-th number settles the i-th --cost: settling only the first leaves the second binding", async ({ expect }) => {
    const input = join(tempDir(), "items.jsonl");
    // 4 jobs of 1000 input and 1000 output tokens, each against 1000/s (burst 1000): about 3 s unless both are settled.
    writeFileSync(input, Array.from({ length: 4 }, () => JSON.stringify({ in: 1000, out: 1000 })).join("\n") + "\n");
    const timed = async (report: string) => {
      const beforeMs = Date.now();
      const args = ["run", "--rate", "inf", "--cost", "{.in}", "--cost", "{.out}", "--cost-rate", "1000/s", "--cost-rate", "1000/s", "--input", input];
      const result = await runCli([...args, "--", "sh", "-c", `echo "${report}" > "$TBUCKET_REPORT"`, "sh", "{}"]);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      return Date.now() - beforeMs;
    };
    const bothMs = await timed("tbucket-cost: 10, 10");
    const firstMs = await timed("tbucket-cost: 10");
    expect(bothMs).toBeLessThan(2000);
    expect(firstMs).toBeGreaterThan(2600);
  });
});
