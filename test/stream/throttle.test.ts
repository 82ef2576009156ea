import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { Throttle } from "../../src/stream/throttle.js";

/**
 * Drives a fake clock whose sleepers only wake on a coarse tick, like real timers
 * under load: a wait of 0.1 ms may take up to `tickMs`. `tickMs` may depend on
 * the time, to hold the pacer up once (a busy core).
 */
async function runCoarse(
  throttle: Throttle,
  clock: FakeClock,
  chunks: Array<{ atMs: number; data: Buffer }>,
  tickMs: number | ((nowMs: number) => number),
) {
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
    await clock.tick(typeof tickMs === "number" ? tickMs : tickMs(clock.now()));
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

  /** 200,000 bytes at 100,000 B/s with a burst of 100 (1 ms), ticks of 1 ms but one of `holdUpMs` at 500 ms. */
  async function runHeldUp(holdUpMs: number) {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 100_000, burst: 100, clock });
    const throttle = new Throttle({ limiter: bucket });
    let heldUp = false;
    const out = await runCoarse(throttle, clock, [{ atMs: 0, data: Buffer.alloc(200_000) }], (nowMs) => {
      if (heldUp || nowMs < 500) return 1;
      heldUp = true;
      return holdUpMs;
    });
    const idealMs = ((200_000 - 100) / 100_000) * 1000;
    return { out, lateMs: out.at(-1)!.atMs - idealMs };
  }

  /** The most written in any window of `windowMs` (ending at a write), beyond burst + rate × window. */
  function worstWindowExcess(out: Array<{ atMs: number; bytes: number }>, windowMs: number, rate: number, burst: number) {
    let worst = -Infinity;
    for (const end of out) {
      const inWindow = out.filter((o) => o.atMs > end.atMs - windowMs && o.atMs <= end.atMs).reduce((sum, o) => sum + o.bytes, 0);
      worst = Math.max(worst, inWindow - burst - (rate * windowMs) / 1000);
    }
    return worst;
  }

  it("makes up for being held up 80 ms (a busy core) while its input was ready, staying within burst + rate × time", async () => {
    const { out, lateMs } = await runHeldUp(80);
    expect(lateMs).toBeLessThanOrEqual(3);
    let total = 0;
    for (const { atMs, bytes } of out) {
      total += bytes;
      expect(total).toBeLessThanOrEqual(100 + (100_000 * atMs) / 1000 + 1e-6);
    }
    expect(Math.max(...out.map((o) => o.bytes))).toBeLessThanOrEqual(100);
  });

  it("makes up for at most 100 ms of a longer hold-up, so no window holds more than 100 ms of the rate above the burst", async () => {
    const { out, lateMs } = await runHeldUp(300);
    // 300 ms held up, 100 ms made up: 200 ms lost.
    expect(lateMs).toBeGreaterThanOrEqual(196);
    expect(lateMs).toBeLessThanOrEqual(203);
    for (const windowMs of [1, 10, 50, 200]) {
      expect(worstWindowExcess(out, windowMs, 100_000, 100)).toBeLessThanOrEqual(100_000 * 0.1 + 1e-6);
    }
  });

  it("makes up for input that came 15 ms late, but gives no credit for a pause of 50 ms", async () => {
    // 1,000 bytes (10 ms of the rate) every 10 ms; the 51st comes late, and those due meanwhile come with it.
    async function run(lateChunkMs: number) {
      const clock = new FakeClock();
      const bucket = new TokenBucket({ rate: 100_000, burst: 100, clock });
      const throttle = new Throttle({ limiter: bucket });
      const chunks = Array.from({ length: 100 }, (_, i) => ({ atMs: i * 10 + (i === 50 ? lateChunkMs : 0), data: Buffer.alloc(1000) }));
      const out = await runCoarse(throttle, clock, chunks, 1);
      return out.at(-1)!.atMs;
    }
    const onTimeMs = await run(0);
    expect(await run(15)).toBeLessThanOrEqual(onTimeMs + 2);
    expect(await run(50)).toBeGreaterThanOrEqual(onTimeMs + 48);
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
