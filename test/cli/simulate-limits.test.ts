/**
 * `tbucket simulate` with a set of limits, end to end on the built binary:
 * its jsonl agrees event by event with the naive composition of
 * test/helpers/limit-oracle.ts (x/time/rate buckets and exact sliding
 * windows), drop and queue; the summary says how often each limit bound; and
 * every mistake in the new flags is one line and exit 2.
 */
import { describe, expect, it } from "vitest";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { runCli } from "../helpers/cli.js";
import { Oracle, trace } from "../helpers/limit-oracle.js";

interface Decision {
  t: number;
  cost: number;
  admitted: boolean;
  wait: number;
  tokens: number;
  limitedBy: number[];
  levels: number[];
}

async function ok(args: string[], input?: string): Promise<string> {
  const result = await runCli(args, { input });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  return result.stdout.toString("utf8");
}

async function usage(args: string[], message: string): Promise<void> {
  const result = await runCli(args, { input: "0 1\n" });
  expect(result.stderr).toBe(`tbucket: ${message}\n`);
  expect(result.code).toBe(2);
  expect(result.stdout.toString()).toBe("");
}

/** Two rates and a window, as flags and as specs (numbered in the flags' order). */
const FLAGS = ["--rate", "5/s", "--burst", "8", "--window", "12/4s", "--rate", "20/s", "--burst", "3"];
const SPECS: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 5, burst: 8 },
  { kind: "window", unit: "count", n: 12, windowMs: 4000 },
  { kind: "bucket", unit: "count", rate: 20, burst: 3 },
];

describe("tbucket simulate with a set of limits agrees with the naive composition, event by event", () => {
  for (const seed of [11, 12]) {
    it(`drop, seed ${seed}`, async () => {
      const events = trace(seed, 800, 150, 3);
      const input = events.map((e) => `${e.atMs / 1000} ${e.cost}`).join("\n") + "\n";
      const lines = (await ok(["simulate", ...FLAGS, "--trace", "-", "--cost-field", "2", "--format", "jsonl"], input)).trimEnd().split("\n");
      expect(lines).toHaveLength(events.length);
      const oracle = new Oracle(SPECS);
      lines.forEach((line, index) => {
        const decision = JSON.parse(line) as Decision;
        const event = events[index]!;
        const want = oracle.admitsAll(event.atMs, event.cost);
        expect({ index, admitted: decision.admitted, wait: decision.wait }).toEqual({ index, admitted: want, wait: 0 });
        // Refused: named by the limits that would not admit it now.
        if (!want) expect({ index, limitedBy: decision.limitedBy }).toEqual({ index, limitedBy: oracle.refusing(event.atMs, event.cost) });
        else oracle.take(event.atMs, event.cost);
      });
    });

    for (const maxWait of [undefined, "1500ms"]) {
      it(`queue${maxWait === undefined ? "" : ` with --max-wait ${maxWait}`}, seed ${seed}`, async () => {
        const events = trace(seed, 500, 250, 3);
        const input = events.map((e) => `${e.atMs / 1000} ${e.cost}`).join("\n") + "\n";
        const args = ["simulate", ...FLAGS, "--trace", "-", "--cost-field", "2", "--format", "jsonl", "--policy", "queue", ...(maxWait ? ["--max-wait", maxWait] : [])];
        const lines = (await ok(args, input)).trimEnd().split("\n");
        const oracle = new Oracle(SPECS);
        const maxWaitMs = maxWait === undefined ? Infinity : 1500;
        let waited = 0;
        lines.forEach((line, index) => {
          const decision = JSON.parse(line) as Decision;
          const event = events[index]!;
          const actMs = oracle.earliest(event.atMs, event.cost);
          const wantOk = actMs - event.atMs <= maxWaitMs;
          expect({ index, admitted: decision.admitted }).toEqual({ index, admitted: wantOk });
          if (!wantOk) return;
          // jsonl gives seconds to the nanosecond; the two may round a nanosecond apart.
          expect({ index, actMs: event.atMs + decision.wait * 1000 }).toEqual({ index, actMs: expect.closeTo(actMs, 5) });
          if (decision.wait > 0) waited++;
          oracle.take(event.atMs + decision.wait * 1000, event.cost);
        });
        expect(waited).toBeGreaterThan(100);
      });
    }
  }
});

describe("tbucket simulate with a set of limits: outputs", () => {
  it("jsonl carries limitedBy and each limit's level; one limit alone keeps the schema it had", async () => {
    const out = await ok(["simulate", "--window", "3/1s", "--rate", "5", "--burst", "2", "--arrivals", "burst 4", "--format", "jsonl", "--policy", "queue"]);
    expect(out.trimEnd().split("\n")).toEqual([
      `{"t":0,"cost":1,"admitted":true,"wait":0,"tokens":1,"limitedBy":[],"levels":[2,1]}`,
      `{"t":0,"cost":1,"admitted":true,"wait":0,"tokens":0,"limitedBy":[],"levels":[1,0]}`,
      // The bucket (limit 2) has the next token in 200 ms.
      `{"t":0,"cost":1,"admitted":true,"wait":0.2,"tokens":-1,"limitedBy":[2],"levels":[0,-1]}`,
      // The window (limit 1) holds 3 until the first of them leaves at 1 s; the bucket takes at 1 s what it holds there.
      `{"t":0,"cost":1,"admitted":true,"wait":1,"tokens":-4,"limitedBy":[1],"levels":[-1,-4]}`,
    ]);
    expect(await ok(["simulate", "-r", "5", "-b", "2", "--arrivals", "burst 1", "--format", "jsonl"])).toBe(`{"t":0,"cost":1,"admitted":true,"wait":0,"tokens":1}\n`);
  });

  it("the summary names every limit and how often it bound, in text and JSON", async () => {
    const args = ["simulate", "-r", "5", "-b", "10", "--window", "20/5s", "--arrivals", "steady 8/s for 7.5s"];
    expect(await ok([...args, "--format", "summary"])).toBe(
      [
        // By hand: the first 20 (0 to 2.375 s) fill the window, which refuses the next 20 until the
        // first record leaves at 5 s; the bucket (10 + 5/s) always has a token for them.
        "limits        2, admitted as one, drop (Allow), one set",
        "limit 1       rate 5/s, burst 10: refused 0",
        "limit 2       at most 20 in any 5 s: refused 20",
        "arrivals      60 over 7.5 s (8/s)",
        "admitted      40  (66.67%)",
        "refused       20  (33.33%), the first at 2.5 s",
        "throughput    5.33/s admitted over 7.5 s (the burst included)",
        "bucket empty  0.00% of the time",
        "",
      ].join("\n"),
    );
    // Queued, the 40 after the first 20 wait for the window, each until the item 20 before it leaves,
    // 5 s after that item's own time: from 2.5 s for the one arriving at 2.5 s to 5 s from the 41st on.
    const json = JSON.parse(await ok([...args, "--format", "json", "--policy", "queue"]));
    expect(json.limits).toEqual([
      { limit: 1, kind: "bucket", rate: 5, burst: 10, refused: 0, delayed: 0 },
      { limit: 2, kind: "window", n: 20, window: 5, refused: 0, delayed: 40 },
    ]);
    expect(json.wait).toMatchObject({ p50: 2.5, max: 5 });
  });

  it("a rate without its own --burst gets the default burst of its kind; limits are numbered in command-line order", async () => {
    const json = JSON.parse(await ok(["simulate", "--window", "100/1m", "-r", "5", "-b", "10", "-r", "1/s", "--arrivals", "burst 1", "--format", "json"]));
    expect(json.limits.map((limit: { kind: string; burst?: number }) => [limit.kind, limit.burst])).toEqual([["window", undefined], ["bucket", 10], ["bucket", 1]]);
    const bytes = JSON.parse(await ok(["simulate", "-r", "1mb", "-b", "4mb", "-r", "10mb", "--window", "2mb/1s", "--cost", "bytes", "--trace", "-", "--cost-field", "2", "--format", "json"], "0 100\n"));
    expect(bytes.limits).toMatchObject([{ burst: 4 * 2 ** 20 }, { rate: 10 * 2 ** 20, burst: 2 ** 20 }, { n: 2 * 2 ** 20, window: 1 }]);
  });
});

describe("tbucket simulate with a set of limits: mistakes", () => {
  it.each([
    [["--window", "100"], `--window: "100" is not a window: write N/W, at most N in any W; try "100/1m", "1000/h" or "10/1.5s"`],
    [["--window", "100/soon"], `--window: "100/soon" is not a window: "soon" is not a duration longer than zero; try "100/1m", "1000/h" or "10/1.5s"`],
    [["--window", "2mb/1s"], `--window: "2mb/1s" is a window of bytes, not of counts; try "100/1m", "1000/h" or "10/1.5s"`],
    [["--window", "1.5/1s"], `--window: "1.5/1s" is not a window: "1.5" is not a whole number 1 or more; try "100/1m", "1000/h" or "10/1.5s"`],
    [["-r", "fast"], `--rate: "fast" is not a count rate; try "5", "300/m" or "1/10s"`],
    [["-r", "2", "-b", "0.5"], `--burst: "0.5" is not a whole number 1 or more; try "1" or "10"`],
    [["-b", "3", "-b", "4"], `--burst: 3 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`],
    [["-r", "auto"], `--rate auto: only with --suggest, which searches the rate; give a rate such as "5/s"`],
    [["--concurrency", "4"], `--concurrency: not in simulate, whose events have no duration to hold a slot for; simulate the --rate and --window limits, and use --concurrency with run or the proxy`],
    [["--window", "10/1s", "--suggest"], `--suggest: tunes one bucket, and this run has 2 limits; keep one --rate and no --window to tune it, then simulate the set with the answer`],
  ])("exit 2 with one line: %j", async (extra, message) => {
    await usage(["simulate", "-r", "5", "-b", "2", "--trace", "-", ...extra], message);
  });

  it("a window of bytes needs --cost bytes, and says so in the window's own words", async () => {
    await usage(["simulate", "-r", "1mb", "-b", "4mb", "--cost", "bytes", "--trace", "-", "--window", "lots/1s"], `--window: "lots/1s" is not a window: "lots" is not a whole number of bytes; try "2mb/1s", "50gb/d" or "512k/10s"`);
  });
});
