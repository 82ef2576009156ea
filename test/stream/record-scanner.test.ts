import { describe, expect, it } from "vitest";
import { RecordScanner } from "../../src/stream/record-scanner.js";

const lines = new RecordScanner(10);

describe("RecordScanner", () => {
  it("takes up to n record starts, with the rest of a record already started free", () => {
    const scanner = new RecordScanner(10);
    const chunk = Buffer.from("ab\ncd\nef\n");
    expect(scanner.recordsFrom(chunk, 0, 2)).toEqual({ end: 6, records: 2 });
    expect(scanner.recordsFrom(chunk, 6, 2)).toEqual({ end: 9, records: 1 });
    // A record cut by a read is counted where it starts only.
    expect(scanner.recordsFrom(Buffer.from("gh"), 0, 1)).toEqual({ end: 2, records: 1 });
    expect(scanner.recordsFrom(Buffer.from("i\nj"), 0, 0)).toEqual({ end: 2, records: 0 });
    expect(scanner.recordsFrom(Buffer.from("i\nj"), 2, 1)).toEqual({ end: 3, records: 1 });
  });

  it("ends a byte slice between records, and sends a record longer than the slice whole", () => {
    const scanner = new RecordScanner(0);
    const chunk = Buffer.from("aa\0bb\0cccccc\0d");
    expect(scanner.wholeRecordsFrom(chunk, 0, 7)).toEqual({ end: 6, records: 2 });
    expect(scanner.wholeRecordsFrom(chunk, 6, 3)).toEqual({ end: 13, records: 1 });
    // The last record has no end in this chunk: it goes as far as the chunk holds it, and stays open.
    expect(scanner.wholeRecordsFrom(chunk, 13, 3)).toEqual({ end: 14, records: 1 });
    expect(scanner.wholeRecordsFrom(Buffer.from("\0e\0"), 0, 3)).toEqual({ end: 3, records: 1 });
  });

  it("counts record starts, a last record without delimiter included, across segments", () => {
    expect(lines.countStarts(Buffer.from("a\nb"))).toBe(2);
    expect(lines.countStarts(Buffer.from("c\nd\n"))).toBe(1);
    expect(lines.countStarts(Buffer.alloc(0))).toBe(0);
  });
});
