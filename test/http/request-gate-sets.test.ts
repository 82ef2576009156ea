import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { type KeySet, type KeySetTake, PrivateKeySet } from "../../src/http/key-set.js";
import { type GateResult, RequestGate, SLOT_RETRY_AFTER_SECONDS } from "../../src/http/request-gate.js";

const bucket = (rate: number, burst: number): LimitSpec => ({ kind: "bucket", unit: "count", rate, burst });
const window = (n: number, windowMs: number): LimitSpec => ({ kind: "window", unit: "count", n, windowMs });
const slots = (n: number): LimitSpec => ({ kind: "concurrency", n });

function gate(limits: LimitSpec[], maxWaitMs = 0, clock = new FakeClock()) {
  return { clock, gate: new RequestGate({ rate: Infinity, burst: 1, limits, maxWaitMs, maxKeys: 100, clock }) };
}

const now = (result: GateResult | Promise<GateResult>): GateResult => {
  if (result instanceof Promise) throw new Error("expected a decision at once");
  return result;
};

describe("RequestGate with a set of limits, dropping", () => {
  it("admits only what every limit admits, and a refusal costs nothing in any limit", () => {
    // 10/s burst 5, and at most 3 in any 2 s: the window binds first.
    const { gate: g, clock } = gate([bucket(10, 5), window(3, 2000)]);
    expect([1, 2, 3].map(() => now(g.admit("a")).decision)).toEqual(["admitted", "admitted", "admitted"]);
    const refused = now(g.admit("a"));
    expect(refused).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: 2 });
    // The bucket kept its two tokens: the refusal took nothing from it.
    expect(refused.limits!.map((limit) => limit.level)).toEqual([2, 0]);
    clock.set(2000);
    expect(now(g.admit("a"))).toMatchObject({ decision: "admitted", limitedBy: [] });
  });

  it("Retry-After is the earliest instant every limit admits, rounded up, and a client that waits it is let through", () => {
    // The bucket is empty 1 s after the burst at 1/s; the window of 4 in 3 s binds later.
    for (const step of [0, 137, 500, 999]) {
      const { gate: g, clock } = gate([bucket(1, 2), window(4, 3000)]);
      for (let i = 0; i < 40; i++) {
        const result = now(g.admit("a"));
        if (result.decision === "refused") {
          const earliestMs = clock.now() + result.retryAfterSeconds * 1000;
          clock.set(earliestMs - 1000);
          const probe = now(g.admit("a"));
          expect(probe.decision).toBe("refused");
          // The probe is a client told to come back too: behind the first, so no sooner.
          const probeBackMs = clock.now() + probe.retryAfterSeconds * 1000;
          expect(probeBackMs).toBeGreaterThanOrEqual(earliestMs);
          clock.set(earliestMs);
          expect(now(g.admit("a")).decision).toBe("admitted");
          clock.set(probeBackMs);
          expect(now(g.admit("a")).decision).toBe("admitted");
        }
        clock.set(clock.now() + step);
      }
    }
  });

  it("names the limit that bound in limitedBy, and the one that binds changes as they fill", () => {
    const { gate: g, clock } = gate([bucket(1, 1), window(2, 10_000)]);
    expect(now(g.admit("a")).decision).toBe("admitted");
    expect(now(g.admit("a"))).toMatchObject({ decision: "refused", limitedBy: [1], retryAfterSeconds: 1 });
    clock.set(1000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    clock.set(2000);
    expect(now(g.admit("a"))).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: 8 });
  });

  it("a concurrency slot is held until released, and a refusal for want of one says Retry-After 1", () => {
    const { gate: g } = gate([bucket(100, 100), slots(2)]);
    const first = now(g.admit("a"));
    const second = now(g.admit("a"));
    expect(now(g.admit("a"))).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: SLOT_RETRY_AFTER_SECONDS });
    first.release!();
    first.release!();
    expect(now(g.admit("a")).decision).toBe("admitted");
    expect(now(g.admit("a")).decision).toBe("refused");
    second.release!();
    expect(now(g.admit("b")).decision).toBe("admitted");
  });

  it("forgets a key only once every limit is as new and no slot is held", () => {
    const { gate: g, clock } = gate([bucket(10, 1), window(1, 1000), slots(1)]);
    const held = now(g.admit("a"));
    clock.set(5000);
    expect(g.sweep()).toBe(0);
    held.release!();
    expect(g.sweep()).toBe(1);
    expect(g.liveKeys).toBe(0);
  });
});

describe("RequestGate with a set of limits, queueing", () => {
  it("holds a request until the earliest instant every limit admits, first come first served", async () => {
    const { gate: g, clock } = gate([bucket(10, 1), window(2, 1000)], 2000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    const second = g.admit("a");
    const third = g.admit("a");
    await clock.advance(2000);
    // The bucket sets the second at 100 ms; the window the third at 1000 ms (the first slid out).
    expect(await second).toMatchObject({ decision: "queued", waitMs: 100, limitedBy: [1] });
    expect(await third).toMatchObject({ decision: "queued", waitMs: 1000, limitedBy: [2] });
  });

  it("refuses what would wait past maxWait, with Retry-After when it would be queued within it", () => {
    const { gate: g } = gate([bucket(10, 10), window(1, 5000)], 1000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    // Admitted at 5 s; queued from 4 s on.
    expect(now(g.admit("a"))).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: 4 });
  });

  it("a client that leaves while queued gives back to every limit", async () => {
    const { gate: g, clock } = gate([bucket(1, 1), window(3, 10_000)], 5000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    const leaving = new AbortController();
    const left = g.admit("a", leaving.signal);
    await clock.advance(100);
    leaving.abort();
    expect(await left).toMatchObject({ decision: "cancelled" });
    // The bucket has its token back (0.1 earned since the first), the window forgot the record at 1 s.
    clock.set(1000);
    const next = now(g.admit("a"));
    expect(next).toMatchObject({ decision: "admitted", waitMs: 0 });
    expect(next.limits!.map((limit) => limit.level)).toEqual([0, 1]);
  });

  it("one that leaves before a later one keeps the later one's instant and the window forgets it", async () => {
    const { gate: g, clock } = gate([bucket(1, 1), window(3, 10_000)], 5000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    const leaving = new AbortController();
    const left = g.admit("a", leaving.signal);
    const later = g.admit("a");
    await clock.advance(100);
    leaving.abort();
    expect(await left).toMatchObject({ decision: "cancelled" });
    await clock.advance(1900);
    expect(await later).toMatchObject({ decision: "queued", waitMs: 2000 });
    clock.set(3000);
    // Had the window kept the one that left, this one would wait until 10 s.
    const third = now(g.admit("a"));
    expect(third).toMatchObject({ decision: "admitted", waitMs: 0 });
    // Three admitted, the one that left not counted: the window is full.
    expect(third.limits![1]!.level).toBe(0);
  });

  it("a request without a slot waits for one, in turn, until maxWait; leaving gives its place up", async () => {
    const { gate: g, clock } = gate([slots(1)], 1000);
    const holder = now(g.admit("a"));
    const leaving = new AbortController();
    const first = g.admit("a", leaving.signal);
    const second = g.admit("a");
    const third = g.admit("a");
    await clock.advance(100);
    leaving.abort();
    expect(await first).toMatchObject({ decision: "cancelled" });
    await clock.advance(100);
    holder.release!();
    const admitted = await second;
    expect(admitted).toMatchObject({ decision: "queued", waitMs: 200, limitedBy: [1] });
    await clock.advance(800);
    expect(await third).toMatchObject({ decision: "refused", limitedBy: [1], retryAfterSeconds: 1 });
    admitted.release!();
    expect(now(g.admit("a")).decision).toBe("admitted");
  });

  it("a request that found its slot then waits for the other limits' instant, within what is left of maxWait", async () => {
    const { gate: g, clock } = gate([bucket(1, 1), slots(1)], 1500);
    const holder = now(g.admit("a"));
    const waiting = g.admit("a");
    await clock.advance(300);
    holder.release!();
    // The slot is free at 300 ms, the bucket's token at 1 s: queued 1 s in all, both limits named.
    await clock.advance(700);
    const result = await waiting;
    expect(result).toMatchObject({ decision: "queued", waitMs: 1000, limitedBy: [1, 2] });
    result.release!();
    // Now the bucket is empty until 2 s: 1 s away, within the wait; the slot is free.
    const third = g.admit("a");
    await clock.advance(1000);
    expect(await third).toMatchObject({ decision: "queued", waitMs: 1000, limitedBy: [1] });
  });

  it("a request still without a slot at maxWait is refused, and one behind it goes when a slot frees", async () => {
    const { gate: g, clock } = gate([slots(1)], 500);
    const holder = now(g.admit("a"));
    const first = g.admit("a");
    await clock.advance(300);
    const second = g.admit("a");
    await clock.advance(200);
    expect(await first).toMatchObject({ decision: "refused", limitedBy: [1], retryAfterSeconds: 1 });
    holder.release!();
    await clock.advance(0);
    expect(await second).toMatchObject({ decision: "queued", waitMs: 200 });
  });
});

describe("RequestGate with sets from a source (as a store's will be)", () => {
  /** A private set answering its takes through promises, as a set in a store answers. */
  function asyncSet(limits: LimitSpec[], clock: FakeClock): KeySet & { takes: number } {
    const inner = new PrivateKeySet(limits, clock);
    return {
      takes: 0,
      limits: inner.limits,
      take(maxWaitMs: number): Promise<KeySetTake> {
        this.takes++;
        return Promise.resolve(inner.take(maxWaitMs));
      },
      cancel: (take) => inner.cancel(take),
      release: (take) => inner.release(take),
      levels: () => inner.levels(),
      isIdle: () => inner.isIdle(),
    };
  }

  it("decides through the source's promises the same way, and closes a key's set when it leaves", async () => {
    const clock = new FakeClock();
    const opened: string[] = [];
    const closed: KeySet[] = [];
    const sets = new Map<string, KeySet>();
    const g = new RequestGate({
      rate: Infinity,
      burst: 1,
      limits: [bucket(1, 1), window(2, 10_000)],
      maxWaitMs: 0,
      maxKeys: 100,
      clock,
      keySets: {
        open: (key, limits) => {
          opened.push(key);
          const set = asyncSet([...limits], clock);
          sets.set(key, set);
          return set;
        },
        close: (set) => closed.push(set),
      },
    });
    expect(await g.admit("a")).toMatchObject({ decision: "admitted" });
    expect(await g.admit("a")).toMatchObject({ decision: "refused", limitedBy: [1], retryAfterSeconds: 1 });
    clock.set(1000);
    expect(await g.admit("a")).toMatchObject({ decision: "admitted" });
    clock.set(2000);
    expect(await g.admit("a")).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: 8 });
    expect(opened).toEqual(["a"]);
    clock.set(20_000);
    expect(g.sweep()).toBe(1);
    expect(closed).toEqual([sets.get("a")]);
  });
});
