import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { Limiter } from "../../src/core/limiter.js";
import { ExceedsBurstError, TokenBucket } from "../../src/core/token-bucket.js";
import type { RateKind } from "../../src/core/units.js";
import { type BucketConfig, StoreError } from "../../src/store/bucket-store.js";
import { FailoverLimiter, type StoreBackedLimiter } from "../../src/store/failover-limiter.js";

const lost = () => new StoreError("lost", "store memory: lost", { storeUrl: "memory:" });

/** A store-backed limiter that grants every wait after `waitMs`, until `fail()`: then it rejects, as a SharedLimiter does. */
class FakeStoreLimiter implements StoreBackedLimiter {
  rate = 100;
  burst = 10;
  kind: RateKind = "count";
  waits = 0;
  #failure: StoreError | undefined;

  constructor(
    readonly clock: FakeClock,
    readonly waitMs = 0,
  ) {}

  fail(error = lost()): void {
    this.#failure = error;
  }

  tokens(): number {
    return 7;
  }

  async wait(n: number, signal?: AbortSignal): Promise<void> {
    this.waits++;
    if (n > this.burst) throw new ExceedsBurstError(n, this.burst);
    if (this.#failure) throw this.#failure;
    await this.clock.sleep(this.waitMs, signal);
    if (this.#failure) throw this.#failure;
  }

  async tryWait(n: number, maxWaitMs: number, signal?: AbortSignal): Promise<boolean> {
    if (this.waitMs > maxWaitMs && !this.#failure) return false;
    await this.wait(n, signal);
    return true;
  }
}

function setup(waitMs = 0) {
  const clock = new FakeClock(0);
  const primary = new FakeStoreLimiter(clock, waitMs);
  const made: string[] = [];
  const limiter = new FailoverLimiter(primary, (error: StoreError, settings: BucketConfig): Limiter => {
    made.push(`${error.failure} ${settings.rate}/${settings.burst}/${settings.kind}`);
    return new TokenBucket({ rate: settings.rate, burst: settings.burst, tokens: 0, clock });
  });
  return { clock, primary, made, limiter };
}

describe("FailoverLimiter", () => {
  it("passes waits and settings through while the store stands", async () => {
    const { clock, primary, made, limiter } = setup(30);
    const waiting = limiter.wait(1);
    await clock.advance(30);
    await waiting;
    expect(await limiter.tryWait(1, 10)).toBe(false);
    expect({ rate: limiter.rate, burst: limiter.burst, kind: limiter.kind, tokens: limiter.tokens() }).toEqual({ rate: 100, burst: 10, kind: "count", tokens: 7 });
    expect(primary.waits).toBe(1);
    expect(made).toEqual([]);
    expect(limiter.failedOver).toBe(false);
  });

  it("carries a wait under way over to the fallback, made once with the key's settings as last read", async () => {
    const { clock, primary, made, limiter } = setup(50);
    const admitted: number[] = [];
    const first = limiter.wait(2).then(() => admitted.push(clock.now()));
    await clock.advance(10);
    primary.rate = 200;
    primary.fail();
    await clock.advance(40);
    // The fallback starts empty: 2 tokens at 200/s from the failure (t=50) is t=60.
    await clock.advance(20);
    await first;
    // At t=70 it holds the 2 tokens refilled since t=60: 4 tokens are 10 ms away.
    const second = limiter.wait(4).then(() => admitted.push(clock.now()));
    await clock.advance(10);
    await second;
    expect(admitted).toEqual([60, 80]);
    expect(made).toEqual(["lost 200/10/count"]);
    expect(primary.waits).toBe(1);
    expect(limiter.failedOver).toBe(true);
    expect({ rate: limiter.rate, burst: limiter.burst }).toEqual({ rate: 200, burst: 10 });
  });

  it("makes the fallback once when several waits see the failure together", async () => {
    const { clock, primary, made, limiter } = setup(50);
    const waits = [limiter.wait(1), limiter.wait(1), limiter.tryWait(1, 1000)];
    primary.fail();
    await clock.advance(100);
    await expect(Promise.all(waits)).resolves.toEqual([undefined, undefined, true]);
    expect(made).toHaveLength(1);
  });

  it("refuses at once on the fallback when its wait would pass tryWait's limit", async () => {
    const { clock, primary, limiter } = setup(0);
    primary.fail();
    // Empty fallback at 100/s: 5 tokens are 50 ms away.
    expect(await limiter.tryWait(5, 20)).toBe(false);
    const granted = limiter.tryWait(5, 60);
    await clock.advance(50);
    expect(await granted).toBe(true);
  });

  it("stops every wait with what the fallback factory throws, and asks it only once", async () => {
    const clock = new FakeClock(0);
    const primary = new FakeStoreLimiter(clock);
    let asked = 0;
    const limiter = new FailoverLimiter(primary, (error) => {
      asked++;
      throw new Error(`stopped: ${error.message}`);
    });
    primary.fail();
    await expect(limiter.wait(1)).rejects.toThrow("stopped: store memory: lost");
    await expect(limiter.wait(1)).rejects.toThrow("stopped: store memory: lost");
    await expect(limiter.tryWait(1, 10)).rejects.toThrow("stopped: store memory: lost");
    expect(asked).toBe(1);
    expect(limiter.failedOver).toBe(false);
  });

  it("does not fail over on what is not a store failure: an abort, a request over the burst, a closed limiter", async () => {
    const { clock, primary, made, limiter } = setup(50);
    const controller = new AbortController();
    const aborted = limiter.wait(1, controller.signal);
    controller.abort(new Error("interrupted"));
    await expect(aborted).rejects.toThrow("interrupted");
    await expect(limiter.wait(11)).rejects.toThrow(ExceedsBurstError);
    primary.fail(new StoreError("closed", `key "k": the limiter was closed while waiting`, { storeUrl: "memory:", key: "k" }));
    await expect(limiter.wait(1)).rejects.toThrow("the limiter was closed while waiting");
    await clock.advance(100);
    expect(made).toEqual([]);
  });
});
