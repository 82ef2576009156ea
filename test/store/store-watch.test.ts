import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { type BucketStore, StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { FIRST_PROBE_MS, MAX_PROBE_MS, StoreWatch } from "../../src/store/store-watch.js";

/** A memory store whose calls fail with `failure` while `failing` is set, counting the calls that reach it and when. */
function flaky(failure: StoreError["failure"], clock?: FakeClock) {
  const inner = new MemoryStore({ clock });
  const state = { failing: false, calls: 0, callTimes: [] as number[] };
  const call = <T>(run: () => Promise<T>): Promise<T> => {
    state.calls++;
    state.callTimes.push(clock?.now() ?? 0);
    return state.failing ? Promise.reject(new StoreError(failure, `store memory: ${failure}`, { storeUrl: "memory:" })) : run();
  };
  const store: BucketStore = {
    url: "memory:",
    take: (key, n, options) => call(() => inner.take(key, n, options)),
    cancel: (key, reservation) => call(() => inner.cancel(key, reservation)),
    read: (key) => call(() => inner.read(key)),
    configure: (key, config, options) => call(() => inner.configure(key, config, options)),
    list: () => inner.list(),
    delete: (key) => inner.delete(key),
    close: () => inner.close(),
  };
  return { store, state };
}

describe("StoreWatch", () => {
  it("after the store's first failure, every key's call fails at once with it, without asking the store again", async () => {
    const clock = new FakeClock(0);
    const { store, state } = flaky("locked", clock);
    const watch = new StoreWatch(store, { clock });
    await watch.configure("a", { rate: 10, burst: 10, kind: "count" });
    expect(await watch.take("a", 1)).toMatchObject({ ok: true });
    state.failing = true;
    const first = await watch.take("a", 1).catch((error: unknown) => error);
    expect(first).toMatchObject({ failure: "locked" });
    expect(watch.lost).toEqual({ error: first, sinceMs: 0 });
    const callsBefore = state.calls;
    await expect(watch.read("b")).rejects.toBe(first);
    await expect(watch.take("a", 1)).rejects.toBe(first);
    await expect(watch.configure("c", { rate: 1, burst: 1, kind: "count" })).rejects.toBe(first);
    expect(state.calls).toBe(callsBefore);
    watch.stop();
  });

  it("a key deleted or a limiter closed is that key's affair: the store is still asked", async () => {
    const { store, state } = flaky("deleted");
    const watch = new StoreWatch(store);
    state.failing = true;
    await expect(watch.read("a")).rejects.toMatchObject({ failure: "deleted" });
    expect(watch.lost).toBeUndefined();
    state.failing = false;
    await watch.configure("a", { rate: 10, burst: 10, kind: "count" });
    expect(await watch.read("a")).toMatchObject({ rate: 10 });
  });

  it("probes the store after 100 ms, then at pauses doubling up to 500 ms, for as long as it is lost, and says each end once", async () => {
    const clock = new FakeClock(0);
    const { store, state } = flaky("lost", clock);
    const told: string[] = [];
    const watch = new StoreWatch(store, { clock, onLost: (error) => told.push(`lost: ${error.message}`), onBack: (ms, error) => told.push(`back after ${ms} ms from ${error.failure}`) });
    await watch.configure("a", { rate: 10, burst: 10, kind: "count" });
    state.failing = true;
    state.callTimes = [];
    await expect(watch.take("a", 1)).rejects.toMatchObject({ failure: "lost" });
    await clock.advance(10_000);
    // The failing take at 0, then the probes.
    const capped = Array.from({ length: 18 }, (_, i) => 1200 + 500 * i);
    expect(state.callTimes).toEqual([0, 100, 300, 700, ...capped]);
    expect(FIRST_PROBE_MS).toBe(100);
    expect(MAX_PROBE_MS).toBe(500);
    expect(watch.lost).toBeDefined();
    state.failing = false;
    await clock.advance(1000);
    expect(watch.lost).toBeUndefined();
    expect(told).toEqual(["lost: store memory: lost", "back after 10200 ms from lost"]);
    // The probe is a take of nothing: the bucket is as it was.
    expect((await watch.read("a"))?.tokens).toBe(10);
    const calls = state.calls;
    await clock.advance(5000);
    expect(state.calls).toBe(calls);
  });

  // A probe that met the restarted Redis first took its "restarted" for a failure: the return was seen up to 500 ms late.
  it("a store that restarted without the key is lost, and back at the first probe it answers, even with that", async () => {
    const clock = new FakeClock(0);
    const { store, state } = flaky("restarted", clock);
    const watch = new StoreWatch(store, { clock });
    state.failing = true;
    await expect(watch.take("a", 1)).rejects.toMatchObject({ failure: "restarted" });
    expect(watch.lost).toBeDefined();
    await clock.advance(FIRST_PROBE_MS);
    expect(watch.lost).toBeUndefined();
  });

  it("whenBack: true once the store answers, false at the time limit, and the signal's reason when aborted", async () => {
    const clock = new FakeClock(0);
    const { store, state } = flaky("lost", clock);
    const watch = new StoreWatch(store, { clock });
    expect(await watch.whenBack(0)).toBe(true);
    state.failing = true;
    await watch.read("a").catch(() => {});
    const early = watch.whenBack(250);
    const late = watch.whenBack(Infinity);
    const controller = new AbortController();
    const aborted = watch.whenBack(Infinity, controller.signal);
    controller.abort(new Error("interrupted"));
    await expect(aborted).rejects.toThrow("interrupted");
    await clock.advance(250);
    expect(await early).toBe(false);
    state.failing = false;
    await clock.advance(500);
    expect(await late).toBe(true);
    expect(clock.pendingSleeps).toBe(0);
  });

  it("stop() ends the probes, leaving the store open", async () => {
    const clock = new FakeClock(0);
    const { store, state } = flaky("lost", clock);
    const watch = new StoreWatch(store, { clock });
    state.failing = true;
    await watch.read("a").catch(() => {});
    watch.stop();
    const calls = state.calls;
    await clock.advance(5000);
    expect(state.calls).toBe(calls);
    expect(clock.pendingSleeps).toBe(0);
  });
});
