// The Throttle on a set of limits counting lines and bytes at once (`--lines --rate 10/s --rate 1kb`), on a fake clock.
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSetLimiter } from "../../src/core/limit-set-limiter.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { Throttle } from "../../src/stream/throttle.js";
import { ThrottleStream } from "../../src/stream/throttle-stream.js";

/** Passes `data` through a record-bytes throttle on the set; each slice with its time and its lines. */
async function passLines(specs: LimitSpec[], data: Buffer) {
  const clock = new FakeClock();
  const limiter = new LimitSetLimiter(specs, { unit: "bytes", clock });
  const throttle = new Throttle({ limiter, cost: "record-bytes", clock, recordsAtOnce: limiter.mostAtOnce("count") });
  const out: Array<{ atMs: number; text: string; lines: number }> = [];
  let done = false;
  const passing = throttle.pass(data, (segment) => void out.push({ atMs: clock.now(), text: segment.toString(), lines: segment.toString().split("\n").length - 1 })).finally(() => (done = true));
  while (!done) await clock.advance(10);
  await passing;
  return { out, limiter };
}

const lines = (count: number, length: number) => Buffer.from(`${"x".repeat(length - 1)}\n`.repeat(count));

describe("Throttle over a limit set of lines and bytes", () => {
  it("holds the line limit where it binds: no slice holds more lines than its burst, and lines keep to burst + rate x T", async () => {
    // A slice of 10 ms of the byte rate would hold 5 of these lines: the line limit's burst cuts it to 2.
    const data = lines(20, 2);
    const { out, limiter } = await passLines([{ kind: "bucket", unit: "count", rate: 10, burst: 2 }, { kind: "bucket", unit: "bytes", rate: 1000, burst: 100 }], data);
    expect(Buffer.from(out.map((slice) => slice.text).join(""))).toEqual(data);
    expect(Math.max(...out.map((slice) => slice.lines))).toBeLessThanOrEqual(2);
    // Lines are whole: every slice ends at a newline.
    expect(out.every((slice) => slice.text.endsWith("\n"))).toBe(true);
    for (const slice of out) {
      const sent = out.filter((other) => other.atMs <= slice.atMs).reduce((sum, other) => sum + other.lines, 0);
      expect(sent).toBeLessThanOrEqual(2 + (10 * slice.atMs) / 1000 + 1e-9);
    }
    // 18 lines past the burst at 10 a second.
    expect(out.at(-1)!.atMs).toBe(1800);
    expect(limiter.waitedMsBy[0]).toBeGreaterThan(0);
    expect(limiter.waitedMsBy[1]).toBe(0);
  });

  it("holds the byte limit where it binds, the lines going whole", async () => {
    const data = lines(10, 50);
    const { out, limiter } = await passLines([{ kind: "bucket", unit: "count", rate: 10, burst: 2 }, { kind: "bucket", unit: "bytes", rate: 100, burst: 100 }], data);
    expect(Buffer.from(out.map((slice) => slice.text).join(""))).toEqual(data);
    expect(out.every((slice) => slice.text.endsWith("\n") && slice.lines === 1)).toBe(true);
    for (const slice of out) {
      const sent = out.filter((other) => other.atMs <= slice.atMs).reduce((sum, other) => sum + other.text.length, 0);
      expect(sent).toBeLessThanOrEqual(100 + slice.atMs / 10 + 1e-9);
    }
    // 400 bytes past the burst at 100 a second: the last line goes once its bytes are there.
    expect(out.at(-1)!.atMs).toBe(4000);
    expect(limiter.waitedMsBy[1]).toBeGreaterThan(limiter.waitedMsBy[0]!);
  });

  it("the public ThrottleStream takes the set the same way: a LimitSetLimiter and recordsAtOnce", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "bucket", unit: "count", rate: 10, burst: 2 }, { kind: "bucket", unit: "bytes", rate: 1000, burst: 100 }], { unit: "bytes", clock });
    const stream = new ThrottleStream({ limiter, clock, cost: "record-bytes", recordsAtOnce: limiter.mostAtOnce("count") });
    const out: Array<{ atMs: number; lines: number }> = [];
    stream.on("data", (chunk: Buffer) => out.push({ atMs: clock.now(), lines: chunk.toString().split("\n").length - 1 }));
    let ended = false;
    stream.on("end", () => (ended = true));
    stream.end(lines(20, 2));
    while (!ended && clock.now() < 10_000) await clock.advance(10);
    expect(out.reduce((sum, slice) => sum + slice.lines, 0)).toBe(20);
    expect(Math.max(...out.map((slice) => slice.lines))).toBeLessThanOrEqual(2);
    expect(out.at(-1)!.atMs).toBe(1800);
  });
});
