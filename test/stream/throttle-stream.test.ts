import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { ThrottleStream, type ThrottleStreamOptions } from "../../src/stream/throttle-stream.js";

interface Delivery {
  atMs: number;
  bytes: number;
  chunk: Buffer;
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Writes `input` into a ThrottleStream on a fake clock, moving time in small
 * steps, and records when each piece came out. No real time passes.
 */
async function throttle(input: Buffer[], options: Omit<ThrottleStreamOptions, "clock">, stepMs = 1, limitMs = 600_000) {
  const clock = new FakeClock();
  const bucket = new TokenBucket({ rate: options.rate!, burst: options.burst!, clock });
  const stream = new ThrottleStream({ ...options, rate: undefined, burst: undefined, limiter: bucket });
  const deliveries: Delivery[] = [];
  let ended = false;
  stream.on("data", (chunk: Buffer) => deliveries.push({ atMs: clock.now(), bytes: chunk.length, chunk }));
  stream.on("end", () => (ended = true));
  for (const piece of input) stream.write(piece);
  stream.end();
  while (!ended && clock.now() < limitMs) {
    await turn();
    await clock.advance(stepMs);
  }
  await turn();
  return { deliveries, output: Buffer.concat(deliveries.map((d) => d.chunk)), stream, clock, ended };
}

/** The largest amount out in any window beyond burst + rate × window. */
function envelopeExcess(deliveries: Delivery[], rate: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < deliveries.length; i++) {
    let bytes = 0;
    for (let j = i; j < deliveries.length; j++) {
      bytes += deliveries[j]!.bytes;
      const windowMs = deliveries[j]!.atMs - deliveries[i]!.atMs;
      worst = Math.max(worst, bytes - (burst + (rate * windowMs) / 1000));
    }
  }
  return worst;
}

function lines(count: number, width = 9): Buffer {
  return Buffer.from(Array.from({ length: count }, (_, i) => `${String(i).padStart(width, "0")}\n`).join(""));
}

describe("ThrottleStream in byte mode", () => {
  it("passes every byte unchanged and keeps the envelope burst + rate × T", async () => {
    const input = Buffer.from(Array.from({ length: 100_000 }, (_, i) => i % 251));
    const { output, deliveries, ended } = await throttle([input.subarray(0, 64_000), input.subarray(64_000)], { rate: 10_000, burst: 1000 });
    expect(ended).toBe(true);
    expect(output.equals(input)).toBe(true);
    expect(Math.max(...deliveries.map((d) => d.bytes))).toBeLessThanOrEqual(1000);
    expect(envelopeExcess(deliveries, 10_000, 1000)).toBeLessThanOrEqual(0);
    // The last byte goes out when (100,000 - 1,000) / 10,000 = 9.9 s have passed, within a step.
    expect(deliveries.at(-1)!.atMs).toBeGreaterThanOrEqual(9900);
    expect(deliveries.at(-1)!.atMs).toBeLessThanOrEqual(9902);
  });

  it("slices a chunk larger than the burst, never passing the limit (shapeio's big chunk)", async () => {
    const { deliveries } = await throttle([Buffer.alloc(50_000)], { rate: 1000, burst: 100 }, 5);
    expect(Math.max(...deliveries.map((d) => d.bytes))).toBeLessThanOrEqual(100);
    expect(envelopeExcess(deliveries, 1000, 100)).toBeLessThanOrEqual(0);
  });

  it("writes in small slices for smooth output: no gap over 25 ms at 1 MiB/s", async () => {
    const rate = 1024 * 1024;
    const { deliveries } = await throttle([Buffer.alloc(2 * rate)], { rate, burst: rate / 10 });
    const gaps = deliveries.slice(1).map((d, i) => d.atMs - deliveries[i]!.atMs);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(25);
  });

  it("takes no tokens while the reader is not reading (backpressure)", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 1000, burst: 1000, clock });
    const stream = new ThrottleStream({ limiter: bucket, highWaterMark: 100 });
    stream.write(Buffer.alloc(5000));
    await turn();
    await clock.advance(10_000);
    await turn();
    // Nobody reads: after the first slices fill the readable buffer, the bucket is left alone.
    expect(stream.readableLength).toBeLessThanOrEqual(1000);
    expect(bucket.tokensAt(clock.now())).toBe(1000);
    stream.destroy();
  });

  it("destroying the stream cancels a pending wait", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 10, burst: 10, clock });
    const stream = new ThrottleStream({ limiter: bucket });
    stream.resume();
    stream.write(Buffer.alloc(30));
    await turn();
    expect(clock.pendingSleeps).toBe(1);
    stream.destroy();
    await turn();
    expect(clock.pendingSleeps).toBe(0);
  });
});

describe("ThrottleStream in record modes", () => {
  it("records: one token per line, lines whole, rate held", async () => {
    const input = lines(50);
    const { output, deliveries, stream } = await throttle([input.subarray(0, 123), input.subarray(123)], { rate: 10, burst: 1, cost: "records" });
    expect(output.equals(input)).toBe(true);
    expect(stream.stats.records).toBe(50);
    // 49 lines after the first at 10 a second: the last leaves at 4.9 s.
    expect(deliveries.at(-1)!.atMs).toBeGreaterThanOrEqual(4900);
    expect(deliveries.at(-1)!.atMs).toBeLessThanOrEqual(4902);
    // Each delivery but the split one starts a line and ends one.
    const whole = deliveries.filter((d) => d.chunk.at(-1) === 10).length;
    expect(whole).toBeGreaterThanOrEqual(49);
  });

  it("records: NUL-terminated records with --null", async () => {
    const input = Buffer.from("a\0bb\0ccc\0");
    const { output, stream, deliveries } = await throttle([input], { rate: 1, burst: 1, cost: "records", delimiter: 0 });
    expect(output.equals(input)).toBe(true);
    expect(stream.stats.records).toBe(3);
    expect(deliveries.map((d) => d.chunk.toString())).toEqual(["a\0", "bb\0", "ccc\0"]);
  });

  it("a line without its final newline is still one record", async () => {
    const { output, stream } = await throttle([Buffer.from("one\ntwo")], { rate: 100, burst: 1, cost: "records" });
    expect(output.toString()).toBe("one\ntwo");
    expect(stream.stats.records).toBe(2);
  });

  it("record-bytes: a line costlier than the burst waits for a full bucket, then runs the bucket into debt", async () => {
    const long = Buffer.alloc(3000, 120);
    long[2999] = 10;
    const input = Buffer.concat([Buffer.from("short\n"), long, Buffer.from("after\n")]);
    const { output, deliveries } = await throttle([input], { rate: 1000, burst: 1000, cost: "record-bytes" });
    expect(output.equals(input)).toBe(true);
    const longDelivery = deliveries.find((d) => d.bytes === 3000)!;
    // The bucket starts full with 1000; "short\n" takes 6, so the long line waits 6 ms to refill.
    expect(longDelivery.atMs).toBeGreaterThanOrEqual(6);
    expect(longDelivery.atMs).toBeLessThanOrEqual(8);
    // Then 2000 tokens of debt: "after\n" leaves no sooner than 2 s plus its own 6 tokens later.
    const after = deliveries.at(-1)!;
    expect(after.chunk.toString()).toBe("after\n");
    expect(after.atMs - longDelivery.atMs).toBeGreaterThanOrEqual(2006);
  });
});
