import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { type GateResult, RequestGate, SLOT_RETRY_AFTER_SECONDS } from "../../src/http/request-gate.js";
import { storeKeySets } from "../../src/http/store-key-sets.js";
import { MemoryStore } from "../../src/store/memory-store.js";

const bucket = (rate: number, burst: number): LimitSpec => ({ kind: "bucket", unit: "count", rate, burst });
const window = (n: number, windowMs: number): LimitSpec => ({ kind: "window", unit: "count", n, windowMs });
const slots = (n: number): LimitSpec => ({ kind: "concurrency", n });

/** `--per all` with a set of limits: one key, private or in a memory store (as `--store ... --key ...`). */
function gates(limits: LimitSpec[], clock: FakeClock) {
  const privateGate = new RequestGate({ rate: Infinity, burst: 1, limits, maxWaitMs: 0, maxKeys: 10, clock });
  const keySets = storeKeySets({ store: new MemoryStore({ clock }), name: "api" }, { clock });
  const storeGate = new RequestGate({ rate: Infinity, burst: 1, limits, keySets, maxWaitMs: 0, maxKeys: 10, clock });
  return [
    ["private", privateGate],
    ["store-backed", storeGate],
  ] as const;
}

const HOUR_MS = 3_600_000;

describe("Retry-After without a stampede, behind a set of limits", () => {
  for (const kind of ["private", "store-backed"] as const) {
    describe(`a ${kind} set`, () => {
      const gateFor = (limits: LimitSpec[], clock: FakeClock) => gates(limits, clock).find(([name]) => name === kind)![1];

      it("{5/s burst 5, 1000/h}: 25 clients refused at once are told 1,1,1,1,1,2,... (the bucket's k-th next token), and each coming back when told is let through", async () => {
        const clock = new FakeClock(0);
        const g = gateFor([bucket(5, 5), window(1000, HOUR_MS)], clock);
        const first: GateResult[] = [];
        for (let i = 0; i < 30; i++) first.push(await g.admit("all"));
        expect(first.slice(0, 5).every((result) => result.decision === "admitted")).toBe(true);
        const refused = first.slice(5);
        expect(refused.every((result) => result.decision === "refused" && result.limitedBy.join() === "1")).toBe(true);
        const told = refused.map((result) => result.retryAfterSeconds);
        expect(told).toEqual([1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5]);
        for (const second of [1, 2, 3, 4, 5]) {
          clock.set(second * 1000);
          const back: string[] = [];
          for (const _ of told.filter((s) => s === second)) back.push((await g.admit("all")).decision);
          expect(back).toEqual(Array(5).fill("admitted"));
        }
      });

      it("{100/s, 5/10 s}: the told times are when the window's oldest records leave, the k-th refused the k-th next, one window later past n; each coming back is let through", async () => {
        const clock = new FakeClock(0);
        const g = gateFor([bucket(100, 100), window(5, 10_000)], clock);
        // One admitted each second: records at 0, 1, 2, 3 and 4 s leave at 10, 11, 12, 13 and 14 s.
        for (let second = 0; second < 5; second++) {
          clock.set(second * 1000);
          expect((await g.admit("all")).decision).toBe("admitted");
        }
        clock.set(4500);
        const refused: GateResult[] = [];
        for (let i = 0; i < 7; i++) refused.push(await g.admit("all"));
        expect(refused.every((result) => result.decision === "refused" && result.limitedBy.join() === "2")).toBe(true);
        const told = refused.map((result) => result.retryAfterSeconds);
        // 10 s, ... 14 s from 4.5 s, rounded up; the 6th and 7th fit only when the first two come back have left too (20.5, 21.5 s).
        expect(told).toEqual([6, 7, 8, 9, 10, 16, 17]);
        for (const seconds of told) {
          clock.set(4500 + seconds * 1000);
          expect((await g.admit("all")).decision).toBe("admitted");
        }
      });

      it("promises not kept lapse a second after their time: later clients are told the sooner times again", async () => {
        const clock = new FakeClock(0);
        const g = gateFor([bucket(5, 5), window(1000, HOUR_MS)], clock);
        for (let i = 0; i < 5; i++) await g.admit("all");
        expect((await g.admit("all")).retryAfterSeconds).toBe(1);
        expect((await g.admit("all")).retryAfterSeconds).toBe(1);
        // Nobody came back: at 2.5 s the bucket is full again and both promises have lapsed.
        clock.set(2500);
        for (let i = 0; i < 5; i++) expect((await g.admit("all")).decision).toBe("admitted");
        expect((await g.admit("all")).retryAfterSeconds).toBe(1);
      });

      it("a refusal for want of a concurrency slot is told 1 s, whatever others were told", async () => {
        const clock = new FakeClock(0);
        const g = gateFor([bucket(100, 100), slots(1)], clock);
        const held = await g.admit("all");
        expect(held.decision).toBe("admitted");
        const told: number[] = [];
        for (let i = 0; i < 5; i++) told.push((await g.admit("all")).retryAfterSeconds);
        expect(told).toEqual(Array(5).fill(SLOT_RETRY_AFTER_SECONDS));
        held.release!();
      });
    });
  }

  it("each client's own set keeps its own promises: a key's refusals do not push another key's later", () => {
    const clock = new FakeClock(0);
    const g = new RequestGate({ rate: Infinity, burst: 1, limits: [bucket(1, 1)], maxWaitMs: 0, maxKeys: 10, clock });
    for (const key of ["a", "b"]) g.admit(key);
    const told = ["a", "a", "a", "b"].map((key) => (g.admit(key) as GateResult).retryAfterSeconds);
    expect(told).toEqual([1, 2, 3, 1]);
  });
});

describe("Retry-After without a stampede, within a class", () => {
  it("spreads each class's refused clients by its guarantee: paid (3/s) and free (2/s) sharing 5/s are told 3 and 2 a second, and each coming back is let through", () => {
    const clock = new FakeClock(0);
    const classes = { specs: [{ name: "paid", rate: 3 }, { name: "free", rate: 2, prio: 1 }], limits: [bucket(5, 5)] };
    const g = new RequestGate({ rate: 5, burst: 5, maxWaitMs: 0, maxKeys: 10, clock, classes });
    const ask = (className: string) => g.admit("all", undefined, className) as GateResult;
    const paid = Array.from({ length: 15 }, () => ask("paid"));
    const free = Array.from({ length: 10 }, () => ask("free"));
    // Paid borrowed the whole burst; then each class is told the seconds its guarantee brings.
    expect(paid.slice(0, 5).every((result) => result.decision === "admitted")).toBe(true);
    expect(paid.slice(5).map((result) => result.retryAfterSeconds)).toEqual([1, 1, 1, 2, 2, 2, 3, 3, 3, 4]);
    expect(free.map((result) => result.retryAfterSeconds)).toEqual([1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    for (const second of [1, 2, 3, 4, 5]) {
      clock.set(second * 1000);
      for (const [className, results] of [["paid", paid.slice(5)], ["free", free]] as const) {
        const back = results.filter((result) => result.retryAfterSeconds === second).map(() => ask(className).decision);
        expect(back.every((decision) => decision === "admitted")).toBe(true);
      }
    }
  });
});
