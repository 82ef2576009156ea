import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { ExceedsBurstError, TokenBucket } from "../../src/core/token-bucket.js";

// TokenBucket.tryWait was added to the core for `run --max-wait`: Reserve with a limit, then sleep.
describe("TokenBucket.tryWait", () => {
  it("refuses at once, taking nothing, when the wait would exceed the limit", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 2, burst: 1, clock });
    expect(await bucket.tryWait(1, 0)).toBe(true);
    expect(await bucket.tryWait(1, 499)).toBe(false);
    expect(bucket.tokensAt(0)).toBe(0);
    const granted = bucket.tryWait(1, 500);
    await clock.advance(500);
    expect(await granted).toBe(true);
    expect(bucket.tokensAt(500)).toBe(0);
  });

  it("gives the tokens back when aborted, and rejects n above the burst", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 1, burst: 1, tokens: 0, clock });
    const controller = new AbortController();
    const waiting = bucket.tryWait(1, 5000, controller.signal);
    controller.abort();
    await expect(waiting).rejects.toThrow();
    expect(bucket.tokensAt(0)).toBe(0);
    await expect(bucket.tryWait(2, 5000)).rejects.toBeInstanceOf(ExceedsBurstError);
  });
});
