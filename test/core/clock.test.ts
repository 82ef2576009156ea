import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";

/** Many promise hops, as a store round trip or a stream write takes between two sleeps. */
async function hops(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await Promise.resolve();
}

describe("FakeClock.advance", () => {
  it("wakes sleepers in order of wake-up time, each seeing its own time", async () => {
    const clock = new FakeClock(0);
    const woke: string[] = [];
    for (const ms of [30, 10, 20]) void clock.sleep(ms).then(() => woke.push(`${ms}@${clock.now()}`));
    await clock.advance(25);
    expect(woke).toEqual(["10@10", "20@20"]);
    await clock.advance(5);
    expect(woke).toEqual(["10@10", "20@20", "30@30"]);
    expect(clock.pendingSleeps).toBe(0);
  });

  it("lets the work each sleeper resumes settle, however many hops it takes, before the next wakes", async () => {
    const clock = new FakeClock(0);
    const log: number[] = [];
    void (async () => {
      for (;;) {
        await clock.sleep(10);
        await hops(500);
        await new Promise<void>((resolve) => process.nextTick(resolve));
        log.push(clock.now());
      }
    })();
    await clock.advance(35);
    expect(log).toEqual([10, 20, 30]);
    expect(clock.now()).toBe(35);
  });

  it("lets work started just before it register its sleep first", async () => {
    const clock = new FakeClock(0);
    let wokeAt: number | undefined;
    void (async () => {
      await hops(100);
      await clock.sleep(10);
      wokeAt = clock.now();
    })();
    await clock.advance(10);
    expect(wokeAt).toBe(10);
  });

  it("stops with an error when work keeps sleeping without the time moving", async () => {
    // At this time a 1e-9 ms sleep is below the resolution of a double: the clock cannot move.
    const clock = new FakeClock(1_700_000_000_000);
    let stop = false;
    void (async () => {
      while (!stop) await clock.sleep(1e-9);
    })();
    await expect(clock.advance(1)).rejects.toThrow(/more than 10000 sleeps woke at 1700000000000 ms without time moving/);
    stop = true;
  });
});
