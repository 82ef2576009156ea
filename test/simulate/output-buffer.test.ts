import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { OutputBuffer, OutputStreamError } from "../../src/simulate/output-buffer.js";

/** A stream whose writes fail with `code` after they were accepted, as a pipe whose reader left. */
function failingStream(code: string, afterBytes = 0): Writable {
  let written = 0;
  return new Writable({
    highWaterMark: 1 << 20,
    write(chunk: Buffer, _encoding, callback) {
      written += chunk.length;
      if (written <= afterBytes) return callback();
      const error: NodeJS.ErrnoException = new Error(`${code}: failed, write`);
      error.code = code;
      setImmediate(() => callback(error));
    },
  });
}

describe("simulate's output buffer", () => {
  it("a write that fails after it was accepted is thrown by flush as OutputStreamError, never an unhandled 'error'", async () => {
    const stream = failingStream("EPIPE");
    const output = new OutputBuffer(stream);
    output.write("a line\n");
    const failure = await output.flush().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OutputStreamError);
    expect((failure as OutputStreamError).failure.code).toBe("EPIPE");
  });

  it("once the stream failed, the next write throws, so a long run stops early", async () => {
    const output = new OutputBuffer(failingStream("ENOSPC"), 16);
    output.write("more than sixteen characters\n");
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(() => output.write("x")).toThrow(OutputStreamError);
    await expect(output.maybeFlush()).rejects.toThrow("ENOSPC: failed, write");
  });

  it("flush waits until the last piece is written", async () => {
    const chunks: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        setImmediate(() => {
          chunks.push(chunk.toString());
          callback();
        });
      },
    });
    const output = new OutputBuffer(stream);
    output.write("a");
    output.write("b");
    await output.flush();
    expect(chunks.join("")).toBe("ab");
  });
});
