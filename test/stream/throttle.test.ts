import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { Throttle } from "../../src/stream/throttle.js";

/**
 * Drives a fake clock whose sleepers only wake on a coarse tick, like real timers
 * under load: a wait of 0.1 ms may take up to `tickMs`.
 */
async function runCoarse(throttle: Throttle, clock: FakeClock, chunks: Array<{ atMs: number; data: Buffer }>, tickMs: number) {
  const out: Array<{ atMs: number; bytes: number }> = [];
  let done = false;
  const emit = (segment: Buffer) => void out.push({ atMs: clock.now(), bytes: segment.length });
  const feeding = (async () => {
    for (const { atMs, data } of chunks) {
      while (clock.now() < atMs) await new Promise<void>((resolve) => setImmediate(resolve));
      await throttle.pass(data, emit);
    }
    done = true;
  })();
  while (!done) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await clock.tick(tickMs);
  }
  await feeding;
  return out;
}

describe("Throttle pacing", () => {
  it("keeps the rate exact with a burst smaller than the timer's lateness", async () => {
    // 100 bytes of burst is 1 ms at 100,000 B/s; timers here wake up to 3 ms late.
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 100_000, burst: 100, clock });
    const throttle = new Throttle({ limiter: bucket });
    const out = await runCoarse(throttle, clock, [{ atMs: 0, data: Buffer.alloc(200_000) }], 3);
    const lastMs = out.at(-1)!.atMs;
    const idealMs = ((200_000 - 100) / 100_000) * 1000;
    expect(lastMs).toBeGreaterThanOrEqual(idealMs);
    expect(lastMs).toBeLessThanOrEqual(idealMs * 1.005 + 3);
    // Never ahead of burst + rate × time since the start.
    let total = 0;
    for (const { atMs, bytes } of out) {
      total += bytes;
      expect(total).toBeLessThanOrEqual(100 + (100_000 * atMs) / 1000 + 1e-6);
    }
    expect(Math.max(...out.map((o) => o.bytes))).toBeLessThanOrEqual(100);
  });

  it("after an input stall releases no more than the burst at once (no credit for idle time)", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 10_000, burst: 1000, clock });
    const throttle = new Throttle({ limiter: bucket });
    const out = await runCoarse(
      throttle,
      clock,
      [
        { atMs: 0, data: Buffer.alloc(5000) },
        { atMs: 3000, data: Buffer.alloc(20_000) },
      ],
      1,
    );
    const afterStall = out.filter((o) => o.atMs >= 3000);
    const first = afterStall[0]!.atMs;
    const within = (ms: number) => afterStall.filter((o) => o.atMs <= first + ms).reduce((sum, o) => sum + o.bytes, 0);
    expect(within(0)).toBeLessThanOrEqual(1000);
    expect(within(200)).toBeLessThanOrEqual(1000 + 10_000 * 0.2 + 100);
  });

  it("counts lines in byte mode when asked, a last line without newline included", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: Infinity, burst: 1, clock }), countRecords: true });
    await throttle.pass(Buffer.from("a\nb"), () => {});
    await throttle.pass(Buffer.from("c\nd\n"), () => {});
    expect(throttle.stats).toMatchObject({ bytes: 7, records: 3 });
  });
});

describe("Throttle.settle", () => {
  async function settleTakesMs(rate: number, burst: number): Promise<number> {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate, burst, clock });
    const throttle = new Throttle({ limiter: bucket, clock });
    bucket.allowAt(0, burst); // empty the bucket
    let settled = false;
    void throttle.settle().then(() => (settled = true));
    await clock.advance(0);
    while (!settled) await clock.advance(1);
    return clock.now();
  }

  it("waits for half a slice of tokens where a slice is more than one pipe read (100 MiB/s: 5 ms)", async () => {
    expect(await settleTakesMs(100 * 1024 * 1024, 10 * 1024 * 1024)).toBe(5);
  });

  it("does not wait where one pipe read already holds a slice (1 MiB/s), which would only add a wake-up", async () => {
    expect(await settleTakesMs(1024 * 1024, 100 * 1024)).toBe(0);
  });
});
