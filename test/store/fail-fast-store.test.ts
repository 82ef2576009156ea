import { describe, expect, it } from "vitest";
import { type BucketStore, StoreError } from "../../src/store/bucket-store.js";
import { failFast } from "../../src/store/fail-fast-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";

/** A memory store whose calls fail with `failure` while `failing` is set, counting the calls that reach it. */
function flaky(failure: StoreError["failure"]) {
  const inner = new MemoryStore();
  const state = { failing: false, calls: 0 };
  const fail = () => Promise.reject(new StoreError(failure, `store memory: ${failure}`, { storeUrl: "memory:" }));
  const store: BucketStore = {
    url: "memory:",
    take: (key, n, options) => (state.calls++, state.failing ? fail() : inner.take(key, n, options)),
    cancel: (key, reservation) => (state.calls++, state.failing ? fail() : inner.cancel(key, reservation)),
    read: (key) => (state.calls++, state.failing ? fail() : inner.read(key)),
    configure: (key, config, options) => (state.calls++, state.failing ? fail() : inner.configure(key, config, options)),
    list: () => inner.list(),
    delete: (key) => inner.delete(key),
    close: () => inner.close(),
  };
  return { store, state };
}

describe("failFast(store)", () => {
  it("after the store's first failure, every key's call fails at once with it, without asking the store again", async () => {
    const { store, state } = flaky("busy");
    const guarded = failFast(store);
    await guarded.configure("a", { rate: 10, burst: 10, kind: "count" });
    expect(await guarded.take("a", 1)).toMatchObject({ ok: true });
    state.failing = true;
    const first = await guarded.take("a", 1).catch((error: unknown) => error);
    expect(first).toMatchObject({ failure: "busy" });
    state.failing = false;
    const callsBefore = state.calls;
    await expect(guarded.read("b")).rejects.toBe(first);
    await expect(guarded.take("a", 1)).rejects.toBe(first);
    await expect(guarded.configure("c", { rate: 1, burst: 1, kind: "count" })).rejects.toBe(first);
    expect(state.calls).toBe(callsBefore);
  });

  it("a key deleted or a limiter closed is that key's affair: the store is still asked", async () => {
    const { store, state } = flaky("deleted");
    const guarded = failFast(store);
    state.failing = true;
    await expect(guarded.read("a")).rejects.toMatchObject({ failure: "deleted" });
    state.failing = false;
    await guarded.configure("a", { rate: 10, burst: 10, kind: "count" });
    expect(await guarded.read("a")).toMatchObject({ rate: 10 });
  });
});
