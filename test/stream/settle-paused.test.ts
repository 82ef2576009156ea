import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { Throttle } from "../../src/stream/throttle.js";

// Issue 14: a --lines pipe on a shared key paused at rate 0 slept for missing / 0 ms in settle,
// and so never resumed when the key's rate was raised: the wait belongs to the limiter, which resumes.
describe("Throttle.settle at a rate of 0", () => {
  it("returns at once, leaving the wait to the limiter", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 0, burst: 10, tokens: -1, clock });
    const throttle = new Throttle({ limiter: bucket, clock, cost: "records" });
    let settled = false;
    void throttle.settle().then(() => (settled = true));
    await clock.advance(0);
    expect(settled).toBe(true);
    expect(clock.pendingSleeps).toBe(0);
  });
});
