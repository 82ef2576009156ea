import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { type Turn, TurnQueue, type TurnWait } from "../../src/core/turn-queue.js";

function queue(options: { rate: number; burst: number; maxWaitMs: number }) {
  const clock = new FakeClock(0);
  const bucket = new TokenBucket({ rate: options.rate, burst: options.burst, clock });
  return { clock, bucket, turns: new TurnQueue({ bucket, maxWaitMs: options.maxWaitMs, clock }) };
}

function waited(turn: Turn): Promise<TurnWait> {
  if (!(turn instanceof Promise)) throw new Error(`expected a wait, got ${turn}`);
  return turn;
}

describe("TurnQueue", () => {
  it("gives the burst at once, then turns on the bucket's schedule, and refuses a take whose wait would pass the limit, taking nothing", async () => {
    const { clock, bucket, turns } = queue({ rate: 10, burst: 1, maxWaitMs: 250 });
    const taken = [0, 1, 2, 3].map(() => turns.take());
    expect(taken[0]).toBe("admitted");
    expect(taken[3]).toBe("refused");
    expect(turns.waiting).toBe(2);
    // Two waiting, level -2: the refusal took nothing.
    expect(bucket.tokensAt(0)).toBeCloseTo(-2, 9);
    await clock.advance(100);
    expect(await waited(taken[1]!)).toEqual({ decision: "queued", waitMs: 100 });
    expect(turns.waiting).toBe(1);
    await clock.advance(100);
    expect(await waited(taken[2]!)).toEqual({ decision: "queued", waitMs: 200 });
    expect(turns.waiting).toBe(0);
  });

  it("serves the whole line with one sleep, and none once the line is empty", async () => {
    const { clock, turns } = queue({ rate: 100, burst: 1, maxWaitMs: 60_000 });
    turns.take();
    const hangUps = Array.from({ length: 500 }, () => new AbortController());
    const waiting = hangUps.map((hangUp) => waited(turns.take(hangUp.signal)));
    await clock.advance(0);
    expect(clock.pendingSleeps).toBe(1);
    for (const hangUp of hangUps) hangUp.abort();
    expect(clock.pendingSleeps).toBe(0);
    expect((await Promise.all(waiting)).every((wait) => wait.decision === "cancelled")).toBe(true);
  });

  it("a take given up in the middle of the line gives its turn back: those behind it move up a turn each, first come first served, and the latest turn returns to the bucket", async () => {
    const { clock, turns } = queue({ rate: 10, burst: 1, maxWaitMs: 1000 });
    turns.take();
    const hangUp = new AbortController();
    const second = waited(turns.take());
    const third = waited(turns.take(hangUp.signal));
    const fourth = waited(turns.take());
    const fifth = waited(turns.take());
    await clock.advance(50);
    hangUp.abort();
    expect(await third).toEqual({ decision: "cancelled", waitMs: 50 });
    await clock.advance(350);
    expect(await second).toEqual({ decision: "queued", waitMs: 100 });
    expect(await fourth).toEqual({ decision: "queued", waitMs: 200 });
    expect(await fifth).toEqual({ decision: "queued", waitMs: 300 });
    // The turn at 400 ms is no one's: the bucket has it.
    expect(turns.take()).toBe("admitted");
  });

  it("gives back every token when the whole line leaves: the bucket is as if no one had waited", async () => {
    const { clock, bucket, turns } = queue({ rate: 10, burst: 5, maxWaitMs: 300_000 });
    for (let i = 0; i < 5; i++) expect(turns.take()).toBe("admitted");
    const hangUps = Array.from({ length: 1000 }, () => new AbortController());
    const waiting = hangUps.map((hangUp) => waited(turns.take(hangUp.signal)));
    await clock.advance(50);
    // Half leave from the front, half from the back.
    for (let i = 0; i < 500; i++) {
      hangUps[i]!.abort();
      hangUps[999 - i]!.abort();
    }
    expect((await Promise.all(waiting)).every((wait) => wait.decision === "cancelled")).toBe(true);
    expect(bucket.tokensAt(50)).toBeCloseTo(0.5, 6);
    await clock.advance(50);
    expect(turns.take()).toBe("admitted");
    expect(bucket.tokensAt(100)).toBeCloseTo(0, 6);
  });

  it("a take whose signal is already aborted, and would wait, is cancelled at once with nothing taken", async () => {
    const { bucket, turns } = queue({ rate: 1, burst: 1, maxWaitMs: 5000 });
    turns.take();
    const aborted = AbortSignal.abort();
    expect(await waited(turns.take(aborted))).toEqual({ decision: "cancelled", waitMs: 0 });
    expect(turns.waiting).toBe(0);
    expect(bucket.tokensAt(0)).toBeCloseTo(0, 9);
  });

  it("a line that empties and fills again is served again", async () => {
    const { clock, turns } = queue({ rate: 10, burst: 1, maxWaitMs: 1000 });
    turns.take();
    const hangUp = new AbortController();
    const leaving = waited(turns.take(hangUp.signal));
    hangUp.abort();
    // Comes before the emptied line's timer has heard it was stopped.
    const next = waited(turns.take());
    expect((await leaving).decision).toBe("cancelled");
    await clock.advance(100);
    expect(await next).toEqual({ decision: "queued", waitMs: 100 });
  });
});
