// Ctrl-C and SIGTERM end the pipe at once in every state it can be in: waiting for tokens,
// blocked writing to a reader that stalled, blocked reading from a writer that stalled, and
// copying flat out. tbucket runs in a shell pipeline, as a user runs it; the signal goes to
// tbucket alone, and the time is taken until it has gone.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants as osConstants, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TBUCKET } from "../helpers/cli.js";

/** Generous for a loaded 2-core machine: by hand it is 10-30 ms (see the report in docs/benchmarks.md). */
const WITHIN_MS = 1000;

let dir: string;
let input: Buffer;
let inputPath: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-signals-"));
  input = randomBytes(16 * 1024 * 1024);
  inputPath = join(dir, "input");
  writeFileSync(inputPath, input);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Signalled {
  /** tbucket's status as the shell sees it: 128 + the signal's number. */
  status: number;
  /** From the signal to the end of tbucket. */
  ms: number;
  stderr: string;
}

/**
 * Runs a bash `pipeline` in which `{tbucket}` stands for tbucket (braces, which no temporary
 * path holds), sends `signal` to tbucket `afterMs` after its signal handlers are in, and waits
 * for the pipeline to end. tbucket reports its pid on descriptor 3, and the pipeline its status.
 * `{signalled}` in the pipeline is a file made once tbucket has ended: a stalled reader or writer
 * waits for it, so it stalls for as long as the test needs, however slowly the machine runs Node.
 */
async function signalDuring(pipeline: string, signal: NodeJS.Signals, afterMs: number, env: NodeJS.ProcessEnv = {}): Promise<Signalled> {
  const position = pipeline.split("|").findIndex((command) => command.includes("{tbucket}"));
  const tb = `sh -c 'echo "pid $$" >&3; exec "$0" "$@"' "${process.execPath}" "${TBUCKET}"`;
  const marker = join(dir, `signalled-${++signalledFiles}`);
  const script = `${pipeline.replaceAll("{tbucket}", () => tb).replaceAll("{signalled}", marker)}; echo "status \${PIPESTATUS[${position}]}" >&3`;
  const child = spawn("bash", ["-c", script], { stdio: ["ignore", "ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let said = "";
  let stderr = "";
  child.stdio[3]!.on("data", (chunk) => (said += chunk));
  child.stderr!.on("data", (chunk) => (stderr += chunk));
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  for (let i = 0; i < 1000 && !/pid \d+/.test(said); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const pid = Number(/pid (\d+)/.exec(said)?.[1]);
  expect(pid, `no pid in "${said}"; stderr: ${stderr}`).toBeGreaterThan(0);
  // A signal before tbucket takes it would end it by Node's own handler, with no --stats, which is not
  // what is under test. Node catches SIGINT and SIGTERM from its start (to reset the terminal), so
  // SIGHUP, which only tbucket's handlers take, says when they are in.
  for (let i = 0; i < 2000 && !catches(pid, "SIGHUP"); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  const sentMs = performance.now();
  process.kill(pid, signal);
  let ms = Infinity;
  for (let i = 0; i < 10_000; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      ms = performance.now() - sentMs;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  // Only now does the stalled side move (a writer that ended sooner would be an end of input, not a signal).
  writeFileSync(marker, "");
  await closed;
  return { status: Number(/status (\d+)/.exec(said)?.[1]), ms, stderr };
}

/** A shell loop that waits for the `{signalled}` file. */
const UNTIL_SIGNALLED = `while [ ! -e "{signalled}" ]; do sleep 0.05; done`;
let signalledFiles = 0;

/** Whether process `pid` has a handler for `signal` (the SigCgt mask of /proc/PID/status). */
function catches(pid: number, signal: NodeJS.Signals): boolean {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << BigInt(osConstants.signals[signal] - 1))) !== 0n;
}

/** The bytes of `--stats-format json` on standard error, after any progress lines. */
function statsBytes(stderr: string): number {
  // The shell may add its own line ("Terminated").
  const line = stderr.trim().split("\n").findLast((text) => text.startsWith("{"))!;
  return (JSON.parse(line) as { bytes: number }).bytes;
}

/** Plain progress lines (one a second when standard error is not a terminal). */
function progressLines(stderr: string): number {
  return stderr.split("\n").filter((line) => line.includes("limit") && !line.startsWith("{")).length;
}

function expectPrefixOfInput(outPath: string, atLeast: number): Buffer {
  const out = readFileSync(outPath);
  expect(out.length).toBeGreaterThanOrEqual(atLeast);
  expect(out.equals(input.subarray(0, out.length))).toBe(true);
  return out;
}

describe.each([
  ["SIGTERM", 143],
  ["SIGINT", 130],
] as const)("tbucket pipe: %s ends it at once", (signal, status) => {
  it("while it waits for tokens", async () => {
    const out = join(dir, `tokens-${signal}`);
    const result = await signalDuring(`{tbucket} --rate 1mb --stats-format json < "${inputPath}" > "${out}"`, signal, 700);
    expect(result.status).toBe(status);
    expect(result.ms).toBeLessThan(WITHIN_MS);
    const bytes = statsBytes(result.stderr);
    expect(bytes).toBeGreaterThan(0);
    expect(expectPrefixOfInput(out, bytes).length).toBe(bytes);
  });

  it.each([
    ["", []],
    // Progress on standard error loads a module that makes a piped standard output non-blocking.
    [", the progress line still moving", ["--progress"]],
  ])("while blocked writing to a reader that stalled (| sleep)%s", async (_title, progress) => {
    const out = join(dir, `stalled-reader-${signal}-${progress.length}`);
    // The reader waits until the signal, then keeps what was in the pipe: tbucket blocks in write(2) meanwhile.
    const result = await signalDuring(`{tbucket} --rate 100mb ${progress.join(" ")} --stats-format json < "${inputPath}" | (${UNTIL_SIGNALLED}; cat > "${out}")`, signal, 1700);
    expect(result.status).toBe(status);
    expect(result.ms).toBeLessThan(WITHIN_MS);
    // One plain progress line a second while blocked, and one more with the stats.
    if (progress.length > 0) expect(progressLines(result.stderr)).toBeGreaterThanOrEqual(2);
    expectPrefixOfInput(out, statsBytes(result.stderr));
  });

  it("while blocked reading a FIFO that no writer opened", async () => {
    const fifo = join(dir, `fifo-${signal}`);
    execFileSync("mkfifo", [fifo]);
    const result = await signalDuring(`{tbucket} --rate inf --stats-format json "${fifo}" | cat > /dev/null`, signal, 700);
    expect(result.status).toBe(status);
    expect(result.ms).toBeLessThan(WITHIN_MS);
    expect(statsBytes(result.stderr)).toBe(0);
  });

  it("while blocked reading a pipe whose writer stalled", async () => {
    const out = join(dir, `stalled-writer-${signal}`);
    const result = await signalDuring(`(printf abc; ${UNTIL_SIGNALLED}) | {tbucket} --rate inf --stats-format json > "${out}"`, signal, 700);
    expect(result.status).toBe(status);
    expect(result.ms).toBeLessThan(WITHIN_MS);
    expect(statsBytes(result.stderr)).toBe(3);
    expect(readFileSync(out, "utf8")).toBe("abc");
  });

  it.each([
    ["to /dev/null", "> /dev/null"],
    ["into a pipe", "| cat > /dev/null"],
  ])("while copying a 20 GB sparse file flat out (--rate inf) %s, the progress line still moving", async (_where, output) => {
    const sparse = join(dir, `sparse-${signal}`);
    execFileSync("truncate", ["-s", "20G", sparse]);
    try {
      const result = await signalDuring(`{tbucket} --rate inf --progress --stats-format json "${sparse}" ${output}`, signal, 2300);
      expect(result.status).toBe(status);
      expect(result.ms).toBeLessThan(WITHIN_MS);
      expect(progressLines(result.stderr)).toBeGreaterThanOrEqual(2);
      expect(statsBytes(result.stderr)).toBeGreaterThan(1024 * 1024);
    } finally {
      rmSync(sparse, { force: true });
    }
  });
});
