import { describe, expect, it } from "vitest";
import { ClassLimiter, ClassLimiterClosedError } from "../../src/core/class-limiter.js";
import type { ClassSpec } from "../../src/core/class-spec.js";
import { UnknownClassError } from "../../src/core/class-spec.js";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";

/** bench/classes.mjs's scenario: a 100/s key (burst 20) and three classes. */
const KEY: LimitSpec[] = [{ kind: "bucket", unit: "count", rate: 100, burst: 20 }];
const CLASSES: ClassSpec[] = [
  { name: "interactive", rate: 30, ceil: 50, prio: 0 },
  { name: "backup", rate: 20, prio: 1, weight: 30 },
  { name: "bulk", rate: 10, prio: 1, weight: 10 },
];
/** The rule's answer when all three ask for far more than the key: 30 + 20 lent (its ceil), 20 + 3/4 of 20, 10 + 1/4 of 20. */
const RULE = { interactive: 50, backup: 35, bulk: 15 };

/** Promises and whether each has settled, and how. */
function track<T>(promise: Promise<T>): { state: "pending" | "resolved" | "rejected"; value?: T; error?: unknown } {
  const t: { state: "pending" | "resolved" | "rejected"; value?: T; error?: unknown } = { state: "pending" };
  promise.then(
    (value) => Object.assign(t, { state: "resolved", value }),
    (error: unknown) => Object.assign(t, { state: "rejected", error }),
  );
  return t;
}

describe("ClassLimiter under saturation (a fake clock)", () => {
  it("gives each class the rule's share within 1 %: 50/35/15 a second", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(KEY, CLASSES, { clock });
    const counting = { on: false };
    const got: Record<string, number> = { interactive: 0, backup: 0, bulk: 0 };
    // Every class keeps 5 waiters in its line: far more than it gets.
    const ask = (name: string): void => {
      void limiter.wait(name, 1).then(
        () => {
          if (counting.on) got[name]!++;
          ask(name);
        },
        () => {},
      );
    };
    for (const c of CLASSES) for (let i = 0; i < 5; i++) ask(c.name);
    await clock.advance(5000);
    counting.on = true;
    const seconds = 20;
    await clock.advance(seconds * 1000);
    counting.on = false;
    limiter.close();
    for (const [name, rule] of Object.entries(RULE)) {
      const perSecond = got[name]! / seconds;
      expect(Math.abs(perSecond - rule), `${name}: ${perSecond}/s, the rule says ${rule}/s`).toBeLessThanOrEqual(rule * 0.01);
    }
  });

  it("a class alone gets min(ceil, rate): interactive 50/s", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(KEY, CLASSES, { clock });
    let got = 0;
    let counting = false;
    const ask = (): void => {
      void limiter.wait("interactive", 1).then(
        () => {
          if (counting) got++;
          ask();
        },
        () => {},
      );
    };
    for (let i = 0; i < 5; i++) ask();
    await clock.advance(3000);
    counting = true;
    await clock.advance(10_000);
    limiter.close();
    expect(Math.abs(got / 10 - 50)).toBeLessThanOrEqual(0.5);
  });
});

describe("ClassLimiter's lines", () => {
  const ONE: LimitSpec[] = [{ kind: "bucket", unit: "count", rate: 10, burst: 1 }];
  const TWO: ClassSpec[] = [
    // A guarantee bucket of one item each (the default, 1 × 5/10, could never hold one).
    { name: "a", rate: 5, prio: 0, burst: 1 },
    { name: "b", rate: 5, prio: 1, burst: 1 },
  ];

  it("serves a class first come first served", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    const order: number[] = [];
    const waits = [1, 2, 3, 4, 5].map((i) => limiter.wait("a", 1).then(() => order.push(i)));
    await clock.advance(2000);
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3, 4, 5]);
    expect(limiter.takenBy[0]).toBe(5);
  });

  it("an aborted wait leaves its line at once, takes nothing, and the one behind it moves up", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    await limiter.wait("a", 1); // the burst
    const controller = new AbortController();
    const first = track(limiter.wait("a", 1, controller.signal));
    const second = track(limiter.wait("a", 1));
    await clock.advance(10);
    expect(limiter.waiting("a")).toBe(2);
    controller.abort(new Error("gone"));
    expect(limiter.waiting("a")).toBe(1);
    await clock.advance(0);
    expect(first.state).toBe("rejected");
    expect((first.error as Error).message).toBe("gone");
    // The one behind takes the turn the first would have had (a's guarantee refilled at 5/s: 200 ms), not one after it.
    await clock.advance(189);
    expect(second.state).toBe("pending");
    await clock.advance(1);
    expect(second.state).toBe("resolved");
    expect(limiter.takenBy[0]).toBe(2);
    limiter.close();
  });

  it("an aborted wait behind the first leaves at once too", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    await limiter.wait("a", 1);
    const controller = new AbortController();
    const first = track(limiter.wait("a", 1));
    const second = track(limiter.wait("a", 1, controller.signal));
    const third = track(limiter.wait("a", 1));
    controller.abort(new Error("gone"));
    expect(limiter.waiting("a")).toBe(2);
    await clock.advance(200);
    expect(first.state).toBe("resolved");
    expect(second.state).toBe("rejected");
    await clock.advance(200);
    expect(third.state).toBe("resolved");
    expect(limiter.takenBy[0]).toBe(3);
    limiter.close();
  });

  it("a class's line does not hold up another's", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    await limiter.wait("b", 1);
    const a = track(limiter.wait("a", 1));
    const b = track(limiter.wait("b", 1));
    await clock.advance(100);
    // a's guarantee (prio 0) comes first; b is served next.
    expect(a.state).toBe("resolved");
    await clock.advance(200);
    expect(b.state).toBe("resolved");
    limiter.close();
  });

  it("tryWait refuses, taking nothing, when the wait would pass its limit", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    expect(await limiter.tryWait("a", 1, 0)).toBe(true);
    expect(await limiter.tryWait("a", 1, 10)).toBe(false);
    expect(limiter.takenBy[0]).toBe(1);
    const later = track(limiter.tryWait("a", 1, 500));
    await clock.advance(500);
    expect(later.value).toBe(true);
    limiter.close();
  });

  it("close() rejects every waiter and every later wait", async () => {
    const clock = new FakeClock(0);
    const limiter = new ClassLimiter(ONE, TWO, { clock });
    await limiter.wait("a", 1);
    const waits = [track(limiter.wait("a", 1)), track(limiter.wait("b", 1))];
    await clock.advance(1);
    limiter.close();
    await clock.advance(0);
    for (const w of waits) expect(w.error).toBeInstanceOf(ClassLimiterClosedError);
    await expect(limiter.wait("a", 1)).rejects.toBeInstanceOf(ClassLimiterClosedError);
    expect(clock.pendingSleeps).toBe(0);
  });

  it("names the defined classes for an unknown one; a cost past every burst is refused at once", async () => {
    const limiter = new ClassLimiter(ONE, TWO, { clock: new FakeClock(0) });
    expect(() => limiter.limiterFor("c")).toThrow(UnknownClassError);
    expect(() => limiter.limiterFor("c")).toThrow(`No class "c"; the classes are a, b`);
    await expect(limiter.wait("a", 5)).rejects.toThrow(/more than the burst/);
  });
});
