import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSetStore } from "../../src/store/limit-set-store.js";
import { SharedClassLimiter } from "../../src/store/shared-class-limiter.js";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("shared-class-limiter");
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A SQLite store whose every call is counted: what a take costs in round trips, whatever the limiter says of itself. */
async function countedStore(clock?: FakeClock): Promise<{ store: LimitSetStore; calls: string[] }> {
  const sqlite = await SqliteStore.open(join(tempDir(), "k.db"), { clock });
  closers.push(() => sqlite.close());
  const calls: string[] = [];
  const store = new Proxy(sqlite, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(name));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls };
}

describe("SharedClassLimiter on a SQLite file", () => {
  it("costs one round trip a take, admitted or refused: one takeClass, nothing else", async () => {
    const { store, calls } = await countedStore();
    await store.configureSet("uplink", [{ kind: "bucket", unit: "count", rate: 10, burst: 4 }]);
    const state = await store.configureClasses!("uplink", [{ name: "web", rate: 8 }, { name: "bulk", rate: 2, prio: 1 }]);
    calls.length = 0;
    const web = new SharedClassLimiter({ store, key: "uplink", className: "web", state: state!, unit: "count" });
    for (let i = 0; i < 3; i++) expect(await web.tryWait(1, 0)).toBe(true);
    expect(calls).toEqual(["takeClass", "takeClass", "takeClass"]);
    calls.length = 0;
    // Its guarantee bucket (4 × 8/10 = 3.2) is spent, and bulk's guarantee holds the key's last token: refused, one ask.
    const answer = await web.tryTake(1, 0);
    expect(answer.ok).toBe(false);
    expect(answer.retryMs).toBeGreaterThan(0);
    expect(answer.retryMs).toBeLessThanOrEqual(1000 / 8 + 5);
    expect(calls).toEqual(["takeClass"]);
    expect(web.roundTrips).toBe(4);
  });

  it("a wait asks again at the instant the store named, and each ask is one round trip", async () => {
    const clock = new FakeClock(1_000_000);
    const { store, calls } = await countedStore(clock);
    await store.configureSet("api", [{ kind: "bucket", unit: "count", rate: 2, burst: 1 }]);
    const state = await store.configureClasses!("api", [{ name: "web", rate: 2 }]);
    const web = new SharedClassLimiter({ store, key: "api", className: "web", state: state!, unit: "count", clock });
    expect(await web.tryWait(1, 0)).toBe(true);
    calls.length = 0;
    const waiting = web.tryWait(1, 5000);
    for (let i = 0; i < 40 && clock.pendingSleeps === 0; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(clock.pendingSleeps).toBe(1);
    await clock.advance(500);
    expect(await waiting).toBe(true);
    // Refused, asked again 3 ms before the store's instant (refused), then at it: every ask one takeClass.
    expect(calls.every((call) => call === "takeClass")).toBe(true);
    expect(calls.length).toBe(web.roundTrips - 1);
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(clock.now()).toBe(1_000_500);
  });
});
