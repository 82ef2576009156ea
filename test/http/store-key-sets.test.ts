import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { type GateResult, RequestGate } from "../../src/http/request-gate.js";
import { SLOT_POLL_MS, storeKeySets } from "../../src/http/store-key-sets.js";
import type { OnStoreError } from "../../src/http/store-limiters.js";

const RATE_AND_WINDOW: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 10, burst: 5 },
  { kind: "window", unit: "count", n: 3, windowMs: 2000 },
];

/** A memory store whose set calls fail as a lost store's do while `down` is set. */
function losableStore(clock: FakeClock) {
  const store = new MemoryStore({ clock });
  const state = { down: false };
  const lost = () => new StoreError("lost", "store memory: lost", { storeUrl: store.url });
  for (const name of ["takeSet", "configureSet", "readSet", "releaseSet", "renewSet", "cancelSet", "take", "read"] as const) {
    const call = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
    (store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => (state.down ? Promise.reject(lost()) : call(...args));
  }
  return { store, state };
}

function gateOn(store: MemoryStore, clock: FakeClock, limits: LimitSpec[], options: { maxWaitMs?: number; onStoreError?: OnStoreError; lost?: string[] } = {}) {
  const keySets = storeKeySets(
    { store, name: "api", onStoreError: options.onStoreError, onError: () => options.lost?.push("lost"), onBack: () => options.lost?.push("back") },
    { clock, leaseMs: 3000 },
  );
  const gate = new RequestGate({ rate: Infinity, burst: 1, limits, keySets, maxWaitMs: options.maxWaitMs ?? 0, maxKeys: 100, clock });
  return { gate, keySets };
}

const decisions = (results: GateResult[]) => results.map((result) => result.decision);

describe("sets of limits per client in a store", () => {
  it("makes the client's key NAME:<client> with the limits and expireWhenFull, and two gates on one store hold the set together", async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryStore({ clock });
    const one = gateOn(store, clock, RATE_AND_WINDOW).gate;
    const two = gateOn(store, clock, RATE_AND_WINDOW).gate;
    const results = [await one.admit("10.0.0.1"), await two.admit("10.0.0.1"), await one.admit("10.0.0.1")];
    expect(decisions(results)).toEqual(["admitted", "admitted", "admitted"]);
    const state = await store.readSet("api:10.0.0.1");
    expect(state).toMatchObject({ expiresWhenFull: true, limits: [{ kind: "bucket", rate: 10, burst: 5, level: 2 }, { kind: "window", n: 3, level: 0 }] });
    // Each gate knows the window's room from its own takes, without a round trip: one took 2, two took 1.
    expect(results.map((result) => result.limits![1]!.level)).toEqual([2, 2, 1]);
    expect(results[2]!.limits![0]!.level).toBe(2);
    const refused = await two.admit("10.0.0.1");
    expect(refused).toMatchObject({ decision: "refused", limitedBy: [2], retryAfterSeconds: 2 });
    // The refusal read the store: two knows what one took too, until it leaves the window.
    expect(refused.limits!.map((limit) => limit.level)).toEqual([2, 0]);
    // A refusal touches nothing.
    expect((await store.readSet("api:10.0.0.1"))!.limits.map((limit) => limit.level)).toEqual([2, 0]);
    // Another client has its own set.
    expect((await one.admit("10.0.0.2")).decision).toBe("admitted");
    await clock.advance(2000);
    const after = await two.admit("10.0.0.1");
    expect(after.decision).toBe("admitted");
    // The window slid: what two read as taken by the others left it too.
    expect(after.limits![1]!.level).toBe(2);
  });

  it("leaves a key that holds a set already with its own limits", async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryStore({ clock });
    await store.configureSet("api:vip", [{ kind: "bucket", unit: "count", rate: 100, burst: 10 }]);
    const { gate } = gateOn(store, clock, RATE_AND_WINDOW);
    const results: GateResult[] = [];
    for (let i = 0; i < 6; i++) results.push(await gate.admit("vip"));
    expect(decisions(results)).toEqual(Array(6).fill("admitted"));
    expect(await store.readSet("api:vip")).toMatchObject({ limits: [{ kind: "bucket", rate: 100, burst: 10, level: 4 }] });
    expect((await store.readSet("api:vip"))!.expiresWhenFull).toBeUndefined();
  });

  it("queues a request to the instant the store reserved, and a client that leaves gives it back", async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryStore({ clock });
    const { gate } = gateOn(store, clock, [{ kind: "bucket", unit: "count", rate: 10, burst: 1 }], { maxWaitMs: 500 });
    expect((await gate.admit("k")).decision).toBe("admitted");
    let queued: GateResult | undefined;
    void (gate.admit("k") as Promise<GateResult>).then((result) => (queued = result));
    await clock.advance(99);
    expect(queued).toBeUndefined();
    await clock.advance(1);
    expect(queued).toMatchObject({ decision: "queued", waitMs: 100, limitedBy: [1] });
    // The next waits 100 ms; its client leaves after 50: the bucket gets its token back (0 at 100 ms, half a token since).
    const leaving = new AbortController();
    const left = gate.admit("k", leaving.signal) as Promise<GateResult>;
    await clock.advance(50);
    leaving.abort();
    expect((await left).decision).toBe("cancelled");
    await clock.advance(0);
    expect((await store.readSet("api:k"))!.limits[0]!.level).toBeCloseTo(0.5, 6);
    // Allow on another gate: half a token short at 10/s, so a retry after 50 ms, in whole seconds 1.
    const far = gateOn(store, clock, [{ kind: "bucket", unit: "count", rate: 10, burst: 1 }], { maxWaitMs: 0 }).gate;
    expect(await far.admit("k")).toMatchObject({ decision: "refused", retryAfterSeconds: 1, limitedBy: [1] });
  });

  it("holds a slot with a holder until the response ends, renews it past a third of its lease, and a queued request finds a slot freed elsewhere", async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryStore({ clock });
    const limits: LimitSpec[] = [{ kind: "concurrency", n: 1 }];
    const one = gateOn(store, clock, limits).gate;
    const held = await one.admit("k");
    expect(held.decision).toBe("admitted");
    expect(await one.admit("k")).toMatchObject({ decision: "refused", retryAfterSeconds: 1, limitedBy: [1] });
    // Long past its 3 s lease, renewed every second: the slot is still held.
    await clock.advance(10_000);
    expect((await store.readSet("api:k"))!.limits[0]!.level).toBe(0);
    // Another server queues for it; released here, it is found within one poll.
    const other = gateOn(store, clock, limits, { maxWaitMs: 5000 }).gate;
    let queued: GateResult | undefined;
    void (other.admit("k") as Promise<GateResult>).then((result) => (queued = result));
    await clock.advance(SLOT_POLL_MS * 3);
    expect(queued).toBeUndefined();
    held.release!();
    await clock.advance(0);
    expect((await store.readSet("api:k"))!.limits[0]!.level).toBe(1);
    await clock.advance(SLOT_POLL_MS);
    expect(queued).toMatchObject({ decision: "queued", limitedBy: [1] });
    queued!.release!();
    await clock.advance(0);
    expect((await store.readSet("api:k"))!.limits[0]!.level).toBe(1);
    expect(one.liveKeys).toBe(1);
    expect(one.sweep()).toBe(1);
  });

  it("a queued request gives up at its wait limit when no slot comes free", async () => {
    const clock = new FakeClock(1_000_000);
    const store = new MemoryStore({ clock });
    const limits: LimitSpec[] = [{ kind: "concurrency", n: 1 }];
    const one = gateOn(store, clock, limits, { maxWaitMs: 1000 }).gate;
    await one.admit("k");
    let late: GateResult | undefined;
    void (one.admit("k") as Promise<GateResult>).then((result) => (late = result));
    await clock.advance(999);
    expect(late).toBeUndefined();
    await clock.advance(1);
    expect(late).toMatchObject({ decision: "refused", retryAfterSeconds: 1, limitedBy: [1] });
  });

  it.each<[OnStoreError, string]>([
    ["fail", "rejects with the store's failure"],
    ["local", "goes on with a private set of the same limits"],
    ["open", "lets every request through"],
  ])("while the store is lost, onStoreError %s %s, and goes back to the store once it answers", async (mode) => {
    const clock = new FakeClock(1_000_000);
    const { store, state } = losableStore(clock);
    const lost: string[] = [];
    const { gate, keySets } = gateOn(store, clock, RATE_AND_WINDOW, { onStoreError: mode, lost });
    expect((await gate.admit("k")).decision).toBe("admitted");
    state.down = true;
    const during: string[] = [];
    for (let i = 0; i < 4; i++) {
      try {
        during.push((await gate.admit("k")).decision);
      } catch (error) {
        during.push((error as StoreError).failure);
      }
      await clock.advance(0);
    }
    const expected = { fail: ["lost", "lost", "lost", "lost"], local: ["admitted", "admitted", "admitted", "refused"], open: ["admitted", "admitted", "admitted", "admitted"] };
    expect(during).toEqual(expected[mode]);
    expect(lost).toEqual(["lost"]);
    state.down = false;
    await clock.advance(500);
    expect(lost).toEqual(["lost", "back"]);
    // The store's set again: one taken before the outage, two more, then the window refuses.
    expect(decisions([await gate.admit("k"), await gate.admit("k")])).toEqual(["admitted", "admitted"]);
    expect((await gate.admit("k")).decision).toBe("refused");
    keySets.dispose();
  });
});
