import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSet, type LimitReservation, type LimitSetState } from "../../src/core/limit-set.js";
import { SlidingWindow } from "../../src/core/sliding-window.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { MIXED_SET, setTrace } from "../helpers/limit-set-trace.js";

describe("LimitSet's state as data", () => {
  for (const seed of [1, 2, 3]) {
    it(`a set made again from its state at every step answers as the live one, seed ${seed}`, () => {
      const live = new LimitSet(MIXED_SET, { clock: new FakeClock(0) });
      let state: LimitSetState = live.state();
      const liveTakes: LimitReservation[] = [];
      const storedTakes: LimitReservation[] = [];
      for (const [index, step] of setTrace(seed, 800).entries()) {
        // What a store does: a set made from the stored state, one step, its state stored (a deep copy, as a row or a hash).
        const stored = new LimitSet(MIXED_SET, { clock: new FakeClock(0), state: structuredClone(state) });
        const context = `step ${index}: ${JSON.stringify(step)}`;
        if (step.op === "take") {
          const a = live.reserveAt(step.atMs, step.costs, step.maxWaitMs);
          const b = stored.reserveAt(step.atMs, step.costs, step.maxWaitMs);
          expect([b.ok, b.timeToActMs, b.waitMs, b.limitedBy, b.noSlot], context).toEqual([a.ok, a.timeToActMs, a.waitMs, a.limitedBy, a.noSlot]);
          liveTakes.push(a);
          storedTakes.push(b);
        } else if (step.op === "cancel") {
          live.cancelAt(step.atMs, liveTakes[step.take]!);
          stored.cancelAt(step.atMs, storedTakes[step.take]!);
        } else if (step.op === "release") {
          live.releaseAt(step.atMs, liveTakes[step.take]!);
          stored.releaseAt(step.atMs, storedTakes[step.take]!);
        } else if (step.op === "settle") {
          live.settleAt(step.atMs, liveTakes[step.take]!, step.costs);
          stored.settleAt(step.atMs, storedTakes[step.take]!, step.costs);
        }
        state = stored.state();
        expect(state, context).toEqual(live.state());
        const levels = (set: LimitSet) => MIXED_SET.map((_, i) => set.levelAt(step.atMs + 100, i));
        expect(levels(stored), context).toEqual(levels(live));
      }
    });
  }

  it("keeps what cancelling measures from: the latest time to act, not the one the debt implies", () => {
    // The bucket waits for the window: its level at the take is lowered by what the cap cuts off, not owed.
    const specs = [
      { kind: "bucket" as const, unit: "count", rate: 10, burst: 2 },
      { kind: "window" as const, unit: "count", n: 1, windowMs: 1000 },
    ];
    const play = (set: LimitSet) => {
      set.reserveAt(0, { count: 1 });
      return set.reserveAt(0, { count: 1 });
    };
    const live = new LimitSet(specs, { clock: new FakeClock(0) });
    const stored = new LimitSet(specs, { clock: new FakeClock(0) });
    const liveWaiting = play(live);
    const waiting = play(stored);
    expect(waiting.timeToActMs).toBe(1000);
    const state = stored.state();
    expect(state.limits[0]).toMatchObject({ kind: "bucket", lastMs: 0, lastEventMs: 1000 });
    const again = new LimitSet(specs, { clock: new FakeClock(0), state });
    again.cancelAt(10, waiting);
    live.cancelAt(10, liveWaiting);
    expect(again.state()).toEqual(live.state());
    expect(again.levelAt(10, 0)).toBeCloseTo(1.1, 9);
  });

  it("refuses a state that does not fit its specs", () => {
    expect(() => new LimitSet(MIXED_SET, { state: { lastMs: 0, limits: [] } })).toThrow("Expected `state` to hold one state of the same kind for each limit");
    const state = new LimitSet(MIXED_SET, { clock: new FakeClock(0) }).state();
    state.limits.reverse();
    expect(() => new LimitSet(MIXED_SET, { state })).toThrow("of the same kind");
    expect(() => new SlidingWindow(3, 1000, { clockMs: 0, times: [5, 5], costs: [1, 1] })).toThrow("in time order");
    expect(() => new TokenBucket({ rate: 1, burst: 2, state: { tokens: 3, lastMs: 0, lastEventMs: 0 } })).toThrow("at most the burst");
  });
});
