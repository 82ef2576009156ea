import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("shared-pushback");

describe("tbucket run on a shared key: the server's pushback holds every process", () => {
  it("a 429 with Retry-After 2 one process hears holds the launches of all three on one SQLite key until then", async ({ expect }) => {
    // Issue 22 (bench/quota.mjs): three runs on one key went on launching while one of them was told to wait.
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const starts = join(dir, "starts");
    const seen = join(dir, "seen");
    // Every attempt notes its start; item a's first attempt is throttled for 2 s.
    const script = `printf '%s %s\\n' "$1" "$(date +%s.%N)" >> ${starts}; if [ "$1" = a ] && [ ! -e ${seen} ]; then touch ${seen}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 2\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const inputs = [["a", "a1", "a2", "a3"], ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"], ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]].map((items, i) => {
      const file = join(dir, `items-${i}`);
      writeFileSync(file, `${items.join("\n")}\n`);
      return file;
    });
    const key = `pushback-${Math.random().toString(36).slice(2)}`;
    // --cost-rate makes the key a set of limits, as the canonical command's is.
    const results = await Promise.all(
      inputs.map((input) =>
        runCli(["run", "--key", key, "--store", store, "--rate", "10/s", "--cost-rate", "1000/s", "--cost", "1", "--retries", "2", "--input", input, "--", "sh", "-c", script, "sh", "{}"], { timeoutMs: 30_000 }),
      ),
    );
    for (const result of results) expect([result.code, result.stderr]).toEqual([0, ""]);
    const attempts = readFileSync(starts, "utf8").trimEnd().split("\n").map((line) => line.split(" ")).map(([item, at]) => ({ item: item!, at: Number(at) }));
    expect(attempts).toHaveLength(21);
    const throttledAt = attempts.find((attempt) => attempt.item === "a")!.at;
    // A job already starting when the 429 was read (its process told within a few ms, a loaded machine
    // taking longer) is let through; from 0.4 s on, none until the server's 2 s. Unpaused, the other two
    // runs launch about 15 jobs in that time.
    const during = attempts.filter((attempt) => attempt.at > throttledAt + 0.4 && attempt.at < throttledAt + 1.99);
    expect(during, JSON.stringify(attempts.map((attempt) => [attempt.item, (attempt.at - throttledAt).toFixed(3)]))).toEqual([]);
    const retried = attempts.filter((attempt) => attempt.item === "a")[1]!;
    expect(retried.at - throttledAt).toBeGreaterThanOrEqual(1.99);
  });

  it("a one-bucket key does not fill while paused: after the server's 2 s the key owes its launches, not a full burst", async ({ expect }) => {
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const seen = join(dir, "seen");
    const script = `if [ "$1" = a ] && [ ! -e ${seen} ]; then touch ${seen}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 2\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const run = await runCli(["run", "--key", "k", "--store", store, "--rate", "10/s", "--burst", "10", "-j", "1", "--retries", "1", "--", "sh", "-c", script, "sh", "{}"], { input: "a\nb\n", timeoutMs: 30_000 });
    expect([run.code, run.stderr]).toEqual([0, ""]);
    const shown = await runCli(["key", "show", "k", "--store", store, "--json"]);
    // Filled while paused, the key would hold its burst of 10 again (less the 3 launches); emptied, it owes the
    // pause's last launches, and has gained at most the little time since.
    expect((JSON.parse(shown.stdout.toString()) as { tokens: number }).tokens).toBeLessThan(5);
  });
});
