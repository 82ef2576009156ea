import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli, sleep, startCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("run-shared-pause");

/** Each line of a starts file: the item and when its attempt started (epoch seconds). */
function starts(path: string): Array<{ item: string; at: number }> {
  return readFileSync(path, "utf8").trimEnd().split("\n").map((line) => line.split(" ")).map(([item, at]) => ({ item: item!, at: Number(at) }));
}

describe("tbucket run on a shared key: the server's pause", () => {
  it("a 429 with Retry-After told to one process holds every process on the key until then", async ({ expect }) => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const shared = ["--key", "api", "--store", store, "--rate", "10/s"];
    // B launches steadily on the key; A's first attempt is told 429, Retry-After: 2, and notes when it wrote that.
    const b = startCli(["run", ...shared, "-j", "4", "--", "sh", "-c", `printf '%s %s\\n' "$1" "$(date +%s.%N)" >> ${join(dir, "b")}`, "sh", "{}"], {
      input: Array.from({ length: 60 }, (_, i) => `b${i}`).join("\n") + "\n",
    });
    await sleep(1000);
    const script = `if [ ! -e ${join(dir, "seen")} ]; then touch ${join(dir, "seen")}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 2\\r\\n' > "$TBUCKET_REPORT"; date +%s.%N > ${join(dir, "told")}; exit 22; fi; date +%s.%N > ${join(dir, "retried")}`;
    const a = await runCli(["run", ...shared, "--retries", "1", "--count", "1", "--", "sh", "-c", script]);
    expect([a.code, a.stderr]).toEqual([0, ""]);
    const bDone = await b.exited;
    expect([bDone.code, bDone.stderr]).toEqual([0, ""]);
    const toldAt = Number(readFileSync(join(dir, "told"), "utf8"));
    const retriedAt = Number(readFileSync(join(dir, "retried"), "utf8"));
    expect(retriedAt - toldAt).toBeGreaterThanOrEqual(1.99);
    const bStarts = starts(join(dir, "b"));
    expect(bStarts).toHaveLength(60);
    // B launched before the throttle; after it, nothing until the server's time. A launch B had already
    // checked for (it asks the store just before it spawns) may start in the moment after A's job ended.
    expect(bStarts.filter((start) => start.at < toldAt).length).toBeGreaterThan(3);
    expect(bStarts.filter((start) => start.at > toldAt + 0.25 && start.at < toldAt + 1.99)).toEqual([]);
    expect(bStarts.filter((start) => start.at >= toldAt + 1.99).length).toBeGreaterThan(10);
  });

  it("tbucket-cost on a shared key: what jobs did not use serves the next ones, so a settled run finishes sooner", async ({ expect }) => {
    const dir = tempDir();
    const input = join(dir, "items.jsonl");
    // 5 jobs estimated at 1000 through 1000/s (burst 1000) on a shared key: about 4 s unsettled; settled to 10, about 1 s.
    writeFileSync(input, Array.from({ length: 5 }, () => JSON.stringify({ n: 1000 })).join("\n") + "\n");
    const timed = async (key: string, script: string) => {
      const beforeMs = Date.now();
      const args = ["run", "--key", key, "--store", `sqlite:${join(dir, "buckets.db")}`, "--rate", "inf", "--cost", "{.n}", "--cost-rate", "1000/s"];
      const result = await runCli([...args, "--input", input, "--", "sh", "-c", script, "sh", "{}"]);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      return Date.now() - beforeMs;
    };
    const settledMs = await timed("settled", 'echo "tbucket-cost: 10" > "$TBUCKET_REPORT"');
    const unsettledMs = await timed("unsettled", "true");
    expect(unsettledMs).toBeGreaterThan(3500);
    expect(settledMs).toBeLessThan(2500);
  });
});
