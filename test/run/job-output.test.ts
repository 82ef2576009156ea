import { describe, expect, it } from "vitest";
import { GroupCollector, LineCollector, MAX_HELD_LINE_BYTES } from "../../src/run/job-output.js";
import { OutputSink, type WritableLike } from "../../src/run/output-sink.js";

/** A stream that records each write separately and can pretend to be full. */
function recordingStream(full = false) {
  const writes: string[] = [];
  let drain: (() => void) | undefined;
  const stream: WritableLike = {
    write: (chunk) => {
      writes.push(chunk.toString());
      return !full;
    },
    once: (_event, listener) => (drain = listener),
  };
  return { writes, stream, drain: () => drain?.() };
}

describe("LineCollector", () => {
  it("writes only whole lines, each run of them in one write, and holds the unfinished line", () => {
    const { writes, stream } = recordingStream();
    const collector = new LineCollector(new OutputSink(stream), undefined);
    collector.push(Buffer.from("one\ntw"), () => {});
    collector.push(Buffer.from("o\nthr"), () => {});
    collector.push(Buffer.from("ee"), () => {});
    expect(writes).toEqual(["one\n", "two\n"]);
    collector.end();
    expect(writes).toEqual(["one\n", "two\n", "three"]);
  });

  it("lines of two jobs never mix, however their chunks interleave", () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream, { unfinishedLines: "between" });
    const a = new LineCollector(sink, undefined);
    const b = new LineCollector(sink, undefined);
    a.push(Buffer.from("aaa"), () => {});
    b.push(Buffer.from("bbb"), () => {});
    a.push(Buffer.from("AAA\n"), () => {});
    b.push(Buffer.from("BBB\nb2"), () => {});
    a.end();
    b.end();
    expect(writes.join("")).toBe("aaaAAA\nbbbBBB\nb2");
  });

  it("tags every line", () => {
    const { writes, stream } = recordingStream();
    const collector = new LineCollector(new OutputSink(stream), "item\t");
    collector.push(Buffer.from("x\ny\nz"), () => {});
    collector.end();
    expect(writes.join("")).toBe("item\tx\nitem\ty\nitem\tz");
  });

  it("passes on a line longer than the limit rather than holding it without bound", () => {
    const { writes, stream } = recordingStream();
    const collector = new LineCollector(new OutputSink(stream), undefined);
    collector.push(Buffer.alloc(MAX_HELD_LINE_BYTES, 0x61), () => {});
    expect(writes).toHaveLength(1);
    expect(writes[0]).toHaveLength(MAX_HELD_LINE_BYTES);
  });

  it("asks its source to pause when the stream is full, and resumes it on drain", () => {
    const { stream, drain } = recordingStream(true);
    const collector = new LineCollector(new OutputSink(stream), undefined);
    let resumed = 0;
    expect(collector.push(Buffer.from("x\n"), () => resumed++)).toBe(false);
    expect(resumed).toBe(0);
    drain();
    expect(resumed).toBe(1);
  });
});

describe("GroupCollector", () => {
  it("writes all of a job's output in one write at its end, bytes unchanged", () => {
    const { writes, stream } = recordingStream();
    const collector = new GroupCollector(new OutputSink(stream), undefined);
    collector.push(Buffer.from("a\nb"));
    collector.push(Buffer.from("c"));
    expect(writes).toEqual([]);
    collector.end();
    expect(writes).toEqual(["a\nbc"]);
  });

  it("with a tag, tags each line; an unfinished last line is ended only where another job's output follows", () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream, { unfinishedLines: "between" });
    new GroupCollector(sink, "7\t").push(Buffer.from("a\nb"));
    const seven = new GroupCollector(sink, "7\t");
    seven.push(Buffer.from("a\nb"));
    seven.end();
    expect(writes.join("")).toBe("7\ta\n7\tb");
    const eight = new GroupCollector(sink, "8\t");
    eight.push(Buffer.from("c"));
    eight.end();
    expect(writes.join("")).toBe("7\ta\n7\tb\n8\tc");
  });
});

describe("OutputSink: a job's output that ends mid-line", () => {
  const twoJobs = (unfinishedLines: "none" | "between" | "now") => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream, { unfinishedLines });
    for (const text of ["one", "two"]) {
      const job = new LineCollector(sink, undefined, { text });
      job.push(Buffer.from(text), () => {});
      job.end();
    }
    return writes.join("");
  };

  it("none (jobs one at a time): the bytes as the jobs wrote them", () => {
    expect(twoJobs("none")).toBe("onetwo");
  });

  it("between: a newline only where another job's output follows, never at the end", () => {
    expect(twoJobs("between")).toBe("one\ntwo");
  });

  it("now (under a progress line): each ends at once", () => {
    expect(twoJobs("now")).toBe("one\ntwo\n");
  });

  it("tbucket's own line starts on a line of its own whatever the mode", () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream);
    const job = new LineCollector(sink, undefined);
    job.push(Buffer.from("partial"), () => {});
    job.end();
    sink.writeLine("tbucket: run: a line\n");
    expect(writes.join("")).toBe("partial\ntbucket: run: a line\n");
    expect(sink.startLine()).toBe("");
  });
});

describe("LineCollector: a line longer than MAX_HELD_LINE_BYTES", () => {
  const long = (letter: string, bytes: number) => Buffer.alloc(bytes, letter);

  it("is streamed through whole, tagged once at its start; another job's lines wait for its newline", () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream, { unfinishedLines: "between" });
    const a = new LineCollector(sink, "a\t", { job: "a" });
    const b = new LineCollector(sink, "b\t", { job: "b" });
    let resumedB = 0;
    expect(a.push(long("a", MAX_HELD_LINE_BYTES), () => {})).toBe(true);
    // b's chunk arrives mid-line: b is asked to pause, nothing of it is written.
    expect(b.push(Buffer.from("b1\nb2\n"), () => resumedB++)).toBe(false);
    expect(a.push(long("a", 10), () => {})).toBe(true);
    expect(writes.join("")).toBe(`a\t${"a".repeat(MAX_HELD_LINE_BYTES + 10)}`);
    // The newline ends a's hold: b's lines follow, then b may go on.
    a.push(Buffer.from("a\nnext"), () => {});
    expect(resumedB).toBe(1);
    a.end();
    expect(writes.join("")).toBe(`a\t${"a".repeat(MAX_HELD_LINE_BYTES + 11)}\nb\tb1\nb\tb2\na\tnext`);
  });

  it("a job that ends mid-line frees the others, and the next job's output starts on a line of its own", async () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream, { unfinishedLines: "between" });
    const a = new LineCollector(sink, undefined, { job: "a" });
    const b = new LineCollector(sink, undefined, { job: "b" });
    a.push(long("a", MAX_HELD_LINE_BYTES), () => {});
    expect(b.push(Buffer.from("tail"), () => {})).toBe(false);
    let bDone = false;
    const bEnded = b.end().then(() => (bDone = true));
    await Promise.resolve();
    expect(bDone).toBe(false);
    await a.end();
    await bEnded;
    expect(writes.join("")).toBe(`${"a".repeat(MAX_HELD_LINE_BYTES)}\ntail`);
  });

  it("the same job's other stream is not held up", () => {
    const { writes, stream } = recordingStream();
    const out = new OutputSink(stream);
    const err = new OutputSink(stream, { lock: out.lock });
    const job = { job: 1 };
    const stdout = new LineCollector(out, undefined, job);
    const stderr = new LineCollector(err, undefined, job);
    stdout.push(long("a", MAX_HELD_LINE_BYTES), () => {});
    expect(stderr.push(Buffer.from("warning\n"), () => {})).toBe(true);
    expect(writes.at(-1)).toBe("warning\n");
  });
});

describe("OutputSink: a failed write", () => {
  function failingStream() {
    const stream: WritableLike = {
      write: (_chunk, callback) => {
        const error = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
        process.nextTick(() => callback?.(error));
        return false;
      },
      once: () => {},
    };
    return stream;
  }

  it("is reported once; what follows is taken without waiting and counted as lost", async () => {
    const failures: string[] = [];
    const sink = new OutputSink(failingStream(), { onFailure: (error) => failures.push(error.code!) });
    let resumed = 0;
    const collector = new LineCollector(sink, undefined);
    expect(collector.push(Buffer.from("one\ntwo\n"), () => resumed++)).toBe(false);
    await new Promise((resolve) => process.nextTick(resolve));
    // The writer waiting for a drain that will never come is woken.
    expect(resumed).toBe(1);
    expect(failures).toEqual(["ENOSPC"]);
    expect(collector.push(Buffer.from("three\nfour"), () => resumed++)).toBe(true);
    await collector.end();
    expect([sink.lostBytes, sink.lostLines]).toEqual([18, 3]);
    expect(sink.failure?.code).toBe("ENOSPC");
  });
});
