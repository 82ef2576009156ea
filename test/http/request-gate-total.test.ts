import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { type KeySet, type KeySetTake, PrivateKeySet } from "../../src/http/key-set.js";
import { type GateResult, RequestGate } from "../../src/http/request-gate.js";
import { storeKeySets } from "../../src/http/store-key-sets.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { FlakyStore } from "../helpers/flaky-store.js";

const bucket = (rate: number, burst: number): LimitSpec => ({ kind: "bucket", unit: "count", rate, burst });
const window = (n: number, windowMs: number): LimitSpec => ({ kind: "window", unit: "count", n, windowMs });

const now = (result: GateResult | Promise<GateResult>): GateResult => {
  if (result instanceof Promise) throw new Error("expected a decision at once");
  return result;
};

/** Each client 5/s burst 5, everyone together 20/s burst 2 (100 ms of it), as `--per ip --rate 5/s --burst 5 --total 20/s`. */
function gate(options: { client?: LimitSpec[]; total?: LimitSpec[]; maxWaitMs?: number } = {}, clock = new FakeClock()) {
  const total = new PrivateKeySet(options.total ?? [bucket(20, 2)], clock);
  const g = new RequestGate({ rate: Infinity, burst: 1, limits: options.client ?? [bucket(5, 5)], maxWaitMs: options.maxWaitMs ?? 0, maxKeys: 10_000, total, clock });
  return { gate: g, total, clock };
}

const levels = (result: GateResult) => ({ client: result.limits!.map((l) => l.level), total: result.total!.limits.map((l) => l.level) });

describe("RequestGate with a total beside each client's set", () => {
  it("a refusal by the total costs the client nothing (regression: a client token lost to a total refusal)", () => {
    const { gate: g } = gate();
    expect(levels(now(g.admit("a")))).toEqual({ client: [4], total: [1] });
    expect(levels(now(g.admit("b")))).toEqual({ client: [4], total: [0] });
    const refused = now(g.admit("c"));
    expect(refused).toMatchObject({ decision: "refused", limitedBy: [], total: { limitedBy: [1] }, retryAfterSeconds: 1 });
    // Client c never got its set touched: it is full, as a new one.
    expect(levels(refused)).toEqual({ client: [5], total: [0] });
    // Client a, refused by the total a second time, keeps its four.
    expect(levels(now(g.admit("a")))).toEqual({ client: [4], total: [0] });
  });

  it("gives the client's take back whole on a clock that moves between the take and the give-back (regression: cancel gave back nothing of a take due at once)", () => {
    // Real time moves between any two readings: a take at once is due by the time the total refuses it.
    class MovingClock extends FakeClock {
      override now(): number {
        const t = super.now();
        this.set(t + 0.001);
        return t;
      }
    }
    const clock = new MovingClock();
    const { gate: g } = gate({ client: [bucket(5, 5), window(10, 60_000)], total: [bucket(1, 1)] }, clock);
    expect(now(g.admit("a")).decision).toBe("admitted");
    for (let i = 0; i < 20; i++) expect(now(g.admit("a"))).toMatchObject({ decision: "refused", limitedBy: [], total: { limitedBy: [1] } });
    // After twenty refusals by the total, client a holds what its one admitted request left: 4 tokens, 9 in the window.
    const again = now(g.admit("a"));
    expect(again.decision).toBe("refused");
    expect(again.limits![0]!.level).toBeCloseTo(4, 2);
    expect(again.limits![1]!.level).toBe(9);
    expect(now(g.admit("b")).limits!.map((limit) => limit.level)).toEqual([5, 10]);
  });

  it("a refusal by the client costs the total nothing", () => {
    const { gate: g, clock } = gate({ total: [bucket(1000, 100)] });
    for (let i = 0; i < 5; i++) expect(now(g.admit("a")).decision).toBe("admitted");
    const refused = now(g.admit("a"));
    expect(refused).toMatchObject({ decision: "refused", limitedBy: [1], total: { limitedBy: [] } });
    expect(levels(refused)).toEqual({ client: [0], total: [95] });
    clock.set(200);
    expect(now(g.admit("a")).decision).toBe("admitted");
  });

  it("Retry-After is the later of the two: a client told it is let through by both", () => {
    for (const totalFirst of [true, false]) {
      const clock = new FakeClock();
      // The total 2/s burst 1 binds before the client's 1/s burst 1, or, with a fast total, the client binds.
      const { gate: g } = gate({ client: [bucket(1, 1)], total: [totalFirst ? bucket(0.5, 1) : bucket(100, 1)] }, clock);
      expect(now(g.admit("a")).decision).toBe("admitted");
      const refused = now(g.admit("a"));
      expect(refused.decision).toBe("refused");
      expect(refused.retryAfterSeconds).toBe(totalFirst ? 2 : 1);
      clock.set(refused.retryAfterSeconds * 1000 - 1);
      expect(now(g.admit("a")).decision).toBe("refused");
      clock.set(refused.retryAfterSeconds * 1000);
      expect(now(g.admit("a")).decision).toBe("admitted");
    }
  });

  it("spreads the Retry-After of clients the total refused over the seconds its tokens come (no stampede), and not of those their own limit refused", () => {
    const { gate: g, clock } = gate({ client: [bucket(1, 1)], total: [bucket(2, 1)] });
    expect(now(g.admit("first")).decision).toBe("admitted");
    const told = ["a", "b", "c", "d", "e", "f"].map((client) => now(g.admit(client)).retryAfterSeconds);
    expect(told).toEqual([1, 1, 2, 2, 3, 3]);
    // The client's own limit: its own instant, whatever the total's queue of promises.
    expect(now(g.admit("first"))).toMatchObject({ limitedBy: [1], retryAfterSeconds: 1 });
    // Those told 1 s come back and take the tokens; the promises they redeem are not counted again.
    clock.set(1000);
    expect(now(g.admit("a")).decision).toBe("admitted");
    clock.set(1500);
    expect(now(g.admit("b")).decision).toBe("admitted");
    // Four still expected (at 2, 2, 3, 3 s): the next refused is told the second after their tokens.
    expect(now(g.admit("g")).retryAfterSeconds).toBe(3);
  });

  it("rotating identities pass each client's limit and not the total's: over a simulated minute, within burst + rate·T", () => {
    const { gate: g, clock } = gate({ client: [bucket(5, 5)], total: [bucket(20, 2)] });
    const perClient = new Map<string, number>();
    let admitted = 0;
    // 50 clients, each asking 10 times a second (500/s in all), every 2 ms one of them.
    for (let t = 0, i = 0; t <= 60_000; t += 2, i++) {
      clock.set(t);
      const client = `10.0.0.${i % 50}`;
      if (now(g.admit(client)).decision === "admitted") {
        admitted++;
        perClient.set(client, (perClient.get(client) ?? 0) + 1);
      }
    }
    // The total's envelope: 2 + 20 · 60 s; every token of it was used (no token lost to a client's refusal).
    expect(admitted).toBeLessThanOrEqual(2 + 20 * 60);
    expect(admitted).toBeGreaterThanOrEqual(20 * 60);
    for (const count of perClient.values()) expect(count).toBeLessThanOrEqual(5 + 5 * 60);
  });

  it("over a simulated minute, one greedy client and the total: each within its own envelope, and the total's tokens not lost to the client's refusals", () => {
    const { gate: g, clock } = gate({ client: [bucket(5, 5)], total: [bucket(8, 2), window(400, 60_000)] });
    let greedy = 0;
    let others = 0;
    for (let t = 0, i = 0; t < 60_000; t += 5, i++) {
      clock.set(t);
      if (now(g.admit("greedy")).decision === "admitted") greedy++;
      if (i % 10 === 0 && now(g.admit(`other-${i % 7}`)).decision === "admitted") others++;
    }
    expect(greedy).toBeLessThanOrEqual(5 + 5 * 60);
    // The window of 400 a minute binds the two together.
    expect(greedy + others).toBeLessThanOrEqual(400);
    expect(greedy + others).toBeGreaterThanOrEqual(399);
  });

  it("queueing: the request waits for the later of the two; a client that leaves gives both back", async () => {
    const { gate: g, clock } = gate({ client: [bucket(10, 1)], total: [bucket(2, 1)], maxWaitMs: 1000 });
    expect(now(g.admit("a")).decision).toBe("admitted");
    const second = g.admit("b");
    expect(second).toBeInstanceOf(Promise);
    clock.advance(500);
    expect(await second).toMatchObject({ decision: "queued", waitMs: 500, total: { limitedBy: [1] } });
    // Refused beyond the wait: the total has nothing for 500 ms more and the next waits behind it.
    const abort = new AbortController();
    const third = g.admit("c", abort.signal);
    abort.abort();
    expect(await third).toMatchObject({ decision: "cancelled" });
    // What the third took is back: the fourth waits 500 ms, not 1000.
    const fourth = g.admit("d");
    clock.advance(500);
    expect(await fourth).toMatchObject({ decision: "queued", waitMs: 500 });
  });

  it("refuses a total with concurrency, and a total without a set per key", () => {
    const clock = new FakeClock();
    const total = new PrivateKeySet([{ kind: "concurrency", n: 2 }], clock);
    expect(() => new RequestGate({ rate: Infinity, burst: 1, limits: [bucket(5, 5)], maxWaitMs: 0, maxKeys: 10, total, clock })).toThrow(/not concurrency/);
    expect(() => new RequestGate({ rate: 5, burst: 5, maxWaitMs: 0, maxKeys: 10, total: new PrivateKeySet([bucket(1, 1)], clock), clock })).toThrow(/beside each key's set/);
  });
});

describe("RequestGate with a total in a store", () => {
  it("takes the client's set then the total's, and gives the client's back when the total refuses (no token lost)", async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock });
    const sets = storeKeySets({ store, name: "api" }, { clock });
    const g = new RequestGate({ rate: Infinity, burst: 1, limits: [bucket(5, 5)], keySets: sets, maxWaitMs: 0, maxKeys: 100, total: sets.total([bucket(20, 2)]), clock });
    expect(await g.admit("a")).toMatchObject({ decision: "admitted" });
    expect(await g.admit("b")).toMatchObject({ decision: "admitted" });
    expect(await g.admit("a")).toMatchObject({ decision: "refused", limitedBy: [], total: { limitedBy: [1] }, retryAfterSeconds: 1 });
    // The total is the key `api` itself; client a's `api:a` kept its four tokens.
    expect((await store.readSet("api"))!.limits[0]!.level).toBeCloseTo(0, 6);
    expect((await store.readSet("api:a"))!.limits[0]!.level).toBeCloseTo(4, 6);
    clock.set(50);
    expect(await g.admit("a")).toMatchObject({ decision: "admitted" });
    expect((await store.readSet("api:a"))!.limits[0]!.level).toBeCloseTo(3.25, 6);
    g.close();
    sets.dispose();
  });

  it("a store that fails for the total gives the client's take back and the gate fails the request", async () => {
    const clock = new FakeClock();
    const client = new PrivateKeySet([bucket(5, 5)], clock);
    const failing: KeySet = {
      limits: [bucket(20, 2)],
      take: (): Promise<KeySetTake> => Promise.reject(new Error("store down")),
      cancel: () => {},
      release: () => {},
      levels: () => [{ ...bucket(20, 2), level: 2 }],
      isIdle: () => true,
    };
    const g = new RequestGate({ rate: Infinity, burst: 1, limits: [bucket(5, 5)], keySets: { open: () => client }, maxWaitMs: 0, maxKeys: 100, total: failing, clock });
    await expect(g.admit("a")).rejects.toThrow("store down");
    expect(client.levels()[0]!.level).toBe(5);
  });

  it.each(["fail", "local", "open"] as const)("while the store is lost, --on-store-error %s applies to the total as to the clients", async (mode) => {
    const clock = new FakeClock();
    const store = new FlakyStore({ clock });
    const sets = storeKeySets({ store, name: "api", onStoreError: mode }, { clock });
    const g = new RequestGate({ rate: Infinity, burst: 1, limits: [bucket(5, 5)], keySets: sets, maxWaitMs: 0, maxKeys: 100, total: sets.total([bucket(1, 2)]), clock });
    expect(await g.admit("a")).toMatchObject({ decision: "admitted" });
    store.down = true;
    const decisions = [];
    for (const client of ["b", "c", "d"]) {
      try {
        decisions.push((await g.admit(client)).decision);
      } catch (error) {
        decisions.push(error instanceof StoreError ? "503" : String(error));
      }
    }
    // fail: every request is the store's 503; open: let through; local: a private total of 2 at once holds them to 2.
    expect(decisions).toEqual(mode === "fail" ? ["503", "503", "503"] : mode === "open" ? ["admitted", "admitted", "admitted"] : ["admitted", "admitted", "refused"]);
    g.close();
    sets.dispose();
  });
});
