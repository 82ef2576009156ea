import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { AdaptiveRate } from "../../src/run/adaptive-rate.js";

/** Sends `perSecond` successful outcomes evenly for `seconds`, ending just before the clock's next whole time. */
function sendEvenly(clock: FakeClock, adaptive: AdaptiveRate, perSecond: number, seconds: number): void {
  const stepMs = 1000 / perSecond;
  const startMs = clock.now();
  for (let i = 1; i <= perSecond * seconds; i++) {
    clock.set(startMs + i * stepMs);
    adaptive.record(false);
  }
}

describe("AdaptiveRate", () => {
  it("starts at the ceiling and stays there while nothing is throttled", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    expect(adaptive.rate).toBe(100);
    sendEvenly(clock, adaptive, 40, 3);
    expect(adaptive.rate).toBe(100);
  });

  it("cuts to 0.7 x the measured rate, then climbs back along the cubic to Wmax after K seconds", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    // 40 outcomes/s for 3 s: every closed 0.5 s bucket reads 40/s.
    sendEvenly(clock, adaptive, 40, 3);
    clock.set(3001);
    // Wmax = 40 (measured, below the allowed 100): 0.7 x 40 = 28.
    expect(adaptive.record(true)).toBeCloseTo(28, 6);
    // K = cbrt(40 x 0.3 / 0.4) = cbrt(30) = 3.10723 s.
    expect(adaptive.cubic!.kSeconds).toBeCloseTo(3.10723, 4);
    // Outcomes keep coming at 40/s, so the cap of 2 x measured (80/s) stays out of the way.
    // 1 s later: 0.4 x (1 - 3.10723)^3 + 40 = 0.4 x -9.3574 + 40 = 36.257.
    sendEvenly(clock, adaptive, 40, 1);
    expect(adaptive.rate).toBeCloseTo(36.257, 2);
    // At K (3.107 s after the throttle, ~3 s of outcomes later): back at Wmax = 40.
    sendEvenly(clock, adaptive, 40, 2);
    clock.set(3001 + 3107.23);
    expect(adaptive.record(false)).toBeCloseTo(40, 2);
    // 2 s after K: 0.4 x 2^3 + 40 = 43.2.
    clock.set(3001 + 5107.23 - 2000);
    sendEvenly(clock, adaptive, 40, 2);
    expect(adaptive.rate).toBeCloseTo(43.2, 2);
  });

  it("never grows above the ceiling", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(50, clock);
    sendEvenly(clock, adaptive, 50, 2);
    adaptive.record(true);
    for (let s = 1; s <= 60; s++) {
      sendEvenly(clock, adaptive, 50, 1);
      expect(adaptive.rate).toBeLessThanOrEqual(50);
    }
    expect(adaptive.rate).toBe(50);
  });

  it("repeated throttles compound: each cuts 0.7 x the lower of measured and allowed", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    sendEvenly(clock, adaptive, 100, 2);
    clock.set(2001);
    expect(adaptive.record(true)).toBeCloseTo(70, 6); // measured 100
    clock.set(2002);
    expect(adaptive.record(true)).toBeCloseTo(49, 6); // min(100, 70) x 0.7
    clock.set(2003);
    expect(adaptive.record(true)).toBeCloseTo(34.3, 6);
  });

  it("holds the floor of 0.5/s, and a floor never above the ceiling", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    sendEvenly(clock, adaptive, 10, 1);
    for (let i = 0; i < 40; i++) {
      clock.set(clock.now() + 1);
      adaptive.record(true);
    }
    expect(adaptive.rate).toBe(0.5);
    expect(new AdaptiveRate(0.1, clock).floor).toBe(0.1);
  });

  it("with cutOncePerRoundTrip, a throttle of a request sent before the last cut, or within a round trip after it, does not cut again", () => {
    for (const cutOnce of [false, true]) {
      const clock = new FakeClock(0);
      const adaptive = new AdaptiveRate(100, clock, { cutOncePerRoundTrip: cutOnce, maxFromSendRate: false, maxFromAdmitted: false });
      sendEvenly(clock, adaptive, 40, 3);
      clock.set(3001);
      expect(adaptive.record(true, 2900)).toBeCloseTo(28, 6);
      // Sent at 2950, before the cut at 3001: the AWS rule cuts again (to 0.7 x the measured rate, at most the
      // allowed 28: 19.6); one cut per round trip keeps 28.
      clock.set(3010);
      expect(adaptive.record(true, 2950)).toBeCloseTo(cutOnce ? 28 : 19.6, 6);
      // Sent at 3080, within the cut's round trip (101 ms from 3001): the server was still working off the excess.
      clock.set(3180);
      expect(adaptive.record(true, 3080)).toBeCloseTo(cutOnce ? 28 : 13.72, 6);
      // Sent a round trip after the cut: it cuts either way.
      clock.set(3250);
      expect(adaptive.record(true, 3150)).toBeCloseTo(cutOnce ? 19.6 : 9.604, 6);
    }
  });

  it("takes Wmax from the rate allowed when the throttled request was sent, at most twice the measured rate", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock, { maxFromAdmitted: false });
    // Allowed the ceiling, 100/s, but sending 40/s: Wmax is 80 (twice what was sent), not the 100 never reached.
    sendEvenly(clock, adaptive, 40, 3);
    clock.set(3001);
    expect(adaptive.record(true, 2900)).toBeCloseTo(56, 6);
    expect(adaptive.cubic?.maxRate).toBeCloseTo(80, 6);
    // Sending on at 56/s, the rate grows back along the cubic; a request sent at 3400 is throttled: Wmax is what was
    // allowed at 3400, not the lagging meter's figure.
    sendEvenly(clock, adaptive, 56, 0.4);
    const allowedAt3400 = adaptive.rate;
    expect(allowedAt3400).toBeGreaterThan(56);
    clock.set(3500);
    expect(adaptive.record(true, 3400)).toBeCloseTo(allowedAt3400 * 0.7, 6);
    expect(adaptive.cubic?.maxRate).toBeCloseTo(allowedAt3400, 6);
  });
});

describe("AdaptiveRate with maxFromAdmitted (the default)", () => {
  it("sets Wmax three quarters of the way from the rate sent down to the rate the server admitted over the last second", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    // 40/s admitted for 3 s, then a throttle. Sent: the allowed 100/s, at most twice the measured 40/s, so 80;
    // admitted: the 37 successes from 2100 ms (the oldest slot's start) to 3001 ms, 41.07/s. Wmax 50.8, the rate 35.6.
    sendEvenly(clock, adaptive, 40, 3);
    clock.set(3001);
    const admitted = (37 * 1000) / 901;
    const wmax = 0.25 * 80 + 0.75 * admitted;
    expect(adaptive.record(true, 2900)).toBeCloseTo(0.7 * wmax, 6);
    expect(adaptive.cubic!.maxRate).toBeCloseTo(wmax, 6);
    // The server's limit falls: for the next second, of 42 answers every other one is a throttle, all of requests
    // sent before the cut (its echo, no cut), so 21/s get through. Then a throttle of a request sent now cuts: Wmax
    // three quarters of the way from the rate allowed when it went down to the 21/s admitted.
    const stepMs = 1000 / 42;
    for (let i = 1; i <= 42; i++) {
      clock.set(3001 + i * stepMs);
      adaptive.record(i % 2 === 1, 3000);
    }
    expect(adaptive.cuts).toBe(1);
    const sentAtMs = clock.now();
    const allowed = adaptive.rate;
    clock.set(sentAtMs + 100);
    adaptive.record(true, sentAtMs);
    expect(adaptive.cuts).toBe(2);
    const { maxRate } = adaptive.cubic!;
    // (about 19/s: the window has moved on 100 ms past the last success)
    const admittedRead = (maxRate - 0.25 * allowed) / 0.75;
    expect(admittedRead).toBeGreaterThan(17);
    expect(admittedRead).toBeLessThan(22);
    expect(adaptive.rate).toBeCloseTo(0.7 * maxRate, 6);
  });

  it("counts only successes as admitted, over about the last second", async () => {
    const { AdmittedRateMeter } = await import("../../src/run/adaptive-rate.js");
    const meter = new AdmittedRateMeter(0);
    for (let t = 50; t <= 2000; t += 50) meter.record(t);
    // At 2000 ms the ten slots start at 1100 ms: the 19 successes from 1100 to 2000 over 0.9 s.
    expect(meter.rateAt(2000)).toBeCloseTo((19 * 1000) / 900, 6);
    // A second and a half of nothing: none left in the window.
    expect(meter.rateAt(3500)).toBe(0);
    // Since the start, when that is shorter than a second: 2 in 100 ms.
    const fresh = new AdmittedRateMeter(0);
    fresh.record(40);
    fresh.record(90);
    expect(fresh.rateAt(100)).toBeCloseTo(20, 6);
  });
});

describe("AdaptiveRate while nothing is sent", () => {
  it("a pause (the server's Retry-After) does not drag the rate down: twice the measured rate caps growth only", () => {
    const clock = new FakeClock(0);
    const adaptive = new AdaptiveRate(100, clock);
    sendEvenly(clock, adaptive, 40, 3);
    clock.set(3001);
    const cut = adaptive.record(true, 2900);
    // Three seconds without a launch, then one success: the meter has nearly nothing, the rate stays where it was or grows.
    clock.set(6000);
    expect(adaptive.record(false)).toBeGreaterThanOrEqual(cut);
  });
});
