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
      [["--rate", "inf"], "needs a finite --rate, its ceiling"],
      [["--rate", "5/s", "--class", "a=1/s", "--class-of", "a"], "classes are not followed yet"],
    ];
    for (const [args, why] of cases) {
      const result = await runCli(["run", "--adaptive", ...args, "--", "true"]);
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 2,
        stderr: `tbucket: --adaptive: ${why}; e.g. "--adaptive --rate 50/s", a ceiling the rate follows the server under\n`,
      });
    }
  });

  it("follows the server in front of a set (costs, a window): the pacer's rate is cut, every limit still holds", async () => {
    const counter = join(tempDir(), "attempts");
    const script = `n=$(cat ${counter} 2>/dev/null || echo 0); echo $((n+1)) > ${counter}; if [ "$n" -lt 2 ]; then printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 0\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const args = ["run", "--adaptive", "-r", "20/s", "--window", "1000/m", "--cost", "5", "--cost-rate", "10000/s", "--retries", "3", "-j", "1", "--stats-format", "json"];
    const result = await runCli([...args, "--", "sh", "-c", script, "sh", "{}"], { input: "1\n2\n3\n" });
    expect([result.code, result.stderr.split("\n").length]).toEqual([0, 2]);
    const stats = JSON.parse(result.stderr.trimEnd()) as { adaptive: { ceiling: number; throttles: number; cuts: number; lowest: number } };
    expect(stats.adaptive).toMatchObject({ ceiling: 20, throttles: 2 });
    expect(stats.adaptive.cuts).toBeGreaterThanOrEqual(1);
    expect(stats.adaptive.lowest).toBeLessThanOrEqual(14 + 1e-9);
  });

  it("follows the server on a shared key, each process with a pacer of its own under the key's rate", async () => {
    const dir = tempDir();
    const counter = join(dir, "attempts");
    const script = `n=$(cat ${counter} 2>/dev/null || echo 0); echo $((n+1)) > ${counter}; if [ "$n" -lt 1 ]; then printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 0\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const store = `sqlite:${join(dir, "buckets.db")}`;
    expect((await runCli(["key", "set", "api", "--rate", "20/s", "--store", store])).code).toBe(0);
    const result = await runCli(["run", "--adaptive", "--key", "api", "--store", store, "--retries", "2", "-j", "1", "--stats-format", "json", "--", "sh", "-c", script, "sh", "{}"], {
      input: "1\n2\n",
    });
    expect(result.code).toBe(0);
    const stats = JSON.parse(result.stderr.trimEnd().split("\n").at(-1)!) as { adaptive: { ceiling: number; throttles: number; cuts: number } };
    expect(stats.adaptive).toMatchObject({ ceiling: 20, throttles: 1, cuts: 1 });
  });
});
