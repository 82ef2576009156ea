import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadAhead } from "../../src/stream/read-ahead.js";
import { readSources } from "../../src/stream/read-sources.js";
import { PipeReadAhead } from "../../src/stream/pipe-read-ahead.js";

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-reading-"));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, content: Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** Copies every chunk at once: a chunk is a view that the reader reuses after the next `next()`. */
async function collect(chunks: AsyncIterable<Buffer>, maxChunkBytes = Infinity): Promise<Buffer> {
  const copies: Buffer[] = [];
  for await (const chunk of chunks) {
    expect(chunk.length).toBeGreaterThan(0);
    expect(chunk.length).toBeLessThanOrEqual(maxChunkBytes);
    copies.push(Buffer.from(chunk));
  }
  return Buffer.concat(copies);
}

/** A named pipe that a child process fills with `content` in pieces, pausing between them. */
function slowFifo(name: string, content: Buffer, pieces: number, pauseMs: number): { path: string; done: Promise<unknown> } {
  const path = join(dir, name);
  execFileSync("mkfifo", [path]);
  const source = file(`${name}.source`, content);
  const script = `
    const fs = require("node:fs");
    const [source, fifo, pieces, pauseMs] = process.argv.slice(1);
    const data = fs.readFileSync(source);
    const out = fs.openSync(fifo, "w");
    const size = Math.ceil(data.length / Number(pieces));
    let at = 0;
    const step = () => {
      if (at >= data.length) return fs.closeSync(out);
      try {
        fs.writeSync(out, data.subarray(at, at + size));
      } catch (error) {
        if (error.code === "EPIPE") return; // the reader let go early
        throw error;
      }
      at += size;
      setTimeout(step, Number(pauseMs));
    };
    step();`;
  const child = spawn(process.execPath, ["-e", script, source, path, String(pieces), String(pauseMs)], { stdio: "inherit" });
  return { path, done: new Promise((resolve) => child.on("close", resolve)) };
}

/** Asks for the next chunk only after some turns of the event loop, so that reads land meanwhile. */
async function collectSlowly(chunks: AsyncIterator<Buffer>, maxChunkBytes: number): Promise<Buffer> {
  const copies: Buffer[] = [];
  for (let i = 0; ; i++) {
    const { value, done } = await chunks.next();
    if (done) break;
    expect(value.length).toBeGreaterThan(0);
    expect(value.length).toBeLessThanOrEqual(maxChunkBytes);
    // The chunk must stay as it was until the next `next()`, however much is read meanwhile.
    const before = Buffer.from(value);
    for (let turn = 0; turn < i % 4; turn++) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(value.equals(before)).toBe(true);
    copies.push(before);
  }
  return Buffer.concat(copies);
}

function openDescriptors(): number {
  return readdirSync("/proc/self/fd").length;
}

describe("PipeReadAhead", () => {
  it("hands over a pipe byte for byte, in chunks of at most a buffer, round and round two small buffers", async () => {
    const input = randomBytes(1_000_003);
    const fifo = slowFifo("fast.fifo", input, 1, 0);
    const fd = openSync(fifo.path, "r");
    // 4 KiB buffers: reading pauses each time both are full, and the input goes round them about 120 times.
    expect((await collectSlowly(new PipeReadAhead(fd, 4096), 4096)).equals(input)).toBe(true);
    await fifo.done;
  });

  it("waits for a pipe that delivers slowly, and loses nothing", async () => {
    const input = randomBytes(200_000);
    const fifo = slowFifo("slow.fifo", input, 8, 30);
    const fd = openSync(fifo.path, "r");
    expect((await collect(new PipeReadAhead(fd, 64 * 1024), 64 * 1024)).equals(input)).toBe(true);
    await fifo.done;
  });

  it("ends at once on empty input, and closes the descriptor", async () => {
    const fifo = slowFifo("empty.fifo", Buffer.alloc(0), 1, 0);
    const before = openDescriptors();
    const fd = openSync(fifo.path, "r");
    expect(await new PipeReadAhead(fd, 1024).next()).toEqual({ value: undefined, done: true });
    expect(openDescriptors()).toBe(before);
    await fifo.done;
  });

  it("lets go at once when the consumer stops early, even while the pipe is silent, and closes the descriptor", async () => {
    const fifo = slowFifo("waiting.fifo", randomBytes(2000), 2, 1500);
    const before = openDescriptors();
    const fd = openSync(fifo.path, "r");
    const reader = new PipeReadAhead(fd, 4096);
    expect((await reader.next()).value?.length).toBe(1000);
    const startedMs = performance.now();
    // The second piece is 1.5 s away.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await reader.return()).toEqual({ value: undefined, done: true });
    expect(performance.now() - startedMs).toBeLessThan(1000);
    expect(openDescriptors()).toBe(before);
    await fifo.done;
  });
});

describe("ReadAhead", () => {
  it("hands over what a file holds, byte for byte, in chunks of at most its buffer", async () => {
    const input = randomBytes(300_001);
    const fd = openSync(file("thread-pool.bin", input), "r");
    try {
      expect((await collectSlowly(new ReadAhead(fd, 16 * 1024), 16 * 1024)).equals(input)).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it("rejects with the read's own error", async () => {
    const fd = openSync(dir, "r");
    try {
      await expect(new ReadAhead(fd, 1024).next()).rejects.toMatchObject({ code: "EISDIR", syscall: "read" });
    } finally {
      closeSync(fd);
    }
  });
});

describe("readSources", () => {
  it("reads files and a named pipe in turn, losing nothing and leaving no descriptor open", async () => {
    const first = randomBytes(300_000);
    const piped = randomBytes(400_000);
    const last = randomBytes(70_000);
    const fifo = slowFifo("sources.fifo", piped, 10, 20);
    const before = openDescriptors();
    const errors: string[] = [];
    const output = await collect(
      readSources([file("first.bin", first), fifo.path, file("last.bin", last)], {
        readAheadBytes: 64 * 1024,
        onError: (name, error) => errors.push(`${name}: ${error.code}`),
      }),
    );
    await fifo.done;
    expect(errors).toEqual([]);
    expect(output.equals(Buffer.concat([first, piped, last]))).toBe(true);
    expect(openDescriptors()).toBe(before);
  });

  it("reads a character device through the thread pool", async () => {
    const output = await collect(readSources(["/dev/null"], { readAheadBytes: 1024, onError: () => {} }));
    expect(output.length).toBe(0);
  });
});
