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

  it("a line past a bucket's burst but within a byte window: the window counts it whole before it goes out, the bucket runs into debt", async () => {
    // 900 bytes go in the first 70 ms (200 at 0, 100 every 10 ms); a line of 500, past the bucket's
    // burst, waits until 400 of them left the window: those of 0, 10 and 20 ms, at 1020 ms.
    const data = Buffer.concat([lines(9, 100), lines(1, 500), lines(1, 10)]);
    const { out } = await passLines([{ kind: "bucket", unit: "bytes", rate: 10_000, burst: 200 }, { kind: "window", unit: "bytes", n: 1000, windowMs: 1000 }], data);
    expect(Buffer.concat(out.map((slice) => Buffer.from(slice.text)))).toEqual(data);
    const long = out.find((slice) => slice.text.length === 500)!;
    expect(long.atMs).toBe(1020);
    for (const slice of out) {
      const inWindow = out.filter((other) => other.atMs > slice.atMs - 1000 && other.atMs <= slice.atMs).reduce((sum, other) => sum + other.text.length, 0);
      expect(inWindow).toBeLessThanOrEqual(1000);
    }
  });

  it("a line past its bucket's burst with the window far wider: the bucket waits to be full, the rest is debt the next line waits for", async () => {
    const data = Buffer.concat([lines(1, 3), lines(1, 12), lines(1, 3)]);
    const { out } = await passLines([{ kind: "bucket", unit: "bytes", rate: 10, burst: 5 }, { kind: "window", unit: "bytes", n: 100, windowMs: 10_000 }], data);
    // 3 at 0 leaves 2: full (5) at 300 ms, the 12 go and leave -7; the last 3 wait for 10 tokens.
    expect(out.map((slice) => [slice.atMs, slice.text.length])).toEqual([[0, 3], [300, 12], [1300, 3]]);
  });

  it("a line longer than a byte window's n can never go out whole: refused with ExceedsBurstError, nothing of it sent", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "window", unit: "bytes", n: 5, windowMs: 1000 }], { unit: "bytes", clock });
    const throttle = new Throttle({ limiter, cost: "record-bytes", clock });
    const out: string[] = [];
    await expect(throttle.pass(Buffer.from("ab\nhello world\nab\n"), (segment) => void out.push(segment.toString()))).rejects.toMatchObject({ name: "ExceedsBurstError", n: 12, burst: 5 });
    expect(out).toEqual(["ab\n"]);
  });
});
