import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";

let dir: string;
let store: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-shared-sets-"));
  process.env.XDG_STATE_HOME = join(dir, "state");
  process.env.TBUCKET_STORE = "";
  store = `sqlite:${join(dir, "buckets.db")}`;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = (args: string[]) => runCli(["key", ...args, "--store", store]);
const ISO = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

describe("tbucket key on a set of limits", () => {
  it("set prints each limit numbered with its level; show and show --json agree", async () => {
    const set = await key(["set", "api", "--rate", "10/s", "--burst", "20", "--window", "1000/h", "--concurrency", "20"]);
    expect([set.code, set.stderr]).toEqual([0, ""]);
    const text = new RegExp(
      `^key: +api\nstore: +${store.replace(/[/.]/g, "\\$&")}\nlimit 1: 10/s, burst 20; level 20 \\(full\\)\nlimit 2: 1000 in any 1h00m00s; level 1000 left \\(empty\\)\nlimit 3: 20 at once; level 20 free\nupdated: ${ISO}\n$`,
    );
    expect(set.stdout.toString()).toMatch(text);
    const show = await key(["show", "api"]);
    expect(show.code).toBe(0);
    expect(show.stdout.toString()).toMatch(text);
    const json = JSON.parse((await key(["show", "api", "--json"])).stdout.toString());
    expect(json).toEqual({
      key: "api",
      store,
      limits: [
        { kind: "bucket", unit: "count", rate: 10, burst: 20, level: 20 },
        { kind: "window", unit: "count", n: 1000, window: 3600, level: 1000 },
        { kind: "concurrency", n: 20, level: 20 },
      ],
      updatedAt: expect.stringMatching(new RegExp(`^${ISO}$`)),
    });
  });

  it("list shows a set key's limits, one a row, beside one-bucket keys printed as before", async () => {
    expect((await key(["set", "backups", "--rate", "20mb"])).code).toBe(0);
    expect((await key(["set", "pipes", "--rate", "4mb", "--window", "2mb/1s"])).code).toBe(0);
    const list = await key(["list"]);
    expect(list.code).toBe(0);
    const lines = list.stdout.toString().split("\n");
    expect(lines[0]).toMatch(/^KEY +KIND +RATE +BURST +LEVEL +UPDATED$/);
    expect(lines.slice(1, -1).map((line) => line.replace(new RegExp(ISO), "T").replace(/ +/g, " "))).toEqual([
      "api #1 count 10/s 20 20 (full) T",
      "api #2 count window 1000 in any 1h00m00s 1000 left (empty) T",
      "api #3 concurrency 20 at once 20 free T",
      "backups bytes 20.00 MiB/s 2.00 MiB 2.00 MiB (full) T",
      "pipes #1 bytes 4.00 MiB/s 409.60 KiB 409.60 KiB (full) T",
      "pipes #2 bytes window 2.00 MiB in any 1.0 s 2.00 MiB left (empty) T",
    ]);
    const json = JSON.parse((await key(["list", "--json"])).stdout.toString());
    expect(json.map((entry: { key: string; limits?: unknown[]; kind?: string }) => [entry.key, entry.limits?.length ?? entry.kind])).toEqual([
      ["api", 3],
      ["backups", "bytes"],
      ["pipes", 2],
    ]);
  });

  it("delete removes a set key; a second delete says it is not set, status 1", async () => {
    expect((await key(["set", "gone", "--rate", "5/s", "--window", "10/m"])).code).toBe(0);
    const deleted = await key(["delete", "gone"]);
    expect([deleted.code, deleted.stderr]).toEqual([0, ""]);
    const again = await key(["delete", "gone"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`tbucket: key "gone": not set in ${store}; see the keys with: tbucket key list\n`);
    expect((await key(["show", "gone"])).code).toBe(1);
  });

  it.each([
    [["set", "bad", "--rate", "5/s", "--concurrency", "2", "--concurrency", "3"], `tbucket: --concurrency: given 2 times; give it once, e.g. "--concurrency 4"\n`],
    [["set", "bad", "--rate", "5/s", "--burst", "1", "--burst", "2"], `tbucket: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst\n`],
  ])("refuses %j with one line and status 2", async (args, message) => {
    const result = await key(args);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });
});

describe("pipe and run on a shared set", () => {
  it("a pipe with --rate 4mb --window 2mb/1s on a key copies every byte, the window holding the third MiB past a second", async () => {
    const input = Buffer.alloc(3 * 1024 * 1024, 7);
    const result = await runCli(["--key", "pipe-set", "--store", store, "--rate", "4mb", "--window", "2mb/1s"], { input });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect(result.stdout.equals(input)).toBe(true);
    // 2 MiB in the first second at most: the last MiB waits for the window to slide.
    expect(result.elapsedMs).toBeGreaterThanOrEqual(950);
    const shown = JSON.parse((await key(["show", "pipe-set", "--json"])).stdout.toString());
    expect(shown.limits.map((limit: { kind: string }) => limit.kind)).toEqual(["bucket", "window"]);
  });

  it("--lines with a line rate and a byte rate on a key counts lines and bytes: 51 lines at 100/s take half a second", async () => {
    const input = Buffer.from(Array.from({ length: 51 }, (_, i) => `line ${i}\n`).join(""));
    const result = await runCli(["--lines", "--key", "lines-set", "--store", store, "--rate", "100/s", "--rate", "64kb"], { input });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect(result.stdout.equals(input)).toBe(true);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(480);
    const shown = JSON.parse((await key(["show", "lines-set", "--json"])).stdout.toString());
    expect(shown.limits.map((limit: { unit: string; rate: number }) => [limit.unit, limit.rate])).toEqual([["count", 100], ["bytes", 65536]]);
  });

  it("without flags --key uses the key's stored set; a count set refuses a byte pipe", async () => {
    expect((await key(["set", "stored", "--rate", "1000/s", "--window", "3/1s"])).code).toBe(0);
    const log = join(dir, "stored.jsonl");
    const run = await runCli(["run", "--key", "stored", "--store", store, "--count", "4", "--joblog", log, "--", "true"]);
    expect([run.code, run.stderr]).toEqual([0, ""]);
    const starts = readFileSync(log, "utf8").trim().split("\n").map((line) => (JSON.parse(line) as { start: number }).start).sort((a, b) => a - b);
    expect(starts).toHaveLength(4);
    // The fourth waits for the window: a second after the first.
    expect(starts[3]! - starts[0]!).toBeGreaterThanOrEqual(0.95);
    const pipe = await runCli(["--key", "stored", "--store", store], { input: "x" });
    expect(pipe.code).toBe(2);
    expect(pipe.stderr).toBe(`tbucket: --key: "stored" holds 1000/s, burst 1 and 3 in any 1.0 s, none of which counts bytes; use another key, or give --rate to reset it\n`);
  });

  it("a run with --rate 20/s --window 10/1s --concurrency 4 on a key starts at most 10 in its first second", async () => {
    const log = join(dir, "run-set.jsonl");
    const result = await runCli(["run", "--key", "run-set", "--store", store, "--rate", "20/s", "--window", "10/1s", "--concurrency", "4", "--count", "12", "--joblog", log, "--", "true"]);
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const starts = readFileSync(log, "utf8").trim().split("\n").map((line) => (JSON.parse(line) as { start: number }).start).sort((a, b) => a - b);
    expect(starts).toHaveLength(12);
    expect(starts[10]! - starts[0]!).toBeGreaterThanOrEqual(0.95);
    // Every slot taken was given back.
    const shown = JSON.parse((await key(["show", "run-set", "--json"])).stdout.toString());
    expect(shown.limits[2]).toEqual({ kind: "concurrency", n: 4, level: 4 });
  });

  it("--stats on a shared set numbers its limits and names the one that bound", async () => {
    const result = await runCli(["run", "--key", "stats-set", "--store", store, "--rate", "1000/s", "--window", "3/1s", "--count", "4", "--stats-format", "json", "--", "true"]);
    expect(result.code).toBe(0);
    const stats = JSON.parse(result.stderr);
    expect(stats.limits.map((limit: { limit: number; kind: string }) => [limit.limit, limit.kind])).toEqual([
      [1, "bucket"],
      [2, "window"],
    ]);
    expect(stats.limitedBy[0]).toBe(2);
    // The fourth launch waited for the window to slide: most of a second, less the time the first three took on a busy machine.
    expect(stats.limits[1].waitedSeconds).toBeGreaterThanOrEqual(0.3);
  });

  it("changing a key's set from the command line says so once, on standard error", async () => {
    expect((await key(["set", "changing", "--rate", "1000/s", "--window", "100/1s"])).code).toBe(0);
    const result = await runCli(["run", "--key", "changing", "--store", store, "--rate", "1000/s", "--window", "50/1s", "--count", "1", "--", "true"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `tbucket: key "changing": limits changed from 1000/s, burst 1 and 100 in any 1.0 s to 1000/s, burst 1 and 50 in any 1.0 s; every process on this key now shares the new limits\n`,
    );
  });

  it("--concurrency on a key holds across processes: three runs never run more than 2 jobs at once together, and give every slot back", async () => {
    expect((await key(["set", "slots", "--rate", "100/s", "--concurrency", "2"])).code).toBe(0);
    const logs = [0, 1, 2].map((i) => join(dir, `slots-${i}.jsonl`));
    const results = await Promise.all(logs.map((log) => runCli(["run", "--key", "slots", "--store", store, "--count", "3", "--joblog", log, "--", "sleep", "0.4"])));
    for (const result of results) expect([result.code, result.stderr]).toEqual([0, ""]);
    const edges = logs
      .flatMap((log) => readFileSync(log, "utf8").trim().split("\n"))
      .map((line) => JSON.parse(line) as { start: number; end: number })
      .flatMap((job) => [{ at: job.start, step: 1 }, { at: job.end, step: -1 }])
      .sort((a, b) => a.at - b.at || a.step - b.step);
    expect(edges).toHaveLength(18);
    let running = 0;
    let most = 0;
    for (const edge of edges) most = Math.max(most, (running += edge.step));
    expect(most).toBe(2);
    const shown = JSON.parse((await key(["show", "slots", "--json"])).stdout.toString());
    expect(shown.limits[1]).toEqual({ kind: "concurrency", n: 2, level: 2 });
  });
});
