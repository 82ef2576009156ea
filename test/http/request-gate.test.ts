import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { RequestGate } from "../../src/http/request-gate.js";
import { storeLimiters } from "../../src/http/store-limiters.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { StoreError } from "../../src/store/bucket-store.js";

function gate(options: { rate: number; burst: number; maxWaitMs?: number; maxKeys?: number }, clock = new FakeClock()) {
  return { clock, gate: new RequestGate({ maxWaitMs: 0, maxKeys: 100, ...options, clock }) };
}

describe("RequestGate, dropping", () => {
  it("lets the burst through, refuses the next with Retry-After rounded up, and keeps keys apart", () => {
    const { gate: g } = gate({ rate: 2, burst: 3 });
    expect([1, 2, 3].map(() => (g.admit("a") as { decision: string }).decision)).toEqual(["admitted", "admitted", "admitted"]);
    const refused = g.admit("a");
    expect(refused).toMatchObject({ decision: "refused", retryAfterSeconds: 1, level: 0 });
    expect(g.admit("b")).toMatchObject({ decision: "admitted", level: 2 });
  });

  it("a client that waits exactly Retry-After is let through, at every point of the refill", () => {
    for (const rate of [0.3, 0.7, 1, 3, 50]) {
      const { gate: g, clock } = gate({ rate, burst: 1 });
      for (let i = 0; i < 200; i++) {
        const result = g.admit("a") as { decision: string; retryAfterSeconds: number };
        if (result.decision === "refused") {
          clock.set(clock.now() + result.retryAfterSeconds * 1000);
          expect(g.admit("a")).toMatchObject({ decision: "admitted" });
        }
        // Somewhere in the next refill, so that refusals see every level.
        clock.set(clock.now() + ((i * 37) % 1000) / rate / 7);
      }
    }
  });

  it("over a simulated minute a client sending as fast as it can gets burst + rate x T, within one", () => {
    const { gate: g, clock } = gate({ rate: 50, burst: 10 });
    let admitted = 0;
    for (let t = 0; t <= 60_000; t += 1) {
      clock.set(t);
      if ((g.admit("a") as { decision: string }).decision === "admitted") admitted++;
    }
    expect(Math.abs(admitted - (10 + 50 * 60))).toBeLessThanOrEqual(1);
  });

  it("at rate 0 refuses with the longest Retry-After once the burst is gone", () => {
    const { gate: g } = gate({ rate: 0, burst: 1 });
    expect(g.admit("a")).toMatchObject({ decision: "admitted" });
    expect(g.admit("a")).toMatchObject({ decision: "refused", retryAfterSeconds: 86_400 });
  });

  it("holds at most maxKeys buckets for 100,000 distinct clients", () => {
    const { gate: g } = gate({ rate: 1, burst: 5, maxKeys: 1000 });
    for (let i = 0; i < 100_000; i++) g.admit(`c${i}`);
    expect(g.liveKeys).toBe(1000);
  });

  it("drops buckets that refilled completely: a full bucket is the same as a new one", () => {
    const { gate: g, clock } = gate({ rate: 10, burst: 1, maxKeys: 1000 });
    for (let i = 0; i < 500; i++) g.admit(`c${i}`);
    clock.set(1000);
    expect(g.sweep()).toBe(500);
    expect(g.liveKeys).toBe(0);
  });
});

describe("RequestGate, queueing", () => {
  it("holds requests on the bucket's schedule and refuses one whose wait would pass the limit, with an honest Retry-After", async () => {
    const { gate: g, clock } = gate({ rate: 10, burst: 1, maxWaitMs: 250 });
    const results = [0, 1, 2, 3].map(() => g.admit("a"));
    expect(results[0]).toMatchObject({ decision: "admitted" });
    expect(results[3]).toMatchObject({ decision: "refused", retryAfterSeconds: 1 });
    await clock.advance(300);
    expect(await results[1]).toMatchObject({ decision: "queued", waitMs: 100 });
    expect(await results[2]).toMatchObject({ decision: "queued", waitMs: 200 });
  });

  it("a request given up while waiting gives its token back to the one behind it", async () => {
    const { gate: g, clock } = gate({ rate: 10, burst: 1, maxWaitMs: 1000 });
    g.admit("a");
    const hangUp = new AbortController();
    const first = g.admit("a", hangUp.signal);
    await clock.advance(50);
    hangUp.abort();
    expect(await first).toMatchObject({ decision: "cancelled" });
    const second = g.admit("a");
    await clock.advance(60);
    expect(await second).toMatchObject({ decision: "queued", waitMs: 50 });
  });

  it("gives every token back when all the waiting requests are given up, first come first: the bucket is as before them", async () => {
    const { gate: g, clock } = gate({ rate: 10, burst: 5, maxWaitMs: 300_000 });
    for (let i = 0; i < 5; i++) g.admit("a");
    const hangUps = Array.from({ length: 1000 }, () => new AbortController());
    const waiting = hangUps.map((hangUp) => g.admit("a", hangUp.signal));
    await clock.advance(50);
    for (const hangUp of hangUps) hangUp.abort();
    const results = await Promise.all(waiting);
    expect(results.every((result) => result.decision === "cancelled")).toBe(true);
    // 100 ms after the burst was spent, one token is back, as if none of them had come.
    await clock.advance(50);
    expect(g.admit("a")).toMatchObject({ decision: "admitted", level: 0 });
  });

  it("when a request in the middle of the line is given up, those behind it move up a turn each (first come, first served)", async () => {
    const { gate: g, clock } = gate({ rate: 10, burst: 1, maxWaitMs: 1000 });
    g.admit("a");
    const hangUp = new AbortController();
    const second = g.admit("a");
    const third = g.admit("a", hangUp.signal);
    const fourth = g.admit("a");
    const fifth = g.admit("a");
    await clock.advance(50);
    hangUp.abort();
    expect(await third).toMatchObject({ decision: "cancelled" });
    await clock.advance(400);
    expect(await second).toMatchObject({ decision: "queued", waitMs: 100 });
    expect(await fourth).toMatchObject({ decision: "queued", waitMs: 200 });
    expect(await fifth).toMatchObject({ decision: "queued", waitMs: 300 });
    // The turn at 400 ms is no one's: the bucket holds it.
    expect(g.admit("a")).toMatchObject({ decision: "admitted" });
  });

  it("a waiting request keeps its key in the table", async () => {
    const { gate: g, clock } = gate({ rate: 1, burst: 1, maxWaitMs: 5000, maxKeys: 10 });
    g.admit("a");
    const waiting = g.admit("a");
    clock.set(10_000);
    expect(g.sweep()).toBe(0);
    await clock.advance(0);
    await waiting;
  });
});

describe("RequestGate over a store", () => {
  it("takes from NAME:<key> in the store, so two gates share one limit per client", async () => {
    const store = new MemoryStore();
    const open = () => new RequestGate({ rate: 1, burst: 2, maxWaitMs: 0, maxKeys: 100, source: storeLimiters({ store, name: "api" }, { rate: 1, burst: 2 }) });
    const [one, two] = [open(), open()];
    const decisions = [];
    for (const g of [one, two, one]) decisions.push((await g.admit("1.2.3.4")).decision);
    expect(decisions).toEqual(["admitted", "admitted", "refused"]);
    expect((await store.read("api:1.2.3.4"))?.kind).toBe("count");
    one.close();
    two.close();
  });

  it("a key already in the store keeps its own settings (set live with tbucket key set)", async () => {
    const store = new MemoryStore();
    await store.configure("api:vip", { rate: 100, burst: 5, kind: "count" });
    const g = new RequestGate({ rate: 1, burst: 1, maxWaitMs: 0, maxKeys: 100, source: storeLimiters({ store, name: "api" }, { rate: 1, burst: 1 }) });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push((await g.admit("vip")).decision);
    expect(decisions).toEqual(["admitted", "admitted", "admitted", "admitted", "admitted"]);
    g.close();
  });
});

describe("RequestGate when the store is lost mid-run", () => {
  function flakyStore(): { store: MemoryStore; lose(): void; restore(): void } {
    const store = new MemoryStore();
    let lost = false;
    const take = store.take.bind(store);
    const read = store.read.bind(store);
    store.take = async (...args) => {
      if (lost) throw new StoreError("lost", "store memory: connection lost", { storeUrl: "memory:" });
      return take(...args);
    };
    store.read = async (...args) => {
      if (lost) throw new StoreError("lost", "store memory: connection lost", { storeUrl: "memory:" });
      return read(...args);
    };
    return { store, lose: () => (lost = true), restore: () => (lost = false) };
  }

  it("with onStoreError local keeps deciding on private buckets: a key in use starts empty, a new one full", async () => {
    const { store, lose } = flakyStore();
    const errors: string[] = [];
    const g = new RequestGate({
      rate: 1,
      burst: 2,
      maxWaitMs: 0,
      maxKeys: 100,
      source: storeLimiters({ store, name: "api", onStoreError: "local", onError: (error) => errors.push(error.message) }, { rate: 1, burst: 2 }),
    });
    expect((await g.admit("old")).decision).toBe("admitted");
    lose();
    expect((await g.admit("old")).decision).toBe("refused");
    expect((await g.admit("new")).decision).toBe("admitted");
    expect((await g.admit("new")).decision).toBe("admitted");
    expect(errors).toEqual(["store memory: connection lost"]);
    g.close();
  });

  it("with onStoreError fail rejects with the StoreError and opens the key afresh once the store is back", async () => {
    const { store, lose, restore } = flakyStore();
    const clock = new FakeClock(0);
    const g = new RequestGate({ rate: 1000, burst: 2, maxWaitMs: 0, maxKeys: 100, clock, source: storeLimiters({ store, name: "api" }, { rate: 1000, burst: 2, clock }) });
    expect((await g.admit("a")).decision).toBe("admitted");
    lose();
    // The first lease may still cover this one; the next round trip fails.
    await expect(Promise.all([g.admit("a"), g.admit("a"), g.admit("a")])).rejects.toBeInstanceOf(StoreError);
    expect(g.liveKeys).toBe(0);
    restore();
    // The store is asked again at most a second apart.
    await clock.advance(1000);
    expect((await g.admit("a")).decision).toBe("admitted");
    g.close();
  });
});
