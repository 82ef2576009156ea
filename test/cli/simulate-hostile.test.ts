import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, runShell, TBUCKET } from "../helpers/cli.js";

// Issue 12: simulate tried as a hostile user would. Each case once failed as its title says.
const dir = mkdtempSync(join(tmpdir(), "tbucket-simulate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RUN = ["simulate", "-r", "5", "-b", "10"];

/** RUN and `args`, a --rate in `args` taking the place of RUN's. */
function withArgs(args: readonly string[]): string[] {
  return args.includes("--rate") ? ["simulate", "-b", "10", ...args] : [...RUN, ...args];
}
const TIME = `expected seconds from the start (12.5), epoch seconds (1760104536.25) or an ISO-8601 time (2026-10-10T13:55:36.25Z)`;

async function fails(args: string[], message: string, code: number, input?: string) {
  const result = await runCli(args, { input });
  expect(result.stderr).toBe(`tbucket: ${message}\n`);
  expect(result.code).toBe(code);
  return result;
}

function traceFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe("tbucket simulate: input that once lost data or hung", () => {
  it("refuses 30 February instead of reading it as 2 March (exit 2, like any bad line)", async () => {
    const path = traceFile("dates.txt", "2026-02-28T00:00:00Z\n2026-02-30T00:00:00Z\n");
    await fails([...RUN, "--trace", path], `--trace ${path}: line 2: "2026-02-30T00:00:00Z" is not a valid date: February 2026 has 28 days; ${TIME}; or pass --skip-bad to skip such lines`, 2);
    const skipped = await runCli([...RUN, "--trace", path, "--skip-bad", "--format", "json"]);
    expect(skipped.code).toBe(0);
    expect(JSON.parse(skipped.stdout.toString())).toMatchObject({ events: 1, trace: { skipped: 1 } });
  });

  it("--suggest with arrivals costing 1e16 answers in one line instead of searching for ever", async () => {
    const path = traceFile("costly.txt", "0 1e16\n1 1e16\n2 3e16\n");
    const result = await runCli([...RUN.slice(0, 3), "--trace", path, "--cost-field", "2", "--suggest", "--format", "csv"], { timeoutMs: 20_000 });
    expect(result.signal).toBeNull();
    expect(result.stderr).toBe(
      `tbucket: --suggest: no burst meets refused <= 1%: an arrival costs 30000000000000000, more than the largest burst searched (9007199254740991); scale the costs down (kilobytes instead of bytes)\n`,
    );
    expect(result.code).toBe(1);
  });

  it("--step 1ms over 1000 h is refused at once, naming the smallest step that fits (was: out of memory at 4.7 GB)", async () => {
    const tail = `over 1000h00m00s is more than the 100000 allowed; use --step 40s or more`;
    // The trace's last event, at 1000 h, opens a row of its own.
    await fails([...RUN, "--trace", "-", "--step", "1ms"], `--step 1ms: 3600000001 rows ${tail}`, 2, "0\n3600000\n");
    await fails([...RUN, "--arrivals", "steady 1/s for 1000h", "--step", "1ms"], `--step 1ms: 3600000000 rows ${tail}`, 2);
    const fits = await runCli([...RUN, "--trace", "-", "--step", "40s", "--format", "csv"], { input: "0\n3600000\n" });
    expect(fits.code).toBe(0);
    expect(fits.stdout.toString().trimEnd().split("\n")).toHaveLength(1 + 90_001); // the header; the last event opens a row
    await fails([...RUN, "--trace", "-", "--step", "1s", "--format", "csv"], `--step 1s: 100001 rows over 27h46m40s is more than the 100000 allowed; use --step 2s or more`, 2, "0\n100000\n");
    // Per-event output has no rows to cut.
    const jsonl = await runCli([...RUN, "--trace", "-", "--step", "1ms", "--format", "jsonl"], { input: "0\n3600000\n" });
    expect(jsonl.code).toBe(0);
  });

  it("a line of 2 MiB without newline is one bad line quoting 200 characters, and --skip-bad reads on", async () => {
    const long = "7".repeat(2 << 20);
    const message = `--trace standard input: line 2: the line is longer than 1048576 bytes, more than any trace line needs; it starts "${"7".repeat(200)}…"; or pass --skip-bad to skip such lines`;
    await fails([...RUN, "--trace", "-"], message, 2, `0\n${long}`);
    const skipped = await runCli([...RUN, "--trace", "-", "--skip-bad", "--format", "json"], { input: `0\n${long}\n1\n` });
    expect(skipped.code).toBe(0);
    expect(JSON.parse(skipped.stdout.toString())).toMatchObject({ events: 2, trace: { lines: 3, skipped: 1 } });
  });
});

describe("tbucket simulate --per-key --max-keys over many distinct keys", () => {
  it("counts the keys seen past 100000 as an estimate, said to be one", async () => {
    const lines: string[] = [];
    for (let i = 0; i < 120_000; i++) lines.push(`${i / 1000} 10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
    const path = traceFile("keys.txt", `${lines.join("\n")}\n`);
    const args = [...RUN, "--trace", path, "--key-field", "2", "--per-key", "--max-keys", "10"];
    const json = await runCli([...args, "--format", "json"]);
    expect(json.code).toBe(0);
    const summary = JSON.parse(json.stdout.toString());
    expect(summary.keys).toMatchObject({ seenExact: false, evicted: 119_990, mostRefused: [] });
    expect(Math.abs(summary.keys.seen - 120_000)).toBeLessThanOrEqual(3600);
    const text = await runCli([...args, "--format", "summary"]);
    expect(text.stdout.toString()).toMatch(/^keys +about 1[12]\d000 seen, 119990 evictions$/m);
  });
});

// Issue 19: without --max-keys every key was kept: 1.5 M keys in a 200 MB heap died with a V8 stack trace.
describe("tbucket simulate --per-key without --max-keys", () => {
  /** A program writing `count` events of distinct keys, 1000 a second, streamed as a long log would be. */
  const distinctKeys = (count: number) =>
    `"${process.execPath}" -e 'process.stdout.on("error", () => process.exit()); let i = 0; const more = () => { while (i < ${count}) { let chunk = ""; for (let j = 0; j < 5000 && i < ${count}; j++, i++) chunk += (i / 1000) + " client-" + i + "\\n"; if (!process.stdout.write(chunk)) return process.stdout.once("drain", more); } }; more()'`;

  it("keeps as many buckets as the proxy does (100000), says how many keys it evicted, and never more than one line", async () => {
    const args = [...RUN, "--trace", "-", "--key-field", "2", "--per-key"].join(" ");
    const summary = await runShell(`${distinctKeys(100_010)} | "${process.execPath}" "${TBUCKET}" ${args} --format summary`);
    expect(summary.code).toBe(0);
    expect(summary.stderr).toBe("");
    expect(summary.stdout.toString()).toMatch(/one bucket per key, at most 100000\n/);
    expect(summary.stdout.toString()).toMatch(/^keys +about 100000 seen, 10 evictions$/m);
    // Formats without a summary say it on standard error.
    const table = await runShell(`${distinctKeys(100_010)} | "${process.execPath}" "${TBUCKET}" ${args} --format csv`);
    expect(table.code).toBe(0);
    expect(table.stderr).toBe(
      "tbucket: --per-key: 10 keys evicted to keep --max-keys's default, 100000 buckets; an evicted key that comes back starts with a full bucket, as with the proxy; raise --max-keys to keep more\n",
    );
  });

  it("stops with one line, not a V8 stack trace, when the keys it is told to keep do not fit the heap", async () => {
    const args = [...RUN, "--trace", "-", "--key-field", "2", "--per-key", "--max-keys", "10000000", "--format", "summary"].join(" ");
    const result = await runShell(`${distinctKeys(1_500_000)} | NODE_OPTIONS=--max-old-space-size=64 "${process.execPath}" "${TBUCKET}" ${args}`);
    expect(result.stderr).toMatch(
      /^tbucket: simulate: out of memory after [\d,]+ events holding [\d,]+ buckets, in a heap of 64 MB; lower --max-keys \(the default is 100000\) or give Node a larger heap \(NODE_OPTIONS=--max-old-space-size=MB\)\n$/,
    );
    expect(result.code).toBe(1);
    expect(result.stdout.toString()).toBe("");
  });

  it("--suggest, which holds every event, stops with one line too when they do not fit the heap", async () => {
    const args = ["simulate", "--suggest", "-r", "auto", "-b", "10", "--trace", "-", "--key-field", "2", "--per-key"].join(" ");
    const result = await runShell(`${distinctKeys(1_500_000)} | NODE_OPTIONS=--max-old-space-size=64 "${process.execPath}" "${TBUCKET}" ${args}`);
    expect(result.stderr).toMatch(
      /^tbucket: simulate: out of memory after holding [\d,]+ events for --suggest, in a heap of 64 MB; tune on a part of the trace, or give Node a larger heap \(NODE_OPTIONS=--max-old-space-size=MB\)\n$/,
    );
    expect(result.code).toBe(1);
  });
});

describe("tbucket simulate: files and streams that fail", () => {
  it.each([
    ["/proc/self/mem", `--trace /proc/self/mem: input/output error; check the device`],
    ["missing.log", `--trace ${join(dir, "missing.log")}: no such file or directory; check the path`],
    ["a-directory", `--trace ${join(dir, "a-directory")}: is a directory; name a file`],
  ])("--trace %s names the file, what failed and what to do (exit 1)", async (name, message) => {
    mkdirSync(join(dir, "a-directory"), { recursive: true });
    await fails([...RUN, "--trace", name.startsWith("/") ? name : join(dir, name)], message, 1);
  });

  it("--trace - with a directory on standard input says so instead of simulating nothing", async () => {
    const result = await runShell(`"${process.execPath}" "${TBUCKET}" ${RUN.join(" ")} --trace - < "${dir}"`);
    expect(result.stderr).toBe(`tbucket: --trace standard input: is a directory; name a file\n`);
    expect(result.code).toBe(1);
  });

  it.each([
    ["jsonl", ["--arrivals", "steady 100000/s for 100s", "--format", "jsonl"]],
    ["table", ["--arrivals", "steady 8/s for 10s", "--format", "table"]],
    // With the burst of RUN, the search is of the rate (a burst given to a search of the burst is refused).
    // --rate is repeatable (a set of limits), so the search's --rate auto replaces RUN's rather than following it.
    ["suggest", ["--rate", "auto", "--arrivals", "steady 8/s for 10s", "--suggest"]],
  ])("%s to a closed pipe: exit 0, nothing on standard error", async (_name, args) => {
    for (let i = 0; i < 3; i++) {
      const result = await runShell(`"${process.execPath}" "${TBUCKET}" ${withArgs(args).map((a) => `'${a}'`).join(" ")} | head -c 1 >/dev/null; echo "status \${PIPESTATUS[0]}" >&2`);
      expect(result.stderr).toBe("status 0\n");
    }
  });

  it.each([
    ["jsonl", ["--arrivals", "steady 100000/s for 100s", "--format", "jsonl"]],
    ["summary", ["--arrivals", "steady 8/s for 10s", "--format", "summary"]],
    // With the burst of RUN, the search is of the rate (a burst given to a search of the burst is refused).
    ["suggest", ["--rate", "auto", "--arrivals", "steady 8/s for 10s", "--suggest"]],
  ])("%s to /dev/full: one line naming standard output, exit 1, without simulating on", async (_name, args) => {
    const result = await runShell(`"${process.execPath}" "${TBUCKET}" ${withArgs(args).map((a) => `'${a}'`).join(" ")} > /dev/full`);
    expect(result.stderr).toBe(`tbucket: standard output: cannot write: no space left on the device; free some space or write elsewhere\n`);
    expect(result.code).toBe(1);
  });

  it("a read-only standard output: one line, exit 1", async () => {
    const result = await runShell(`"${process.execPath}" "${TBUCKET}" ${RUN.join(" ")} --arrivals 'burst 3' 1</dev/null`);
    expect(result.stderr).toBe(`tbucket: standard output: cannot write: it is not open for writing; redirect it to a file or a pipe\n`);
    expect(result.code).toBe(1);
  });

  it.each([
    ["/dev/full", "no space left on the device; free some space or write elsewhere"],
    ["a-directory", "it is a directory; name a file"],
    ["no/such/dir/plot.svg", "no such directory; check the path"],
  ])("--svg %s: one line naming the file, exit 1", async (name, reason) => {
    mkdirSync(join(dir, "a-directory"), { recursive: true });
    const path = name.startsWith("/") ? name : join(dir, name);
    await fails([...RUN, "--arrivals", "burst 3", "--format", "csv", "--svg", path], `--svg ${path}: cannot write it: ${reason}`, 1);
  });
});
