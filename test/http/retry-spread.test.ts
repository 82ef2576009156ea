import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type GateResult, RequestGate } from "../../src/http/request-gate.js";

/** A gate of one bucket, 5 a second with bursts of 5, as `--per all --rate 5/s --burst 5`. */
function gate(clock: FakeClock, maxWaitMs = 0) {
  return new RequestGate({ rate: 5, burst: 5, maxWaitMs, maxKeys: 10, clock });
}

describe("Retry-After without a stampede", () => {
  it("tells 25 clients refused at once the second of the token each will find: 5 a second, as the bucket refills", () => {
    const clock = new FakeClock(0);
    const limits = gate(clock);
    const first = Array.from({ length: 30 }, () => limits.admit("all") as GateResult);
    expect(first.slice(0, 5).every((result) => result.decision === "admitted")).toBe(true);
    const told = first.slice(5).map((result) => result.retryAfterSeconds);
    expect(told).toEqual([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5]);
    // Each comes back when told: every one is let through, nobody refused twice.
    for (const second of [1, 2, 3, 4, 5]) {
      clock.set(second * 1000);
      const back = told.filter((s) => s === second).map(() => (limits.admit("all") as GateResult).decision);
      expect(back).toEqual(["admitted", "admitted", "admitted", "admitted", "admitted"]);
    }
  });

  it("reserves nothing: a promise that is not kept lapses a second after its time, and later clients are told the sooner times again", () => {
    const clock = new FakeClock(0);
    const limits = gate(clock);
    for (let i = 0; i < 5; i++) limits.admit("all");
    expect((limits.admit("all") as GateResult).retryAfterSeconds).toBe(1);
    expect((limits.admit("all") as GateResult).retryAfterSeconds).toBe(1);
    // Nobody comes back; at 2.5 s both promises (due at 1 s, a second's grace) have lapsed. The bucket holds 5 again at 1 s,
    // and 12.5 tokens' worth is capped at 5: a new arrival is let through, and after 5 the next refused is told 1 s.
    clock.set(2500);
    for (let i = 0; i < 5; i++) expect((limits.admit("all") as GateResult).decision).toBe("admitted");
    expect((limits.admit("all") as GateResult).retryAfterSeconds).toBe(1);
  });

  it("keeps the queue policy's wait in the count: the k-th refused beyond the wait is told when its token comes less the wait", () => {
    const clock = new FakeClock(0);
    const limits = gate(clock, 1000);
    for (let i = 0; i < 5; i++) limits.admit("all");
    // 5 more may queue within 1 s (they wait, taking tokens ahead); those after are refused.
    const queued = Array.from({ length: 5 }, () => limits.admit("all"));
    expect(queued.every((result) => result instanceof Promise)).toBe(true);
    const refused = Array.from({ length: 6 }, () => limits.admit("all") as GateResult);
    expect(refused.map((result) => result.decision)).toEqual(Array(6).fill("refused"));
    // Level -5 after the queued ones: the k-th refused needs k more tokens, 1 s of them within the wait.
    expect(refused.map((result) => result.retryAfterSeconds)).toEqual([1, 1, 1, 1, 1, 2]);
  });
});

describe("Retry-After's spread against a client that ignores it", () => {
  it("one client asking 100 times a second for 10 s does not push the Retry-After told past a minute ahead", async () => {
    const clock = new FakeClock(0);
    const gate = new RequestGate({ rate: 5, burst: 5, maxWaitMs: 0, maxKeys: 10, clock });
    let longest = 0;
    for (let i = 0; i < 1000; i++) {
      const result = gate.admit("all") as GateResult;
      if (result.decision === "refused") longest = Math.max(longest, result.retryAfterSeconds);
      await clock.advance(10);
    }
    // Each refusal counts as a client expected back, up to a minute ahead: without the bound it reached 181 s.
    expect(longest).toBeGreaterThan(30);
    expect(longest).toBeLessThanOrEqual(61);
  });
});
