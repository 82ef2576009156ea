import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { jobSource, readLines } from "../../src/run/job-source.js";

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of source) out.push(x);
  return out;
}

describe("readLines", () => {
  it("splits on newlines across chunk boundaries, keeps empty lines, forgives a missing last newline", async () => {
    const input = Readable.from([Buffer.from("a\nb"), Buffer.from("c\n\nd\n"), Buffer.from("e")]);
    expect(await collect(readLines(input))).toEqual(["a", "bc", "", "d", "e"]);
  });

  it("gives nothing for empty input and no extra item after a final newline", async () => {
    expect(await collect(readLines(Readable.from([])))).toEqual([]);
    expect(await collect(readLines(Readable.from([Buffer.from("x\n")])))).toEqual(["x"]);
  });

  it("decodes UTF-8 split across chunks", async () => {
    const bytes = Buffer.from("héllo\n");
    const input = Readable.from([bytes.subarray(0, 2), bytes.subarray(2)]);
    expect(await collect(readLines(input))).toEqual(["héllo"]);
  });

  it("reads the input only as far as items are asked for (a million items cost one chunk)", async () => {
    let chunksPulled = 0;
    async function* million() {
      for (let chunk = 0; chunk < 1000; chunk++) {
        chunksPulled++;
        yield Buffer.from(Array.from({ length: 1000 }, (_, i) => `item-${chunk * 1000 + i}\n`).join(""));
      }
    }
    const jobs = jobSource({ items: readLines(million()), count: Infinity });
    let taken = 0;
    for await (const job of jobs) {
      if (++taken === 1500) {
        expect(job).toEqual({ number: 1500, item: "item-1499" });
        break;
      }
    }
    expect(chunksPulled).toBe(2);
  });
});

describe("jobSource", () => {
  it("numbers --count jobs from 1, without items", async () => {
    expect(await collect(jobSource({ count: 3 }))).toEqual([
      { number: 1, item: undefined },
      { number: 2, item: undefined },
      { number: 3, item: undefined },
    ]);
  });

  it("takes at most --count items", async () => {
    async function* items() {
      yield* ["a", "b", "c"];
    }
    expect(await collect(jobSource({ items: items(), count: 2 }))).toEqual([
      { number: 1, item: "a" },
      { number: 2, item: "b" },
    ]);
  });
});
