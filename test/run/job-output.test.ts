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
    expect(writes).toEqual(["one\n", "two\n", "three\n"]);
  });

  it("lines of two jobs never mix, however their chunks interleave", () => {
    const { writes, stream } = recordingStream();
    const sink = new OutputSink(stream);
    const a = new LineCollector(sink, undefined);
    const b = new LineCollector(sink, undefined);
    a.push(Buffer.from("aaa"), () => {});
    b.push(Buffer.from("bbb"), () => {});
    a.push(Buffer.from("AAA\n"), () => {});
    b.push(Buffer.from("BBB\nb2"), () => {});
    a.end();
    b.end();
    expect(writes.join("")).toBe("aaaAAA\nbbbBBB\nb2\n");
  });

  it("tags every line", () => {
    const { writes, stream } = recordingStream();
    const collector = new LineCollector(new OutputSink(stream), "item\t");
    collector.push(Buffer.from("x\ny\nz"), () => {});
    collector.end();
    expect(writes.join("")).toBe("item\tx\nitem\ty\nitem\tz\n");
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

  it("with a tag, tags each line and finishes an unfinished last line", () => {
    const { writes, stream } = recordingStream();
    const collector = new GroupCollector(new OutputSink(stream), "7\t");
    collector.push(Buffer.from("a\nb"));
    collector.end();
    expect(writes).toEqual(["7\ta\n7\tb\n"]);
  });
});
