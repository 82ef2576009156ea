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
  /** The most written in any window of `windowMs` (ending at a write), beyond burst + rate × window. */
  function worstWindowExcess(out: Array<{ atMs: number; bytes: number }>, windowMs: number, rate: number, burst: number) {
    let worst = -Infinity;
    for (const end of out) {
      const inWindow = out.filter((o) => o.atMs > end.atMs - windowMs && o.atMs <= end.atMs).reduce((sum, o) => sum + o.bytes, 0);
      worst = Math.max(worst, inWindow - burst - (rate * windowMs) / 1000);
    }
    return worst;
  }

  /** Windows from one tick to well past the burst: in none may more than burst + rate × window go out. */
  function expectWithinEnvelope(out: Array<{ atMs: number; bytes: number }>, rate: number, burst: number) {
    for (const windowMs of [0.5, 1, 3, 10, 50, 200, 1000]) {
      expect(worstWindowExcess(out, windowMs, rate, burst)).toBeLessThanOrEqual(1e-6);
    }
  }

  it("with a burst smaller than one timer tick of the rate, falls behind the rate rather than exceed burst + rate × T", async () => {
    // 100 bytes of burst is 1 ms at 100,000 B/s; timers here wake up to 3 ms late.
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 100_000, burst: 100, clock });
    const throttle = new Throttle({ limiter: bucket });
    const out = await runCoarse(throttle, clock, [{ atMs: 0, data: Buffer.alloc(50_000) }], 3);
    expectWithinEnvelope(out, 100_000, 100);
    // 100 bytes a 3 ms tick: a third of the rate.
    const idealMs = ((50_000 - 100) / 100_000) * 1000;
    expect(out.at(-1)!.atMs).toBeGreaterThan(idealMs * 2.5);
    expect(Math.max(...out.map((o) => o.bytes))).toBeLessThanOrEqual(100);
    // The burst that would keep it: a slice (10 ms) and a tick (4 ms) of the rate.
    expect(throttle.smallestSteadyBurst()).toBe(1400);
  });

  it("keeps the rate within 0.5 % with the smallest steady burst when timers wake 3 ms late", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 100_000, burst: 1400, clock });
    const throttle = new Throttle({ limiter: bucket });
    const out = await runCoarse(throttle, clock, [{ atMs: 0, data: Buffer.alloc(200_000) }], 3);
    expectWithinEnvelope(out, 100_000, 1400);
    const idealMs = ((200_000 - 1400) / 100_000) * 1000;
    expect(out.at(-1)!.atMs).toBeGreaterThanOrEqual(idealMs);
    expect(out.at(-1)!.atMs).toBeLessThanOrEqual(idealMs * 1.005 + 3);
  });

  /** 200,000 bytes at 100,000 B/s with `burst`, ticks of 1 ms but one of `holdUpMs` at 500 ms. */
  async function runHeldUp(holdUpMs: number, burst: number) {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 100_000, burst, clock });
    const throttle = new Throttle({ limiter: bucket });
    let heldUp = false;
    const out = await runCoarse(throttle, clock, [{ atMs: 0, data: Buffer.alloc(200_000) }], (nowMs) => {
      if (heldUp || nowMs < 500) return 1;
      heldUp = true;
      return holdUpMs;
    });
    const idealMs = ((200_000 - burst) / 100_000) * 1000;
    return { out, lateMs: out.at(-1)!.atMs - idealMs };
  }

  it("held up 80 ms (a busy core), makes up for it only as far as the bucket holds: all of it with a 100 ms burst", async () => {
    const { out, lateMs } = await runHeldUp(80, 10_000);
    expectWithinEnvelope(out, 100_000, 10_000);
    expect(lateMs).toBeLessThanOrEqual(3);
  });

  it("held up 300 ms with a 100 ms burst, makes up for 100 ms and loses 200, never above burst + rate × T", async () => {
    const { out, lateMs } = await runHeldUp(300, 10_000);
    expectWithinEnvelope(out, 100_000, 10_000);
    expect(lateMs).toBeGreaterThanOrEqual(196);
    expect(lateMs).toBeLessThanOrEqual(204);
  });

  it("held up 80 ms with a 1 ms burst, takes no more than the bucket holds: the 80 ms are lost", async () => {
    const { out, lateMs } = await runHeldUp(80, 100);
    expectWithinEnvelope(out, 100_000, 100);
    expect(lateMs).toBeGreaterThanOrEqual(77);
  });

  it("makes up for input that came late as far as the bucket holds it (a 20 ms burst: 15 ms of 15, 50 ms only 20)", async () => {
    // 1,000 bytes (10 ms of the rate) every 10 ms; the 51st comes late, and those due meanwhile come with it.
    async function run(lateChunkMs: number) {
      const clock = new FakeClock();
      const bucket = new TokenBucket({ rate: 100_000, burst: 2000, clock });
      const throttle = new Throttle({ limiter: bucket });
      const chunks = Array.from({ length: 100 }, (_, i) => ({ atMs: i * 10 + (i === 50 ? lateChunkMs : 0), data: Buffer.alloc(1000) }));
      const out = await runCoarse(throttle, clock, chunks, 1);
      expectWithinEnvelope(out, 100_000, 2000);
      return out.at(-1)!.atMs;
    }
    const onTimeMs = await run(0);
    // Paced at the rate, the bucket holds about one 10 ms slice when the input stops: 15 ms late
    // leaves it 5 ms short (those tokens went to the slice before), 50 ms late 30 ms (it holds 20).
    expect(await run(15)).toBeLessThanOrEqual(onTimeMs + 6);
    expect(await run(50)).toBeGreaterThanOrEqual(onTimeMs + 28);
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

describe("Throttle stats", () => {
  it("measures waitedMs on the clock it is given, not in real time", async () => {
    // Real time barely moves during the test: a real-time measure would come out near 0, not 20.
    const clock = new FakeClock(1e12);
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1000, burst: 10, clock }), clock });
    const passing = throttle.pass(Buffer.alloc(30), () => {});
    await clock.advance(20);
    await passing;
    // 10 bytes at once, then 10 every 10 ms.
    expect(throttle.stats).toMatchObject({ bytes: 30, waitedMs: 20 });
  });

  it("counts the wait under way: stats asked mid-wait (a signal, a paused key) say how long it has waited", async () => {
    const clock = new FakeClock(1e12);
    // Drained, at 1 token a second: the first byte waits a second.
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1, burst: 1, tokens: 0, clock }), clock });
    const passing = throttle.pass(Buffer.alloc(1), () => {});
    await clock.advance(600);
    expect(throttle.stats.waitedMs).toBe(600);
    await clock.advance(400);
    await passing;
    expect(throttle.stats.waitedMs).toBe(1000);
  });

  it("counts a wait cut short by its signal", async () => {
    const clock = new FakeClock(1e12);
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1, burst: 1, tokens: 0, clock }), clock });
    const controller = new AbortController();
    const passing = throttle.pass(Buffer.alloc(1), () => {}, controller.signal);
    await clock.advance(300);
    controller.abort();
    await expect(passing).rejects.toThrow();
    expect(throttle.stats.waitedMs).toBe(300);
  });

  it("without a clock of its own, measures on the bucket's clock", async () => {
    const clock = new FakeClock(1e12);
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 1000, burst: 10, clock }) });
    const passing = throttle.pass(Buffer.alloc(30), () => {});
    await clock.advance(20);
    await passing;
    expect(throttle.stats.waitedMs).toBe(20);
  });
});

describe("Throttle.settle", () => {
  async function settleTakesMs(rate: number, burst: number): Promise<number> {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate, burst, clock });
    const throttle = new Throttle({ limiter: bucket, clock, oneReadBytes: 64 * 1024 });
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
