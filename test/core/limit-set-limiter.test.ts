// LimitSetLimiter: a private LimitSet behind the Limiter interface, on a fake clock.
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSetLimiter } from "../../src/core/limit-set-limiter.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { ExceedsBurstError } from "../../src/core/token-bucket.js";

const LINES_10_A_SECOND: LimitSpec = { kind: "bucket", unit: "count", rate: 10, burst: 1 };
const BYTES_100_A_SECOND: LimitSpec = { kind: "bucket", unit: "bytes", rate: 100, burst: 100 };

/** When each promise settled on the fake clock, "rejected" for a rejection. */
function settleTimes(clock: FakeClock, waits: Array<Promise<unknown>>): Array<number | "rejected" | undefined> {
  const times: Array<number | "rejected" | undefined> = waits.map(() => undefined);
  waits.forEach((wait, index) =>
    wait.then(
      () => (times[index] = clock.now()),
      () => (times[index] = "rejected"),
    ),
  );
  return times;
}

describe("LimitSetLimiter", () => {
  it("describes its main unit for pacing: the lowest rate (a window's n/W counts), the least any limit takes at once, the lowest level", () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter(
      [{ kind: "bucket", unit: "bytes", rate: 4096, burst: 1024 }, { kind: "window", unit: "bytes", n: 2048, windowMs: 1000 }, LINES_10_A_SECOND],
      { unit: "bytes", clock },
    );
    expect([limiter.rate, limiter.burst, limiter.tokens()]).toEqual([2048, 1024, 1024]);
    expect([limiter.mostAtOnce("bytes"), limiter.mostAtOnce("count"), limiter.mostAtOnce("tokens")]).toEqual([1024, 1, Infinity]);
  });

  it("charges every limit its own unit's cost, at the earliest instant all admit", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([LINES_10_A_SECOND, BYTES_100_A_SECOND], { unit: "bytes", clock });
    const times = settleTimes(clock, [
      limiter.wait(50, undefined, { bytes: 50, count: 1 }),
      // The line limit sets this one's wait: 100 ms for its next line.
      limiter.wait(50, undefined, { bytes: 50, count: 1 }),
      // The byte limit this one's: at 100 ms 10 bytes are left, 90 more take 900 ms.
      limiter.wait(100, undefined, { bytes: 100, count: 1 }),
    ]);
    await clock.advance(0);
    await clock.advance(2000);
    expect(times).toEqual([0, 100, 1000]);
    expect([...limiter.waitedMsBy]).toEqual([100, 1000]);
  });

  it("serves first come, first served: a small item does not overtake a large one waiting", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([BYTES_100_A_SECOND, { kind: "window", unit: "bytes", n: 150, windowMs: 1000 }], { unit: "bytes", clock });
    const times = settleTimes(clock, [limiter.wait(100), limiter.wait(100), limiter.wait(1)]);
    await clock.advance(3000);
    // The second needs the window to have let the first out (at 1000 ms) and the bucket 1 s of refill.
    expect(times).toEqual([0, 1000, 1010]);
  });

  it("gives an aborted wait back to every limit", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "bucket", unit: "count", rate: 1, burst: 1 }, { kind: "window", unit: "count", n: 2, windowMs: 10_000 }], { unit: "count", clock });
    await limiter.wait(1);
    const abort = new AbortController();
    const times = settleTimes(clock, [limiter.wait(1, abort.signal)]);
    await clock.advance(500);
    expect(limiter.set.level(1)).toBe(0);
    abort.abort();
    await clock.advance(0);
    expect(times).toEqual(["rejected"]);
    // Its line is back in the bucket's future and out of the window: the next one goes at 1 s, not 2 s.
    expect(limiter.set.level(1)).toBe(1);
    const next = settleTimes(clock, [limiter.wait(1)]);
    await clock.advance(1000);
    expect(next).toEqual([1000]);
  });

  it("waits in turn for a concurrency slot, holding it until release; an abort in the queue passes the turn on", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "concurrency", n: 1 }, { kind: "bucket", unit: "count", rate: Infinity, burst: 0 }], { unit: "count", clock });
    const first = await limiter.acquire({ count: 1 });
    expect(first?.ok).toBe(true);
    const abort = new AbortController();
    const second = limiter.acquire({ count: 1 }, Infinity, abort.signal);
    const third = limiter.acquire({ count: 1 });
    const fourth = limiter.acquire({ count: 1 });
    const times = settleTimes(clock, [second, third, fourth]);
    await clock.advance(10);
    expect(times).toEqual([undefined, undefined, undefined]);
    abort.abort();
    await clock.advance(10);
    expect(times).toEqual(["rejected", undefined, undefined]);
    // A release hands the slot to the next in line at once.
    limiter.release(first);
    await clock.advance(10);
    expect(times).toEqual(["rejected", 20, undefined]);
    limiter.release(await third);
    await clock.advance(10);
    expect(times).toEqual(["rejected", 20, 30]);
    expect(limiter.set.level(0)).toBe(0);
  });

  it("keeps the slot queue first come, first served when a waiter in the middle gives up, and leaves no turn behind it", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "concurrency", n: 1 }], { unit: "count", clock });
    const holder = await limiter.acquire({ count: 1 });
    const abort = new AbortController();
    const [first, quitter, last] = [limiter.acquire({ count: 1 }), limiter.acquire({ count: 1 }, Infinity, abort.signal), limiter.acquire({ count: 1 })];
    const times = settleTimes(clock, [first, quitter, last]);
    await clock.advance(10);
    abort.abort();
    await clock.advance(10);
    expect(times).toEqual([undefined, "rejected", undefined]);
    limiter.release(holder);
    await clock.advance(10);
    expect(times).toEqual([20, "rejected", undefined]);
    limiter.release(await first);
    await clock.advance(10);
    expect(times).toEqual([20, "rejected", 30]);
    limiter.release(await last);
    // The line is empty: a wait finds the free slot at once, and gives it back.
    const next = settleTimes(clock, [limiter.wait(1)]);
    await clock.advance(0);
    expect(next).toEqual([40]);
    // Every slot is free again: the quitter took none.
    expect(limiter.set.level(0)).toBe(1);
  });

  it("refuses what no limit could ever take, and a wait too long, taking nothing", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([BYTES_100_A_SECOND, { kind: "window", unit: "bytes", n: 80, windowMs: 1000 }], { unit: "bytes", clock });
    await expect(limiter.wait(90)).rejects.toBeInstanceOf(ExceedsBurstError);
    await expect(limiter.tryWait(80, 0)).resolves.toBe(true);
    await expect(limiter.tryWait(10, 999)).resolves.toBe(false);
    expect([limiter.set.level(0), limiter.set.level(1)]).toEqual([20, 0]);
    const times = settleTimes(clock, [limiter.tryWait(10, 1000)]);
    await clock.advance(1000);
    expect(times).toEqual([1000]);
  });
});

describe("LimitSetLimiter's waits by limit, for --stats", () => {
  it("a wait under way counts as far as it went, and one cut short counts no more than it waited", async () => {
    const clock = new FakeClock();
    const limiter = new LimitSetLimiter([{ kind: "window", unit: "bytes", n: 10, windowMs: 1000 }], { unit: "bytes", clock });
    await limiter.wait(10);
    const controller = new AbortController();
    const waiting = limiter.wait(10, controller.signal);
    await clock.advance(300);
    expect(limiter.waitedMs(0)).toBe(300);
    controller.abort(new Error("interrupted"));
    await expect(waiting).rejects.toThrow("interrupted");
    await clock.advance(500);
    expect([limiter.waitedMs(0), limiter.waitedMsBy[0]]).toEqual([300, 300]);
    // Given back: the next waits for the first 10 alone, until 1000 ms.
    const next = limiter.wait(10);
    await clock.advance(200);
    await next;
    expect(limiter.waitedMs(0)).toBe(500);
  });
});
