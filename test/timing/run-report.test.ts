import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, it } from "vitest";
import { runCli, sleep, startCli } from "../helpers/cli.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { type MockApi, startMockApi } from "../fixtures/mock-api.mjs";

const tempDir = tempDirs("run-report");
let api: MockApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

const reportDirs = () => readdirSync(tmpdir()).filter((name) => name.startsWith("tbucket-run-")).sort();

describe("tbucket run {report}: the server's word", () => {
  it("the canonical command: a job throttled with Retry-After is retried, and no request reaches the API before that second", async ({ expect }) => {
    // 2 requests a second against launches at 8.3/s: tbucket holds launches to the resets the answers tell
    // (remaining 0) and retries what was throttled after its Retry-After; either way nothing comes early.
    api = await startMockApi({ periodMs: 1000, requests: 2, inputTokens: 90_000, outputTokens: 30_000 });
    const dir = tempDir();
    const input = join(dir, "prompts.jsonl");
    const log = join(dir, "log");
    writeFileSync(input, Array.from({ length: 8 }, () => JSON.stringify({ max_tokens: 100 })).join("\n") + "\n");
    const before = reportDirs();
    const result = await runCli(["run", "--rate", "500/m", "--cost-rate", "90000/m", "--cost", "{.max_tokens}", "--retries", "3", "--joblog", log, "--input", input, "--",
      "curl", "-sf", "-D", "{report}", "-H", "content-type: application/json", "-d", "{}", api.url]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const stats = api.stats();
    expect(stats.early).toBe(0);
    expect(stats.ok).toBe(8);
    const records = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as { attempts: number; throttled: number; server_wait: number | null; cost: number });
    const throttled = records.filter((record) => record.throttled > 0);
    expect(throttled.length).toBe(stats.throttled);
    for (const record of throttled) {
      expect(record.attempts).toBe(record.throttled + 1);
      expect(record.server_wait).toBeGreaterThan(0);
    }
    expect(records.every((record) => record.cost === 100)).toBe(true);
    expect(reportDirs()).toEqual(before);
  });

  it("a job told 429 with Retry-After 1 is retried no sooner, and nothing else launches meanwhile", async ({ expect }) => {
    const dir = tempDir();
    const log = join(dir, "log");
    // Item a's first attempt is throttled (Retry-After: 1); every attempt notes its start.
    const script = `printf '%s %s\\n' "$1" "$(date +%s.%N)" >> ${join(dir, "starts")}; if [ "$1" = a ] && [ ! -e ${join(dir, "seen")} ]; then touch ${join(dir, "seen")}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 1\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const result = await runCli(["run", "--rate", "20/s", "-j", "1", "--retries", "2", "--joblog", log, "--", "sh", "-c", script, "sh", "{}"], { input: "a\nb\nc\n" });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const starts = readFileSync(join(dir, "starts"), "utf8").trimEnd().split("\n").map((line) => line.split(" ")).map(([item, at]) => ({ item, at: Number(at) }));
    expect(starts.map((start) => start.item)).toEqual(["a", "a", "b", "c"]);
    // The retry, and every launch after it, at least the second the server gave after the throttled attempt.
    expect(starts[1]!.at - starts[0]!.at).toBeGreaterThanOrEqual(0.99);
    const a = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line)).find((record) => record.item === "a");
    expect(a).toMatchObject({ attempts: 2, throttled: 1, server_wait: 1, exit: 0 });
  });

  it("--adaptive: the launches go on when the server's second is over, not later (the pause's debt owed at the rate after the cut)", async ({ expect }) => {
    // Before, the run emptied its bucket for the pause at the rate before the cut (20 tokens at 20/s) and then
    // cut the rate (to 14/s): the launches came back 1.43 s after the throttle, not 1 s.
    const dir = tempDir();
    const script = `printf '%s %s\\n' "$1" "$(date +%s.%N)" >> ${join(dir, "starts")}; if [ "$1" = a ] && [ ! -e ${join(dir, "seen")} ]; then touch ${join(dir, "seen")}; printf 'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 1\\r\\n' > "$TBUCKET_REPORT"; fi`;
    const result = await runCli(["run", "--adaptive", "--rate", "20/s", "-j", "1", "--retries", "2", "--", "sh", "-c", script, "sh", "{}"], { input: "a\nb\nc\n" });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const starts = readFileSync(join(dir, "starts"), "utf8").trimEnd().split("\n").map((line) => Number(line.split(" ")[1]));
    expect(starts).toHaveLength(4);
    // At least the server's second; at most that, the attempt's own few ms and a loaded machine's lateness.
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(0.99);
    expect(starts[1]! - starts[0]!).toBeLessThan(1.3);
  });

  it("{report} and $TBUCKET_REPORT name the same empty file; a malformed Retry-After is said once; megabytes in it keep the run going", async ({ expect }) => {
    const script = 'test -f "$1" && test ! -s "$1" && test "$1" = "$TBUCKET_REPORT" || exit 9; printf "HTTP/1.1 200 OK\\r\\nRetry-After: soon\\r\\n" > "$TBUCKET_REPORT"; head -c 5000000 /dev/zero | tr "\\0" x >> "$1"';
    const result = await runCli(["run", "--rate", "inf", "--count", "3", "--", "sh", "-c", script, "sh", "{report}"]);
    expect(result.code).toBe(0);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines.filter((line) => line.includes("retry-after"))).toEqual(['tbucket: run: report: retry-after: "soon" is neither seconds nor an HTTP date']);
    expect(lines.filter((line) => line.includes("longer than"))).toHaveLength(1);
    expect(lines).toHaveLength(2);
  });

  it("the report directory is gone after SIGTERM", async ({ expect }) => {
    const before = reportDirs();
    const running = startCli(["run", "--rate", "inf", "--count", "2", "--", "sleep", "10"]);
    await sleep(500);
    expect(reportDirs().length).toBe(before.length + 1);
    running.child.kill("SIGTERM");
    await running.exited;
    expect(reportDirs()).toEqual(before);
  });

  it.for(["SIGINT", "SIGTERM"] as const)("the report directory is gone after %s while the store is still opening (before the run takes the signals)", async (signal, { expect }) => {
    // A Redis that accepts and never answers: the run waits in its store's opening, where a stop signal
    // ended tbucket by its default action, leaving the folder behind.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const before = reportDirs();
      const { port } = silent.address() as AddressInfo;
      const running = startCli(["run", "--key", "k", "--store", `redis://127.0.0.1:${port}`, "--rate", "1", "--count", "1", "--", "true"]);
      await sleep(700);
      expect(reportDirs().length).toBe(before.length + 1);
      running.child.kill(signal);
      const result = await running.exited;
      expect([result.code, result.signal]).toEqual([null, signal]);
      expect(reportDirs()).toEqual(before);
    } finally {
      silent.close();
    }
  });

  it("tbucket-cost settles the cost limit: a run whose jobs report less than their estimate finishes sooner", async ({ expect }) => {
    const dir = tempDir();
    const input = join(dir, "items.jsonl");
    // 5 jobs estimated at 1000 through 1000/s (burst 1000): about 4 s unsettled; settled to 10, about 1 s.
    writeFileSync(input, Array.from({ length: 5 }, () => JSON.stringify({ n: 1000 })).join("\n") + "\n");
    const timed = async (script: string) => {
      const beforeMs = Date.now();
      const result = await runCli(["run", "--rate", "inf", "--cost", "{.n}", "--cost-rate", "1000/s", "--input", input, "--", "sh", "-c", script, "sh", "{}"]);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      return Date.now() - beforeMs;
    };
    const settledMs = await timed('echo "tbucket-cost: 10" > "$TBUCKET_REPORT"');
    const unsettledMs = await timed("true");
    expect(unsettledMs).toBeGreaterThan(3500);
    expect(settledMs).toBeLessThan(2500);
  });

  it("a remaining 0 with its reset holds launches back until the reset", async ({ expect }) => {
    const dir = tempDir();
    const log = join(dir, "log");
    const script = 'printf "HTTP/1.1 200 OK\\r\\nx-ratelimit-remaining-requests: 0\\r\\nx-ratelimit-reset-requests: 800ms\\r\\n" > "$TBUCKET_REPORT"';
    const result = await runCli(["run", "--rate", "inf", "-j", "1", "--count", "3", "--joblog", log, "--", "sh", "-c", script]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const starts = readFileSync(log, "utf8").trimEnd().split("\n").map((line) => (JSON.parse(line) as { start: number }).start * 1000).sort((a, b) => a - b);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(790);
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(790);
  });
});
