import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-adaptive");

describe("tbucket run --adaptive", () => {
  it("cuts the launch rate below its ceiling when the server throttles, and says so in the progress line", async () => {
    const counter = join(tempDir(), "attempts");
    // The first 3 attempts are told 429 (Retry-After 0: no pause), the rest succeed.
    const script = `n=$(cat ${counter} 2>/dev/null || echo 0); echo $((n+1)) > ${counter}; if [ "$n" -lt 3 ]; then printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 0\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const result = await runCli(["run", "--adaptive", "-r", "20/s", "--retries", "3", "-j", "1", "--progress", "--", "sh", "-c", script, "sh", "{}"], { input: "1\n2\n3\n4\n5\n6\n" });
    expect(result.code).toBe(0);
    const last = result.stderr.split(/[\r\n]/).filter((line) => line.includes("started")).at(-1)!;
    const match = / · adaptive ([\d.]+)\/s of 20\.0\/s$/.exec(last);
    expect(match, last).not.toBeNull();
    // Three cuts of 0.7 from what was sent (at most 20/s): at most 20 × 0.7 = 14/s, and it grows back slowly after.
    expect(Number(match![1])).toBeLessThanOrEqual(14);
  });

  it("--stats says the rate followed, the lowest, the ceiling, and the throttles and cuts", async () => {
    const counter = join(tempDir(), "attempts");
    const script = `n=$(cat ${counter} 2>/dev/null || echo 0); echo $((n+1)) > ${counter}; if [ "$n" -lt 2 ]; then printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 0\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const result = await runCli(["run", "--adaptive", "-r", "20/s", "--retries", "3", "-j", "1", "--stats-format", "json", "--", "sh", "-c", script, "sh", "{}"], { input: "1\n2\n3\n" });
    expect(result.code).toBe(0);
    const stats = JSON.parse(result.stderr.trimEnd().split("\n").at(-1)!) as { rate: number; adaptive: { ceiling: number; rate: number; lowest: number; throttles: number; cuts: number } };
    expect(stats.rate).toBe(20);
    expect(stats.adaptive).toMatchObject({ ceiling: 20, throttles: 2 });
    // The second throttle cuts again unless it was sent within the first cut's round trip (a slow job on a busy machine).
    expect([1, 2]).toContain(stats.adaptive.cuts);
    expect(stats.adaptive.lowest).toBeLessThanOrEqual(14 + 1e-9);
    expect(stats.adaptive.rate).toBeGreaterThanOrEqual(stats.adaptive.lowest);
    const text = await runCli(["run", "--adaptive", "-r", "20/s", "--count", "2", "--stats", "--", "true"]);
    expect(text.stderr).toMatch(/^adaptive: 20\/s at the end, lowest 20\/s, of 20\/s; 0 throttles, 0 cuts$/m);
  });

  it("is refused where it cannot follow yet, naming what to write (exit 2)", async () => {
    const cases: Array<[string[], string]> = [
      [["--rate", "5/s", "--window", "10/m"], "cost limits and --window are not followed yet"],
      [["--rate", "5/s", "--rate", "100/m"], "needs one finite --rate, its ceiling"],
      [["--rate", "5/s", "--key", "k"], "a shared --key is not followed yet"],
    ];
    for (const [args, why] of cases) {
      const result = await runCli(["run", "--adaptive", ...args, "--", "true"]);
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 2,
        stderr: `tbucket: --adaptive: ${why}; for now it follows the server with one private --rate, e.g. "--adaptive --rate 50/s"\n`,
      });
    }
  });
});
