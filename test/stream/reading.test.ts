import { spawn, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReadAhead } from "../../src/stream/read-ahead.js";
import { readSources } from "../../src/stream/read-sources.js";
import { ReaderThread } from "../../src/stream/reader-thread.js";

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
      fs.writeSync(out, data.subarray(at, at + size));
      at += size;
      setTimeout(step, Number(pauseMs));
    };
    step();`;
  const child = spawn(process.execPath, ["-e", script, source, path, String(pieces), String(pauseMs)], { stdio: "inherit" });
  return { path, done: new Promise((resolve) => child.on("close", resolve)) };
}

describe("ReaderThread", () => {
  it("hands over a file byte for byte, in chunks of at most maxChunkBytes, round and round a small ring", async () => {
    const input = randomBytes(1_000_003);
    const fd = openSync(file("ring.bin", input), "r");
    try {
      // A 4 KiB ring: the input wraps it about 250 times.
      expect((await collect(new ReaderThread(fd, { maxChunkBytes: 1000, ringBytes: 4096 }), 1000)).equals(input)).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it("waits for a pipe that delivers slowly, and loses nothing", async () => {
    const input = randomBytes(200_000);
    const fifo = slowFifo("slow.fifo", input, 8, 30);
    const fd = openSync(fifo.path, "r");
    try {
      expect((await collect(new ReaderThread(fd, { maxChunkBytes: 64 * 1024 }), 64 * 1024)).equals(input)).toBe(true);
    } finally {
      closeSync(fd);
      await fifo.done;
    }
  });

  it("lets go at once when the consumer stops early, even while a read waits for input", async () => {
    const fifo = slowFifo("waiting.fifo", randomBytes(2000), 2, 1500);
    const fd = openSync(fifo.path, "r");
    try {
      const thread = new ReaderThread(fd, { maxChunkBytes: 4096 });
      expect((await thread.next()).value?.length).toBe(1000);
      const startedMs = performance.now();
      // The thread now waits in read(2) for the second piece, 1.5 s away.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await thread.return()).toEqual({ value: undefined, done: true });
      expect(performance.now() - startedMs).toBeLessThan(1000);
    } finally {
      await fifo.done;
      closeSync(fd);
    }
  });

  it("ends at once on empty input", async () => {
    const fd = openSync(file("empty.bin", Buffer.alloc(0)), "r");
    try {
      expect(await new ReaderThread(fd, { maxChunkBytes: 1024 }).next()).toEqual({ value: undefined, done: true });
    } finally {
      closeSync(fd);
    }
  });

  it("rejects with the read's own error", async () => {
    const fd = openSync(dir, "r");
    try {
      await expect(new ReaderThread(fd, { maxChunkBytes: 1024 }).next()).rejects.toMatchObject({ code: "EISDIR", syscall: "read" });
    } finally {
      closeSync(fd);
    }
  });
});

describe("ReadAhead stopped part-way, then a ReaderThread going on", () => {
  it("hands over what it read before stop(), without reaching the end, and the thread reads the rest", async () => {
    const input = randomBytes(500_000);
    const fd = openSync(file("handover.bin", input), "r");
    try {
      const readAhead = new ReadAhead(fd, 64 * 1024);
      const thread = new ReaderThread(fd, { maxChunkBytes: 64 * 1024 });
      await thread.ready;
      const first: Buffer[] = [];
      for await (const chunk of readAhead) {
        first.push(Buffer.from(chunk));
        if (readAhead.bytesRead >= 100_000) readAhead.stop();
      }
      expect(readAhead.reachedEnd).toBe(false);
      const before = Buffer.concat(first);
      expect(before.length).toBeGreaterThanOrEqual(100_000);
      expect(before.length).toBeLessThan(input.length);
      const rest = await collect(thread);
      expect(Buffer.concat([before, rest]).equals(input)).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it("reports reaching the end when the input ends first", async () => {
    const input = randomBytes(10_000);
    const fd = openSync(file("short.bin", input), "r");
    try {
      const readAhead = new ReadAhead(fd, 64 * 1024);
      expect((await collect(readAhead)).equals(input)).toBe(true);
      expect(readAhead.reachedEnd).toBe(true);
    } finally {
      closeSync(fd);
    }
  });

  it("readSources hands a long pipe over to the thread part-way, losing nothing, between files read as usual", async () => {
    const first = randomBytes(300_000);
    const piped = randomBytes(400_000);
    const last = randomBytes(70_000);
    const fifo = slowFifo("sources.fifo", piped, 10, 20);
    const errors: string[] = [];
    const output = await collect(
      readSources([file("first.bin", first), fifo.path, file("last.bin", last)], {
        readAheadBytes: 64 * 1024,
        threadAfterBytes: 50_000,
        onError: (name, error) => errors.push(`${name}: ${error.code}`),
      }),
    );
    await fifo.done;
    expect(errors).toEqual([]);
    expect(output.equals(Buffer.concat([first, piped, last]))).toBe(true);
  });

  it("readSources ends cleanly when a pipe ends before its thread is up", async () => {
    const piped = randomBytes(60_000);
    const fifo = slowFifo("short.fifo", piped, 1, 0);
    const output = await collect(readSources([fifo.path], { readAheadBytes: 64 * 1024, threadAfterBytes: 1, onError: () => {} }));
    await fifo.done;
    expect(output.equals(piped)).toBe(true);
  });
});
