/**
 * golang.org/x/time/rate's own tests (rate/rate_test.go), ported to the fake
 * clock: the library claims those semantics, so it answers them. Times are
 * multiples of Go's d = 100 ms after t0. Where tbucket differs on purpose
 * (time that runs backwards is clamped), the test says what Go answers and
 * why tbucket does not; docs/design.md lists every difference.
 */
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { ExceedsBurstError, ExceedsDeadlineError, every, TokenBucket } from "../../src/core/token-bucket.js";

const d = 100;
const t0 = 1_000;
const t = (k: number) => t0 + k * d;
const [t1, t2, t3, t4, t5, t9] = [t(1), t(2), t(3), t(4), t(5), t(9)];

function limiter(rate: number, burst: number): { bucket: TokenBucket; clock: FakeClock } {
  const clock = new FakeClock(t0);
  return { bucket: new TokenBucket({ rate, burst, clock }), clock };
}

interface Allow {
  at: number;
  toks: number;
  n: number;
  ok: boolean;
}

/** Go's run(): the level before each step, then AllowN's answer. */
function run(bucket: TokenBucket, allows: Allow[]): void {
  allows.forEach((allow, step) => {
    expect({ step, toks: bucket.tokensAt(allow.at) }).toEqual({ step, toks: expect.closeTo(allow.toks, 12) });
    expect({ step, ok: bucket.allowAt(allow.at, allow.n) }).toEqual({ step, ok: allow.ok });
  });
}

/** Go's runReserveMax(): the time to act, in whole d after t0, when ok. */
function reserve(bucket: TokenBucket, at: number, n: number, want: { act?: number; ok: boolean }, maxWaitMs = Infinity) {
  const reservation = bucket.reserveAt(at, n, maxWaitMs);
  expect(reservation.ok).toBe(want.ok);
  if (want.ok) expect(Math.round((reservation.timeToActMs - t0) / d)).toBe(Math.round((want.act! - t0) / d));
  return reservation;
}

/** Starts a wait and tells how long after now it settled, in d, and how. */
async function timeWait(clock: FakeClock, waiting: Promise<unknown>): Promise<{ delay: number; error: unknown }> {
  const start = clock.now();
  let settledAt: number | undefined;
  let error: unknown;
  waiting.then(
    () => (settledAt = clock.now()),
    (e: unknown) => {
      settledAt = clock.now();
      error = e;
    },
  );
  // advance settles a wait that needs no sleep before any time passes.
  await clock.advance(20 * d);
  expect(settledAt).toBeDefined();
  return { delay: Math.round((settledAt! - start) / d), error };
}

describe("x/time/rate: Every", () => {
  it.each([
    [0, Infinity],
    [-1e-6, Infinity],
    [1e-6, 1e9],
    [1e-3, 1e6],
    [1, 1e3],
    [10, 100],
    [100, 10],
    [1000, 1],
    [2000, 0.5],
    [2500, 0.4],
    [4000, 0.25],
    [10_000, 0.1],
    [9_223_372_036_854.775807, 1e9 / 9_223_372_036_854_775_807],
  ])("every(%s ms) is %s a second", (intervalMs, rate) => {
    if (rate === Infinity) expect(every(intervalMs)).toBe(Infinity);
    else expect(Math.abs(every(intervalMs) / rate - 1)).toBeLessThan(1e-9);
  });

  it("refuses an interval that is not a number", () => {
    expect(() => every(Number.NaN)).toThrow("Expected `intervalMs` to be a number, got `NaN` (number)");
  });
});

describe("x/time/rate: AllowN", () => {
  it("TestLimiterBurst1", () => {
    run(limiter(10, 1).bucket, [
      { at: t0, toks: 1, n: 1, ok: true },
      { at: t0, toks: 0, n: 1, ok: false },
      { at: t0, toks: 0, n: 1, ok: false },
      { at: t1, toks: 1, n: 1, ok: true },
      { at: t1, toks: 0, n: 1, ok: false },
      { at: t1, toks: 0, n: 1, ok: false },
      { at: t2, toks: 1, n: 2, ok: false }, // burst size is 1, so n=2 always fails
      { at: t2, toks: 1, n: 1, ok: true },
      { at: t2, toks: 0, n: 1, ok: false },
    ]);
  });

  it("TestLimiterBurst3", () => {
    run(limiter(10, 3).bucket, [
      { at: t0, toks: 3, n: 2, ok: true },
      { at: t0, toks: 1, n: 2, ok: false },
      { at: t0, toks: 1, n: 1, ok: true },
      { at: t0, toks: 0, n: 1, ok: false },
      { at: t1, toks: 1, n: 4, ok: false },
      { at: t2, toks: 2, n: 1, ok: true },
      { at: t3, toks: 2, n: 1, ok: true },
      { at: t4, toks: 2, n: 1, ok: true },
      { at: t4, toks: 1, n: 1, ok: true },
      { at: t4, toks: 0, n: 1, ok: false },
      { at: t4, toks: 0, n: 1, ok: false },
      { at: t9, toks: 3, n: 3, ok: true },
      { at: t9, toks: 0, n: 0, ok: true },
    ]);
  });

  it("TestLimiterJumpBackwards, clamped: the interval t0..t1 is earned once, not twice", () => {
    // Go moves its last update back to t0 and credits t0..t1 again: at t1 it holds 1 token
    // and at t2 another. tbucket counts t0 as t1, so the next token comes at t2.
    run(limiter(10, 3).bucket, [
      { at: t1, toks: 3, n: 1, ok: true }, // start at t1
      { at: t0, toks: 2, n: 1, ok: true }, // jump back to t0, two tokens remain
      { at: t0, toks: 1, n: 1, ok: true },
      { at: t0, toks: 0, n: 1, ok: false },
      { at: t0, toks: 0, n: 1, ok: false },
      { at: t1, toks: 0, n: 1, ok: false }, // Go: 1 token, true
      { at: t2, toks: 1, n: 1, ok: true }, // the only token t1..t2 brings
      { at: t2, toks: 0, n: 1, ok: false },
      { at: t2, toks: 0, n: 1, ok: false },
    ]);
  });

  it("TestLimiter_noTruncationErrors (golang.org/issues/34861)", () => {
    expect(limiter(0.7692307692307693, 1).bucket.allow()).toBe(true);
  });

  it("TestSimultaneousRequests: 15 at once against a burst of 5 admit 5", () => {
    const { bucket } = limiter(1, 5);
    const admitted = Array.from({ length: 15 }, () => bucket.allow()).filter(Boolean).length;
    expect(admitted).toBe(5);
  });

  it("TestLongRunningQPS: 5 s of requests every 2 ms admit burst + rate × time, within 0.1 %", async () => {
    const { bucket, clock } = limiter(100, 100);
    let admitted = 0;
    while (clock.now() < t0 + 5000) {
      if (bucket.allow()) admitted++;
      await clock.advance(2);
    }
    const ideal = 100 + (100 * (clock.now() - t0)) / 1000;
    expect(admitted).toBeLessThanOrEqual(Math.trunc(ideal + 1));
    expect(admitted).toBeGreaterThanOrEqual(Math.trunc(0.999 * ideal));
  });
});

describe("x/time/rate: ReserveN and Cancel", () => {
  it("TestSimpleReserve", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    reserve(bucket, t0, 2, { act: t2, ok: true });
    reserve(bucket, t3, 2, { act: t4, ok: true });
  });

  it("TestMix", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 3, { ok: false }); // n > burst
    reserve(bucket, t0, 2, { act: t0, ok: true });
    run(bucket, [{ at: t1, toks: 1, n: 2, ok: false }]); // not enough tokens
    reserve(bucket, t1, 2, { act: t2, ok: true });
    run(bucket, [{ at: t1, toks: -1, n: 1, ok: false }]); // negative tokens
    run(bucket, [{ at: t3, toks: 1, n: 1, ok: true }]);
  });

  it("TestCancelInvalid", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const refused = reserve(bucket, t0, 3, { ok: false });
    bucket.cancelAt(t0, refused); // no effect
    reserve(bucket, t0, 2, { act: t2, ok: true }); // no extra tokens
  });

  it("TestCancelLast", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const r = reserve(bucket, t0, 2, { act: t2, ok: true });
    bucket.cancelAt(t1, r); // 2 tokens back
    reserve(bucket, t1, 2, { act: t2, ok: true });
  });

  it("TestCancelTooLate", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const r = reserve(bucket, t0, 2, { act: t2, ok: true });
    bucket.cancelAt(t3, r); // too late: no effect
    reserve(bucket, t3, 2, { act: t4, ok: true });
  });

  it("TestCancel0Tokens", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const r = reserve(bucket, t0, 1, { act: t1, ok: true });
    reserve(bucket, t0, 1, { act: t2, ok: true });
    bucket.cancelAt(t0, r); // 0 tokens back
    reserve(bucket, t0, 1, { act: t3, ok: true });
  });

  it("TestCancel1Token", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const r = reserve(bucket, t0, 2, { act: t2, ok: true });
    reserve(bucket, t0, 1, { act: t3, ok: true });
    bucket.cancelAt(t2, r); // 1 token back
    reserve(bucket, t2, 2, { act: t4, ok: true });
  });

  it("TestCancelMulti", () => {
    const { bucket } = limiter(10, 4);
    reserve(bucket, t0, 4, { act: t0, ok: true });
    const rA = reserve(bucket, t0, 3, { act: t3, ok: true });
    reserve(bucket, t0, 1, { act: t4, ok: true });
    const rC = reserve(bucket, t0, 1, { act: t5, ok: true });
    bucket.cancelAt(t1, rC); // 1 token back
    bucket.cancelAt(t1, rA); // 2 tokens back, as if C was never reserved
    reserve(bucket, t1, 3, { act: t5, ok: true });
  });

  it("TestReserveJumpBack, clamped: a reservation asked at t0 after t1 counts from t1", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t1, 2, { act: t1, ok: true }); // start at t1
    // Go answers t1 here too, but from t0 (its level rewinds with its clock).
    reserve(bucket, t0, 1, { act: t2, ok: true });
    reserve(bucket, t2, 2, { act: t4, ok: true }); // Go: t3
    reserve(bucket, t0, 3, { ok: false }); // n > burst changes nothing
    reserve(bucket, t2, 1, { act: t5, ok: true }); // Go: t4
    reserve(bucket, t0, 2, { ok: false }, d); // the wait limit refuses, changing nothing
    reserve(bucket, t2, 1, { act: t(6), ok: true }); // Go: t5
  });

  it("TestReserveJumpBackCancel, clamped: cancelling at t0 counts as at the last update", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t1, 2, { act: t1, ok: true }); // start at t1
    const r = reserve(bucket, t1, 2, { act: t3, ok: true });
    reserve(bucket, t1, 1, { act: t4, ok: true });
    bucket.cancelAt(t0, r); // 1 token back
    // Go answers t4 after moving its level back to t0; tbucket's level stays at t1: t1 + 2d.
    reserve(bucket, t1, 2, { act: t(5), ok: true });
  });

  it("TestReserveSetLimit", () => {
    const { bucket } = limiter(5, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    reserve(bucket, t0, 2, { act: t4, ok: true });
    bucket.setRateAt(t2, 10);
    reserve(bucket, t2, 1, { act: t4, ok: true }); // violates Limit and Burst
  });

  it("TestReserveSetBurst, clamped: asked at t0 after an update at t3, the wait counts from t3", () => {
    const { bucket } = limiter(5, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    reserve(bucket, t0, 2, { act: t4, ok: true });
    bucket.setBurstAt(t3, 4);
    // Go: t9, the 9 d of debt counted from t0; tbucket counts them from t3.
    reserve(bucket, t0, 4, { act: t(12), ok: true });
  });

  it("TestReserveSetLimitCancel", () => {
    const { bucket } = limiter(5, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true });
    const r = reserve(bucket, t0, 2, { act: t4, ok: true });
    bucket.setRateAt(t2, 10);
    bucket.cancelAt(t2, r); // 2 tokens back
    reserve(bucket, t2, 2, { act: t3, ok: true });
  });

  it("TestReserveMax", () => {
    const { bucket } = limiter(10, 2);
    reserve(bucket, t0, 2, { act: t0, ok: true }, d);
    reserve(bucket, t0, 1, { act: t1, ok: true }, d); // close enough
    reserve(bucket, t0, 1, { ok: false }, d); // too far in the future
  });

  it("Reservation.delayFrom: the wait left at a time, 0 once due, Infinity when refused", () => {
    const { bucket } = limiter(10, 2);
    bucket.reserveAt(t0, 2);
    const r = bucket.reserveAt(t0, 2);
    expect(r.delayFrom(t0)).toBe(2 * d);
    expect(r.delayFrom(t1)).toBe(d);
    expect(r.delayFrom(t3)).toBe(0);
    expect(bucket.reserveAt(t0, 3).delayFrom(t0)).toBe(Infinity);
  });
});

describe("x/time/rate: WaitN", () => {
  it("TestWaitSimple", async () => {
    const { bucket, clock } = limiter(10, 3);
    const aborted = AbortSignal.abort();
    expect((await timeWait(clock, bucket.wait(1, aborted))).error).toBe(aborted.reason);
    expect((await timeWait(clock, bucket.wait(4))).error).toBeInstanceOf(ExceedsBurstError);
    expect(await timeWait(clock, bucket.wait(2))).toEqual({ delay: 0, error: undefined });
  });

  it("TestWaitSimple's act-later: 2 then 3 of a burst of 3 wait 2 d", async () => {
    const { bucket, clock } = limiter(10, 3);
    await bucket.wait(2);
    expect(await timeWait(clock, bucket.wait(3))).toEqual({ delay: 2, error: undefined });
  });

  it("TestWaitCancel: a wait aborted after d gives its 3 tokens back", async () => {
    const { bucket, clock } = limiter(10, 3);
    await bucket.wait(2); // 1 token left
    const controller = new AbortController();
    void clock.sleep(d).then(() => controller.abort());
    expect((await timeWait(clock, bucket.wait(3, controller.signal))).delay).toBe(1);
    // Cancelled at t1 (1 token + 1 gained - 3 + 3 given back = 2), then 19 d passed: full.
    expect(bucket.tokens()).toBe(3);
  });

  it("TestWaitCancel, on the spot: right after the cancel the level is 2", async () => {
    const { bucket, clock } = limiter(10, 3);
    await bucket.wait(2);
    const controller = new AbortController();
    const waiting = bucket.wait(3, controller.signal).catch((e: unknown) => e);
    await clock.advance(d);
    controller.abort();
    await waiting;
    expect(bucket.tokens()).toBeCloseTo(2, 12);
    expect(await timeWait(clock, bucket.waitWithDeadline(2, clock.now()))).toEqual({ delay: 0, error: undefined });
  });

  it("TestWaitTimeout: a wait that would pass the deadline fails at once and takes nothing", async () => {
    const { bucket, clock } = limiter(10, 3);
    const deadline = t0 + d;
    expect(await timeWait(clock, bucket.waitWithDeadline(2, deadline))).toEqual({ delay: 0, error: undefined });
    const second = limiter(10, 3);
    await second.bucket.waitWithDeadline(2, deadline);
    const refused = await second.bucket.waitWithDeadline(3, deadline).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExceedsDeadlineError);
    expect(refused).toMatchObject({ code: "EXCEEDS_DEADLINE" });
    expect(second.bucket.tokens()).toBe(1);
    // Due exactly at the deadline is in time.
    const due = await timeWait(second.clock, second.bucket.waitWithDeadline(3, t0 + 2 * d));
    expect(due).toEqual({ delay: 2, error: undefined });
  });

  it("TestWaitInf: an infinite rate admits more than a burst of 0", async () => {
    const { bucket, clock } = limiter(Infinity, 0);
    expect(await timeWait(clock, bucket.wait(3))).toEqual({ delay: 0, error: undefined });
    expect(bucket.allow(3)).toBe(true);
    expect(bucket.reserve(1_000_000).waitMs).toBe(0);
  });
});

describe("x/time/rate: a rate of 0", () => {
  it("TestZeroLimit: the burst, then nothing", () => {
    const { bucket } = limiter(0, 1);
    expect(bucket.allow()).toBe(true);
    expect(bucket.allow()).toBe(false);
  });

  it("TestSetAfterZeroLimit: raising the rate brings the next token 1 / rate later", async () => {
    const { bucket, clock } = limiter(0, 1);
    expect(bucket.allow()).toBe(true);
    expect(bucket.allow()).toBe(false);
    bucket.setRate(10);
    expect(await timeWait(clock, bucket.wait(1))).toEqual({ delay: 1, error: undefined });
  });

  it("TestTinyLimit (golang.org/issues/71154): 1e-10 a second allows the burst and no more", () => {
    const { bucket } = limiter(1e-10, 1);
    expect(bucket.allow()).toBe(true);
    expect(bucket.allow()).toBe(false);
  });

  it("a reservation past the level is owed: granted with an infinite wait, repaid once the rate is raised", () => {
    const { bucket } = limiter(0, 2);
    const r = bucket.reserveAt(t0, 3 - 1);
    expect(r.waitMs).toBe(0);
    const owed = bucket.reserveAt(t0, 1);
    expect(owed).toMatchObject({ ok: true, waitMs: Infinity, timeToActMs: Infinity });
    expect(bucket.tokensAt(t9)).toBe(-1);
    // A wait limit refuses it instead.
    expect(bucket.reserveAt(t0, 1, 60_000).ok).toBe(false);
    bucket.setRateAt(t1, 10);
    expect(bucket.reserveAt(t1, 1)).toMatchObject({ ok: true, timeToActMs: t3 });
  });

  it("a wait at rate 0 lasts until aborted, and the abort gives its tokens back", async () => {
    const { bucket, clock } = limiter(0, 1);
    bucket.allow();
    const controller = new AbortController();
    const waiting = bucket.wait(1, controller.signal).catch((e: unknown) => e);
    await clock.advance(3_600_000);
    expect(clock.pendingSleeps).toBe(1);
    controller.abort();
    expect(await waiting).toBe(controller.signal.reason);
    expect(bucket.tokens()).toBe(0);
    bucket.setRate(10);
    expect(bucket.reserve(1).waitMs).toBe(d);
  });

  it("setRate(0) pauses: nothing more comes until the rate is raised again", () => {
    const { bucket } = limiter(10, 1);
    bucket.allowAt(t0);
    bucket.setRateAt(t0 + d / 2, 0);
    expect(bucket.tokensAt(t9)).toBeCloseTo(0.5, 12);
    expect(bucket.allowAt(t9)).toBe(false);
    bucket.setRateAt(t9, 10);
    expect(bucket.reserveAt(t9, 1).waitMs).toBeCloseTo(d / 2, 6);
  });
});

describe("the library's entry point", () => {
  it("exports what x/time/rate has: every, Reservation with delayFrom, the deadline error", async () => {
    const library = await import("../../src/index.js");
    expect(library.every(250)).toBe(4);
    expect(new library.TokenBucket({ rate: 1, burst: 1, clock: new FakeClock() }).reserveAt(0, 1)).toBeInstanceOf(library.Reservation);
    expect(new library.ExceedsDeadlineError(1, 5)).toBeInstanceOf(RangeError);
  });
});
