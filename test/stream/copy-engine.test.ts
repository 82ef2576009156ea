// The pipe's copy engine without the command line: real files in a temp dir to a real pipe
// (a FIFO this process holds both ends of) or a file, through a private bucket on a fake clock.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, constants, openSync, readFileSync, writeFileSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { Limiter } from "../../src/core/limiter.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { chooseCopyPath, type CopyOptions, type CopyPath, copySources } from "../../src/stream/copy-engine.js";
import { createFdWriter } from "../../src/stream/fd-writer.js";
import { nativeIo } from "../../src/stream/native-io.js";
import { SpliceProgress } from "../../src/stream/splice-copy.js";
import { type CostMode, Throttle } from "../../src/stream/throttle.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("copy-engine");
let dir: string;
/** Larger than a read-ahead (64 KiB at 1 MiB/s, 128 KiB unlimited) and than a pipe's 64 KiB. */
const first = randomBytes(300 * 1024 + 7);
const second = randomBytes(100 * 1024 + 3);
let firstPath: string;
let secondPath: string;

beforeAll(() => {
  dir = tempDir();
  firstPath = join(dir, "first");
  secondPath = join(dir, "second");
  writeFileSync(firstPath, first);
  writeFileSync(secondPath, second);
});

const MiB = 1024 * 1024;
/** At 1 MiB/s a slice is 10 ms of the rate, floored. */
const SLICE_BYTES = Math.floor(MiB / 100);

/** A bucket on a clock that never moves: so full (64 MiB) that the copy never waits. */
function fullBucket(): TokenBucket {
  return new TokenBucket({ rate: MiB, burst: 64 * MiB, clock: new FakeClock() });
}

const LIMITERS: Array<[string, () => Limiter]> = [
  ["unlimited", () => new TokenBucket({ rate: Infinity, burst: 1 })],
  ["at 1 MiB/s, slice by slice", fullBucket],
];

/** A pipe whose both ends this process holds; what comes out of it is gathered until the write end closes. */
let outputs = 0;

function openPipe(name: string): { writeFd: number; received: Promise<Buffer> } {
  const path = join(dir, `${name}-${++outputs}.fifo`);
  execFileSync("mkfifo", [path]);
  // The read end first, without waiting for a writer; then the write end finds it open.
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(path, "w");
  const reader = new Socket({ fd: readFd, readable: true, writable: false });
  const chunks: Buffer[] = [];
  reader.on("data", (chunk: Buffer) => chunks.push(chunk));
  const received = new Promise<Buffer>((resolve, reject) => {
    reader.on("end", () => resolve(Buffer.concat(chunks)));
    reader.on("error", reject);
  });
  return { writeFd, received };
}

interface CopyRun {
  copying: Promise<void>;
  /** The output's bytes, once the copy has ended (either way). */
  output: Promise<Buffer>;
  movedBytes: () => number;
  sourceErrors: Array<{ name: string; code: string | undefined }>;
}

/** Copies `sources` into a pipe (or a file when `toFile`) by `path`, as the pipe command would. */
function copyOut(name: string, sources: string[], throttle: Throttle, options: { path: (outputFd: number) => CopyPath; toFile?: boolean; signal?: AbortSignal; onOutput?: (bytes: number) => void }): CopyRun {
  const outPath = join(dir, `${name}-${++outputs}.out`);
  const pipe = options.toFile ? undefined : openPipe(name);
  const outputFd = pipe?.writeFd ?? openSync(outPath, "w");
  let movedBytes = 0;
  const sourceErrors: CopyRun["sourceErrors"] = [];
  const write = createFdWriter(outputFd, options.onOutput);
  const copyOptions: CopyOptions = {
    sources,
    outputFd,
    path: options.path(outputFd),
    throttle,
    emit: write,
    onSourceError: (source, error) => sourceErrors.push({ name: source, code: error.code }),
    moving: new SpliceProgress(),
    onMoved: (bytes) => {
      movedBytes += bytes;
      options.onOutput?.(bytes);
    },
    signal: options.signal,
  };
  const copying = copySources(copyOptions);
  const output = copying
    .catch(() => {})
    .then(() => {
      closeSync(outputFd);
      return pipe ? pipe.received : readFileSync(outPath);
    });
  return { copying, output, movedBytes: () => movedBytes, sourceErrors };
}

const SPLICE = (outputFd: number): CopyPath => {
  const path = chooseCopyPath([firstPath, secondPath], { outputFd, cost: "bytes", loadIo: () => nativeIo() });
  expect(path.kind).toBe("splice");
  return path;
};
const READ_WRITE = (): CopyPath => ({ kind: "read-write" });

describe("chooseCopyPath", () => {
  it("moves byte costs into a pipe by splice(2), asking for the native part then only", () => {
    const { writeFd } = openPipe("choose-pipe");
    const loads: string[] = [];
    const loadIo = () => {
      loads.push("asked");
      return nativeIo();
    };
    try {
      expect(chooseCopyPath([firstPath], { outputFd: writeFd, cost: "bytes", loadIo }).kind).toBe("splice");
      expect(loads).toEqual(["asked"]);
      // Lines must be seen to be counted: read and written, and the native part never loaded.
      for (const cost of ["records", "record-bytes"] as CostMode[]) {
        expect(chooseCopyPath([firstPath], { outputFd: writeFd, cost, loadIo }).kind).toBe("read-write");
      }
      expect(loads).toEqual(["asked"]);
      // Where the native part is missing (TBUCKET_NATIVE=0, not Linux), read and written.
      expect(chooseCopyPath([firstPath], { outputFd: writeFd, cost: "bytes", loadIo: () => undefined }).kind).toBe("read-write");
    } finally {
      closeSync(writeFd);
    }
  });

  it("reads and writes named files going to a file (neither side a pipe)", () => {
    const outputFd = openSync(join(dir, "choose-file.out"), "w");
    try {
      expect(chooseCopyPath([firstPath, secondPath], { outputFd, cost: "bytes", loadIo: () => nativeIo() }).kind).toBe("read-write");
    } finally {
      closeSync(outputFd);
    }
  });
});

describe.each(LIMITERS)("copySources %s", (_title, limiter) => {
  it("moves the sources by splice(2) into a pipe, exactly and in order", async () => {
    const throttle = new Throttle({ limiter: limiter() });
    const run = copyOut("splice", [firstPath, secondPath], throttle, { path: SPLICE });
    await run.copying;
    expect((await run.output).equals(Buffer.concat([first, second]))).toBe(true);
    expect(run.movedBytes()).toBe(first.length + second.length);
    expect(throttle.stats.bytes).toBe(first.length + second.length);
  });

  it.each([
    ["into a pipe", false],
    ["into a file", true],
  ])("reads and writes the sources %s, exactly and in order", async (_where, toFile) => {
    const throttle = new Throttle({ limiter: limiter() });
    const run = copyOut(`read-write-${toFile}`, [firstPath, secondPath], throttle, { path: READ_WRITE, toFile });
    await run.copying;
    expect((await run.output).equals(Buffer.concat([first, second]))).toBe(true);
    // The read-write path writes through `emit`; onMoved is splice's.
    expect(run.movedBytes()).toBe(0);
    expect(throttle.stats.bytes).toBe(first.length + second.length);
  });

  it.each([
    ["by splice(2)", SPLICE],
    ["read and written", READ_WRITE],
  ])("skips a source that cannot be opened, as cat does, and copies the rest (%s)", async (_how, path) => {
    const throttle = new Throttle({ limiter: limiter() });
    const missing = join(dir, "missing");
    const run = copyOut(`missing-${path === SPLICE}`, [firstPath, missing, secondPath], throttle, { path });
    await run.copying;
    expect((await run.output).equals(Buffer.concat([first, second]))).toBe(true);
    expect(run.sourceErrors).toEqual([{ name: missing, code: "ENOENT" }]);
  });
});

describe("copySources counting lines", () => {
  it("pays a token a line and writes every byte", async () => {
    const lines = Buffer.from(Array.from({ length: 5000 }, (_, i) => `line ${i}\n`).join(""));
    const path = join(dir, "lines");
    writeFileSync(path, lines);
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1000, burst: 10_000, clock: new FakeClock() }), cost: "records" });
    const run = copyOut("lines", [path], throttle, { path: READ_WRITE });
    await run.copying;
    expect((await run.output).equals(lines)).toBe(true);
    expect(throttle.stats.records).toBe(5000);
    expect(throttle.limiter.tokens()).toBe(5000);
  });
});

/** A store lost mid-copy: the limiter grants `budget` tokens, then every wait rejects. */
function refusingAfter(budget: number, bucket: TokenBucket): Limiter {
  let granted = 0;
  return {
    get rate() {
      return bucket.rate;
    },
    get burst() {
      return bucket.burst;
    },
    tokens: () => bucket.tokens(),
    tryWait: (n, maxWaitMs, signal) => bucket.tryWait(n, maxWaitMs, signal),
    wait(n, signal) {
      if (granted + n > budget) return Promise.reject(new Error("store lost"));
      granted += n;
      return bucket.wait(n, signal);
    },
  };
}

describe.each([
  ["by splice(2)", SPLICE],
  ["read and written", READ_WRITE],
])("copySources %s, stopped", (how, path) => {
  it("by a limiter that refuses: rejects with its error, having let out exactly what was paid for", async () => {
    const bucket = fullBucket();
    const throttle = new Throttle({ limiter: refusingAfter(3 * SLICE_BYTES, bucket), clock: bucket.clock });
    const run = copyOut(`refused-${how}`, [firstPath, secondPath], throttle, { path });
    await expect(run.copying).rejects.toThrow("store lost");
    expect((await run.output).equals(first.subarray(0, 3 * SLICE_BYTES))).toBe(true);
  });

  it("by an abort mid-copy: rejects with its reason before the next slice", async () => {
    const controller = new AbortController();
    const reason = new Error("stopped");
    const run = copyOut(`aborted-${how}`, [firstPath, secondPath], new Throttle({ limiter: fullBucket() }), {
      path,
      signal: controller.signal,
      onOutput: () => controller.abort(reason),
    });
    await expect(run.copying).rejects.toBe(reason);
    expect((await run.output).equals(first.subarray(0, SLICE_BYTES))).toBe(true);
  });

  it("by an abort while waiting for tokens: rejects at once, the tokens paid out and nothing more", async () => {
    const clock = new FakeClock();
    // 100 bytes at once (the burst, in slices of 10), then a wait the clock never ends.
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1000, burst: 100, clock }) });
    const controller = new AbortController();
    const run = copyOut(`aborted-waiting-${how}`, [firstPath], throttle, { path, signal: controller.signal });
    // The burst's writes are real I/O: wait for them, then for the wait on the fake clock.
    for (let turn = 0; turn < 5000 && clock.pendingSleeps === 0; turn++) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(clock.pendingSleeps).toBe(1);
    controller.abort(new Error("stopped"));
    await expect(run.copying).rejects.toThrow("stopped");
    expect((await run.output).equals(first.subarray(0, 100))).toBe(true);
    expect(clock.pendingSleeps).toBe(0);
  });
});
