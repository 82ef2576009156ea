import { describe, expect, it, vi } from "vitest";
import { FakeClock, MAX_TIMER_MS, systemClock } from "../../src/core/clock.js";
import { ExceedsBurstError, TokenBucket } from "../../src/core/token-bucket.js";

interface Step {
  atMs: number;
  n: number;
  wantOk: boolean;
  wantWaitMs: number;
}

function replayReserve(bucket: TokenBucket, steps: Step[], maxWaitMs = Infinity): void {
  for (const step of steps) {
    const reservation = bucket.reserveAt(step.atMs, step.n, maxWaitMs);
    expect({ at: step.atMs, ok: reservation.ok, waitMs: reservation.waitMs }).toEqual({
      at: step.atMs,
      ok: step.wantOk,
      waitMs: step.wantOk ? step.wantWaitMs : Infinity,
    });
  }
}

describe("TokenBucket allow", () => {
  it("starts full, takes what it holds, and refuses without changing anything", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 2, clock: new FakeClock() });
    expect(bucket.allowAt(0, 1)).toBe(true);
    expect(bucket.allowAt(0, 1)).toBe(true);
    expect(bucket.allowAt(0, 1)).toBe(false);
    expect(bucket.tokensAt(0)).toBe(0);
    // A refusal left the level where it was: half a second later there is half a token.
    expect(bucket.allowAt(500, 1)).toBe(false);
    expect(bucket.tokensAt(500)).toBeCloseTo(0.5, 12);
    expect(bucket.allowAt(1000, 1)).toBe(true);
  });

  it("never holds more than the burst however long it was idle (pv's idle credit)", () => {
    const bucket = new TokenBucket({ rate: 1000, burst: 10, clock: new FakeClock() });
    bucket.reserveAt(0, 10);
    expect(bucket.tokensAt(3_600_000)).toBe(10);
    let admitted = 0;
    while (bucket.allowAt(3_600_000, 1)) admitted++;
    expect(admitted).toBe(10);
  });

  it("agrees with x/time/rate on rate 5, burst 10, arrivals at 8/s: 25 in a row, first refusal at 3.125 s", () => {
    const bucket = new TokenBucket({ rate: 5, burst: 10, clock: new FakeClock() });
    const decisions: boolean[] = [];
    for (let i = 0; i < 60; i++) decisions.push(bucket.allowAt(i * 125, 1));
    expect(decisions.slice(0, 25).every(Boolean)).toBe(true);
    expect(decisions.indexOf(false)).toBe(25);
    expect(decisions.filter(Boolean).length).toBe(46);
  });

  it("admits exactly the burst from arrivals at one instant", () => {
    const bucket = new TokenBucket({ rate: 5, burst: 10, clock: new FakeClock() });
    const admitted = Array.from({ length: 60 }, () => bucket.allowAt(0, 1)).filter(Boolean).length;
    expect(admitted).toBe(10);
  });
});

describe("TokenBucket reserve", () => {
  it("goes into debt and answers the wait, first come first served", () => {
    const bucket = new TokenBucket({ rate: 10, burst: 2, clock: new FakeClock() });
    replayReserve(bucket, [
      { atMs: 0, n: 2, wantOk: true, wantWaitMs: 0 },
      { atMs: 0, n: 1, wantOk: true, wantWaitMs: 100 },
      { atMs: 0, n: 2, wantOk: true, wantWaitMs: 300 },
      { atMs: 100, n: 1, wantOk: true, wantWaitMs: 300 },
      { atMs: 1000, n: 3, wantOk: false, wantWaitMs: 0 },
    ]);
  });

  it("refuses a request above the burst as never, not as an endless wait", () => {
    const bucket = new TokenBucket({ rate: 1e6, burst: 10, clock: new FakeClock() });
    const reservation = bucket.reserveAt(0, 11);
    expect(reservation.ok).toBe(false);
    expect(reservation.waitMs).toBe(Infinity);
    expect(bucket.tokensAt(0)).toBe(10);
  });

  it("with a wait limit refuses, changing nothing, when the wait would be longer", () => {
    const bucket = new TokenBucket({ rate: 10, burst: 1, clock: new FakeClock() });
    replayReserve(
      bucket,
      [
        { atMs: 0, n: 1, wantOk: true, wantWaitMs: 0 },
        { atMs: 0, n: 1, wantOk: true, wantWaitMs: 100 },
        { atMs: 0, n: 1, wantOk: false, wantWaitMs: 0 },
        { atMs: 100, n: 1, wantOk: true, wantWaitMs: 100 },
      ],
      150,
    );
  });

  it("counts a wait under one nanosecond as no wait (x/time/rate's float boundary)", () => {
    // 0.1 + 0.2 tokens in floating point falls a hair short of 0.3.
    const bucket = new TokenBucket({ rate: 3, burst: 1, tokens: 0, clock: new FakeClock() });
    expect(bucket.allowAt(100, 0.3)).toBe(true);
    const exact = new TokenBucket({ rate: 1 / 3, burst: 1, tokens: 0, clock: new FakeClock() });
    expect(exact.reserveAt(3000, 1).waitMs).toBe(0);
  });

  it("truncates waits to whole nanoseconds, as Go's durationFromTokens does", () => {
    const bucket = new TokenBucket({ rate: 3, burst: 1, tokens: 0, clock: new FakeClock() });
    // One token at 3/s is 333,333,333.33 ns: Go says 333,333,333 ns.
    expect(bucket.reserveAt(0, 1).waitMs).toBe(333.333333);
  });

  it("clamps time that runs backwards instead of crediting it", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 1, clock: new FakeClock() });
    expect(bucket.allowAt(10_000, 1)).toBe(true);
    expect(bucket.allowAt(5_000, 1)).toBe(false);
    expect(bucket.tokensAt(5_000)).toBe(0);
    // Going back must not make the stretch 5 s..10 s count twice.
    expect(bucket.tokensAt(10_500)).toBeCloseTo(0.5, 12);
  });

  it("cancel gives back what later reservations have not spoken for", () => {
    const bucket = new TokenBucket({ rate: 10, burst: 10, clock: new FakeClock() });
    bucket.reserveAt(0, 10);
    const first = bucket.reserveAt(0, 5);
    expect(first.waitMs).toBe(500);
    bucket.cancelAt(100, first);
    expect(bucket.tokensAt(100)).toBeCloseTo(1, 9);
    const second = bucket.reserveAt(100, 5);
    const third = bucket.reserveAt(100, 5);
    bucket.cancelAt(100, second);
    // third still holds its place: only the part of second before third is not restored.
    expect(bucket.reserveAt(100, 1).waitMs).toBeCloseTo(1000, 6);
    expect(third.waitMs).toBeCloseTo(900, 6);
  });

  it("a bucket that starts in debt knows the debt is spoken for: cancel restores only what was reserved after it", () => {
    // A stored bucket at -4 (rate 10): reservations are due up to 400 ms from now.
    const bucket = new TokenBucket({ rate: 10, burst: 10, tokens: -4, clock: new FakeClock() });
    const last = { ok: true, tokens: 4, timeToActMs: 400, waitMs: 400, rate: 10 };
    const earlier = { ok: true, tokens: 4, timeToActMs: 200, waitMs: 200, rate: 10 };
    // Due at 200, with 2 tokens reserved after it: 2 come back.
    bucket.cancelAt(0, earlier);
    expect(bucket.tokensAt(0)).toBeCloseTo(-2, 9);
    const fresh = new TokenBucket({ rate: 10, burst: 10, tokens: -4, clock: new FakeClock() });
    fresh.cancelAt(0, last);
    expect(fresh.tokensAt(0)).toBe(0);
  });

  it("does not restore tokens for a reservation whose time has passed", () => {
    const bucket = new TokenBucket({ rate: 10, burst: 10, clock: new FakeClock() });
    const reservation = bucket.reserveAt(0, 10);
    bucket.cancelAt(100, reservation);
    expect(bucket.tokensAt(100)).toBeCloseTo(1, 9);
  });
});

describe("TokenBucket settings", () => {
  it("lowering the rate takes effect at once (pv took seconds)", () => {
    const bucket = new TokenBucket({ rate: 1000, burst: 1, clock: new FakeClock() });
    bucket.reserveAt(0, 1);
    bucket.setRateAt(0, 1);
    expect(bucket.reserveAt(0, 1).waitMs).toBe(1000);
  });

  it("keeps tokens earned at the old rate and earns at the new one from then on", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 10, tokens: 0, clock: new FakeClock() });
    bucket.setRateAt(2000, 4);
    expect(bucket.tokensAt(2000)).toBeCloseTo(2, 12);
    expect(bucket.tokensAt(3000)).toBeCloseTo(6, 12);
  });

  it("a lower burst caps the level", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 10, clock: new FakeClock() });
    bucket.setBurstAt(0, 3);
    expect(bucket.tokensAt(0)).toBe(3);
    expect(bucket.reserveAt(0, 4).ok).toBe(false);
  });

  it("an unlimited rate admits everything at once", () => {
    const bucket = new TokenBucket({ rate: Infinity, burst: 1, clock: new FakeClock() });
    expect(bucket.reserveAt(0, 1e9)).toMatchObject({ ok: true, waitMs: 0 });
    expect(bucket.allowAt(0, 1e9)).toBe(true);
  });

  it("names the option and the value it refuses", () => {
    expect(() => new TokenBucket({ rate: -1, burst: 1 })).toThrow("Expected `rate` to be a non-negative number or Infinity, got `-1` (number)");
    expect(() => new TokenBucket({ rate: Number.NaN, burst: 1 })).toThrow("Expected `rate` to be a non-negative number or Infinity, got `NaN` (number)");
    expect(() => new TokenBucket({ rate: 1, burst: -1 })).toThrow("Expected `burst` to be a non-negative finite number, got `-1` (number)");
    expect(() => new TokenBucket({ rate: 1, burst: Infinity })).toThrow("Expected `burst` to be a non-negative finite number, got `Infinity` (number)");
    expect(() => new TokenBucket({ rate: 1, burst: 1 }).reserveAt(0, Number.NaN)).toThrow(RangeError);
  });
});

describe("TokenBucket long run", () => {
  it("over a simulated hour admits the ideal count within one arrival gap, for many rates and bursts", () => {
    for (const [rate, burst, stepMs] of [
      [7, 2, 3],
      [1000, 100, 0.7],
      [0.3, 2, 97],
      [33.3, 5, 11],
    ] as const) {
      const bucket = new TokenBucket({ rate, burst, clock: new FakeClock() });
      let admitted = 0;
      const hourMs = 3_600_000;
      for (let t = 0; t <= hourMs; t += stepMs) if (bucket.allowAt(t, 1)) admitted++;
      const ideal = burst + (rate * hourMs) / 1000;
      expect(Math.abs(admitted - ideal), `rate ${rate} burst ${burst}`).toBeLessThanOrEqual(1 + (rate * stepMs) / 1000);
    }
  });

  it("reservations in a row keep the conformance envelope b + r*T in every window", () => {
    const rate = 50;
    const burst = 5;
    const bucket = new TokenBucket({ rate, burst, clock: new FakeClock() });
    const actTimes: number[] = [];
    for (let i = 0; i < 2000; i++) actTimes.push(bucket.reserveAt(i * 3, 1).timeToActMs);
    for (let i = 0; i < actTimes.length; i++) {
      for (let j = i; j < Math.min(actTimes.length, i + 200); j++) {
        const windowMs = actTimes[j]! - actTimes[i]!;
        expect(j - i + 1).toBeLessThanOrEqual(burst + (rate * windowMs) / 1000 + 1e-6);
      }
    }
  });
});

describe("TokenBucket wait", () => {
  it("sleeps for the reserved wait on the injected clock", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 10, burst: 1, clock });
    await bucket.wait(1);
    let done = false;
    const waiting = bucket.wait(1).then(() => (done = true));
    await clock.advance(99);
    expect(done).toBe(false);
    await clock.advance(1);
    await waiting;
    expect(done).toBe(true);
  });

  it("an abort cancels the reservation and gives the tokens back", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 1, burst: 1, clock });
    await bucket.wait(1);
    const controller = new AbortController();
    const waiting = bucket.wait(1, controller.signal);
    controller.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
    expect(bucket.reserve(1).waitMs).toBe(1000);
  });

  it("rejects a request above the burst with ExceedsBurstError", async () => {
    const bucket = new TokenBucket({ rate: 1, burst: 2, clock: new FakeClock() });
    await expect(bucket.wait(3)).rejects.toBeInstanceOf(ExceedsBurstError);
  });
});

describe("clocks", () => {
  it("a sleep longer than 2^31 ms does not fire at once (p-throttle's setTimeout overflow)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
    try {
      let settled = false;
      const sleeping = systemClock.sleep(MAX_TIMER_MS * 2 + 5).then(() => (settled = true));
      await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(MAX_TIMER_MS);
      expect(settled).toBe(false);
      await vi.advanceTimersByTimeAsync(10);
      await sleeping;
      expect(settled).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("FakeClock wakes sleepers in order of their wake-up time", async () => {
    const clock = new FakeClock();
    const order: number[] = [];
    void clock.sleep(30).then(() => order.push(30));
    void clock.sleep(10).then(() => order.push(10));
    void clock.sleep(20).then(() => order.push(20));
    await clock.advance(25);
    expect(order).toEqual([10, 20]);
    expect(clock.pendingSleeps).toBe(1);
    await clock.advance(5);
    expect(order).toEqual([10, 20, 30]);
  });
});

describe("TokenBucket reads and takes for a limit set", () => {
  it("earliestAt and delayAt answer what reserveAt would, changing nothing", () => {
    const bucket = new TokenBucket({ rate: 3, burst: 4, clock: new FakeClock(0) });
    bucket.reserveAt(0, 4);
    for (const [atMs, n] of [[0, 1], [100, 2], [5000, 4], [5000, 5]] as const) {
      const twin = new TokenBucket({ rate: 3, burst: 4, clock: new FakeClock(0) });
      twin.reserveAt(0, 4);
      const reservation = twin.reserveAt(atMs, n);
      expect(bucket.earliestAt(atMs, n)).toBe(reservation.ok ? reservation.timeToActMs : Infinity);
      expect(bucket.delayAt(atMs, n)).toBe(reservation.ok ? reservation.waitMs : Infinity);
    }
    expect(bucket.tokensAt(0)).toBe(0);
  });

  it("takeAt at the bucket's own time is reserveAt; later, it banks nothing past the burst", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 2, clock: new FakeClock(0) });
    const twin = new TokenBucket({ rate: 1, burst: 2, clock: new FakeClock(0) });
    twin.reserveAt(0, 2);
    expect(bucket.takeAt(0, 0, 2)).toBe(2);
    expect(bucket.tokensAt(0)).toBe(twin.tokensAt(0));
    // An item acting at 10 s, long after the bucket is full again: the level at 10 s is 2 - 1, and it went down by 1 + the 7 the cap cuts off.
    expect(bucket.takeAt(0, 10_000, 1)).toBeCloseTo(9, 12);
    expect(bucket.tokensAt(10_000)).toBeCloseTo(1, 12);
  });

  it("addTokensAt puts a settled difference into debt, or back up to the burst", () => {
    const bucket = new TokenBucket({ rate: 1, burst: 2, clock: new FakeClock(0) });
    bucket.addTokensAt(0, -3);
    expect(bucket.tokensAt(0)).toBe(-1);
    expect(bucket.reserveAt(0, 1).waitMs).toBe(2000);
    bucket.addTokensAt(0, 10);
    expect(bucket.tokensAt(0)).toBe(2);
  });
});
