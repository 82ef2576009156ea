import { describe, expect, it, vi } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { LimitSpec } from "../../src/core/limit-spec.js";
import { ExceedsBurstError } from "../../src/core/token-bucket.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { SharedSetLimiter } from "../../src/store/shared-set-limiter.js";

const T0 = 1_700_000_000_000;

async function setup(limits: LimitSpec[]) {
  const clock = new FakeClock(T0);
  const store = new MemoryStore({ clock });
  const state = await store.configureSet("k", limits);
  const open = (unit: "bytes" | "count" = "count") => new SharedSetLimiter({ store, key: "k", state, unit, clock });
  return { clock, store, open };
}

async function runFor(clock: FakeClock, ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) await clock.advance(1);
}

/** Waits for one again and again, recording when each went out. */
function startLoop(limiter: SharedSetLimiter, clock: FakeClock, signal: AbortSignal, costs?: Record<string, number>): number[] {
  const log: number[] = [];
  void (async () => {
    while (!signal.aborted) {
      try {
        await limiter.wait(costs?.count ?? 1, signal, costs);
      } catch {
        return;
      }
      log.push(clock.now() - T0);
    }
  })();
  return log;
}

/** The most entries of `log` in any interval of `windowMs`. */
function mostInAnyWindow(log: number[], windowMs: number): number {
  let most = 0;
  for (let i = 0; i < log.length; i++) {
    let j = i;
    while (j < log.length && log[j]! - log[i]! < windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

const RATE_AND_WINDOW: LimitSpec[] = [
  { kind: "bucket", unit: "count", rate: 20, burst: 1 },
  { kind: "window", unit: "count", n: 10, windowMs: 1000 },
];

describe("SharedSetLimiter", () => {
  it("reads its rate and burst from the set: the lowest long-run rate and the least taken at once", async () => {
    const { open } = await setup(RATE_AND_WINDOW);
    const limiter = open();
    expect(limiter.rate).toBe(10);
    expect(limiter.burst).toBe(1);
    await expect(limiter.wait(2)).rejects.toBeInstanceOf(ExceedsBurstError);
  });

  it("takes leases of about leaseMs of the rate: a fast pipe makes ~50 round trips a second", async () => {
    const { clock, open } = await setup([
      { kind: "bucket", unit: "bytes", rate: 1_000_000, burst: 100_000 },
      { kind: "window", unit: "bytes", n: 2_000_000, windowMs: 1000 },
    ]);
    const limiter = open("bytes");
    const stop = new AbortController();
    let sent = 0;
    void (async () => {
      while (!stop.signal.aborted) {
        await limiter.wait(1000, stop.signal).catch(() => {});
        sent += 1000;
      }
    })();
    await runFor(clock, 2000);
    stop.abort();
    // The burst at once, then the rate.
    expect(sent).toBeGreaterThanOrEqual(2_000_000);
    expect(sent).toBeLessThanOrEqual(2_100_000 + 20_000);
    expect(limiter.roundTrips).toBeLessThanOrEqual(2 * 50 + 10);
    expect(limiter.roundTrips).toBeGreaterThanOrEqual(2 * 40);
  });

  it("two limiters on one key hold the window together, first come first served", async () => {
    const { clock, open } = await setup(RATE_AND_WINDOW);
    const a = open();
    const b = open();
    const stop = new AbortController();
    const logA = startLoop(a, clock, stop.signal);
    const logB = startLoop(b, clock, stop.signal);
    await runFor(clock, 5000);
    stop.abort();
    const all = [...logA, ...logB].sort((x, y) => x - y);
    expect(mostInAnyWindow(all, 1000)).toBeLessThanOrEqual(10);
    // The window's long-run rate, 10/s, shared out evenly.
    expect(all.length).toBeGreaterThanOrEqual(48);
    expect(all.length).toBeLessThanOrEqual(51);
    expect(Math.abs(logA.length - logB.length)).toBeLessThanOrEqual(2);
  });

  it("an aborted wait gives its lease back to every limit: nothing is left in the bucket or the window", async () => {
    const { clock, store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1, burst: 1 },
      { kind: "window", unit: "count", n: 5, windowMs: 60_000 },
    ]);
    const limiter = open();
    await limiter.wait(1);
    const stop = new AbortController();
    const waiting = limiter.wait(1, stop.signal);
    await clock.advance(100);
    stop.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
    const state = await store.readSet("k");
    // The bucket's debt is gone (level back to what 100 ms gave), the window holds the first item only.
    expect(state!.limits[0]!.level).toBeCloseTo(0.1, 6);
    expect(state!.limits[1]!.level).toBe(4);
  });

  it("closing settles an unused lease down: the window gets back what was not used", async () => {
    const { clock, store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1000, burst: 1000 },
      { kind: "window", unit: "count", n: 10_000, windowMs: 10_000 },
    ]);
    const limiter = open();
    await limiter.wait(1);
    // The lease was 20 ms of the lowest rate (1000/s): 20, of which 1 was used.
    expect((await store.readSet("k"))!.limits[1]!.level).toBe(9980);
    await clock.advance(1);
    await limiter.close();
    expect((await store.readSet("k"))!.limits[1]!.level).toBe(9999);
  });

  it("a wait on a set with a concurrency limit takes a slot and gives it back when it resolves", async () => {
    const { store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1000, burst: 10 },
      { kind: "concurrency", n: 1 },
    ]);
    const limiter = open();
    await limiter.wait(1);
    await limiter.wait(1);
    expect((await store.readSet("k"))!.limits[1]!.level).toBe(1);
  });

  it("acquire holds the slot until release; another process waits for it", async () => {
    const { clock, store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1000, burst: 10 },
      { kind: "concurrency", n: 1 },
    ]);
    const a = open();
    const b = open();
    const held = await a.acquire({ count: 1 });
    expect(held).toBeDefined();
    expect((await store.readSet("k"))!.limits[1]!.level).toBe(0);
    let bGot = false;
    void b.acquire({ count: 1 }).then(() => (bGot = true));
    await runFor(clock, 200);
    expect(bGot).toBe(false);
    await a.release(held);
    await runFor(clock, 100);
    expect(bGot).toBe(true);
  });

  it("a dead holder's slot comes back once its lease ends", async () => {
    const { clock, store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1000, burst: 10 },
      { kind: "concurrency", n: 1 },
    ]);
    // A holder that took its slot and died: never renewed, never released.
    await store.takeSet("k", { count: 1 }, { holder: "dead", leaseMs: 1000 });
    const limiter = open();
    let got = false;
    void limiter.acquire({ count: 1 }).then(() => (got = true));
    await runFor(clock, 900);
    expect(got).toBe(false);
    await runFor(clock, 200);
    expect(got).toBe(true);
  });

  it("a bounded wait refused takes nothing", async () => {
    const { store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 1, burst: 1 },
      { kind: "window", unit: "count", n: 5, windowMs: 60_000 },
    ]);
    const limiter = open();
    expect(await limiter.tryWait(1, 0)).toBe(true);
    expect(await limiter.tryWait(1, 100)).toBe(false);
    const state = await store.readSet("k");
    expect(state!.limits[0]!.level).toBeCloseTo(0, 6);
    expect(state!.limits[1]!.level).toBe(4);
  });

  it("tokens() follows its own leases without a round trip: a bucket as the take left it, a window less what it took", async () => {
    const { clock, open } = await setup([
      { kind: "bucket", unit: "bytes", rate: 1_000_000, burst: 100_000 },
      { kind: "window", unit: "bytes", n: 150_000, windowMs: 1000 },
    ]);
    const limiter = open("bytes");
    expect(limiter.tokens()).toBe(100_000);
    await limiter.wait(90_000);
    // The lease (90 kB, what was missing) left the bucket at 10 kB, the window at 60 kB.
    expect(limiter.tokens()).toBeCloseTo(10_000, 0);
    await clock.advance(30);
    expect(limiter.tokens()).toBeCloseTo(40_000, 0);
    await clock.advance(100);
    expect(limiter.tokens()).toBeCloseTo(60_000, 0);
    await clock.advance(1000);
    expect(limiter.tokens()).toBeCloseTo(100_000, 0);
  });

  it("a poll brings a `key set` made elsewhere while no take does: the rate and the levels follow", async () => {
    const { clock, store, open } = await setup(RATE_AND_WINDOW);
    const limiter = open();
    expect(limiter.rate).toBe(10);
    await store.configureSet("k", [{ kind: "bucket", unit: "count", rate: 2, burst: 1 }, RATE_AND_WINDOW[1]!]);
    await limiter.poll();
    // Within pollMs of the last contact a poll asks nothing.
    expect(limiter.rate).toBe(10);
    await clock.advance(500);
    await limiter.poll();
    expect(limiter.rate).toBe(2);
    expect(limiter.roundTrips).toBe(1);
  });
});

describe("SharedSetLimiter.emptyFor: the server's pause keeps the key's buckets from filling", () => {
  it("puts the pause's debt in every bucket's unit, for every process on the key, and not in a unit a window counts", async () => {
    const { clock, store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 10, burst: 10 },
      { kind: "bucket", unit: "cost", rate: 100, burst: 100 },
      { kind: "window", unit: "tokens", n: 1000, windowMs: 60_000 },
      { kind: "bucket", unit: "tokens", rate: 50, burst: 50 },
    ]);
    const one = open();
    expect(await one.emptyFor(1000)).toBe(true);
    const levels = (await store.readSet("k"))!.limits.map((limit) => limit.level);
    // A second's worth owed by the launches and the cost; the tokens, which a window counts too, left full.
    expect(levels[0]).toBeCloseTo(-10, 6);
    expect(levels[1]).toBeCloseTo(-100, 6);
    expect([levels[2], levels[3]]).toEqual([1000, 50]);
    // Another process's launch waits the pause out: empty at its end, then one at the rate.
    const other = open();
    const startedMs = clock.now();
    const waited = other.wait(1);
    await runFor(clock, 1200);
    await waited;
    expect(clock.now() - startedMs).toBeGreaterThanOrEqual(1100);
    // Pauses that overlap hold until the latest, not their sum.
    await one.emptyFor(500);
    expect((await store.readSet("k"))!.limits[0]!.level).toBeGreaterThan(-10);
    await one.close();
    await other.close();
  });
});

describe("SharedSetLimiter.capLevel: the server's remaining count lowers the key for every process", () => {
  it("lowers every bucket of the unit by what the least of them holds above the count, never raising, and leaves a unit a window counts", async () => {
    const { store, open } = await setup([
      { kind: "bucket", unit: "count", rate: 10, burst: 10 },
      { kind: "bucket", unit: "count", rate: 100, burst: 100 },
      { kind: "bucket", unit: "cost", rate: 50, burst: 50 },
      { kind: "window", unit: "cost", n: 1000, windowMs: 60_000 },
    ]);
    const one = open();
    // Both launch buckets full (10 and 100): the least holds 10, the server says 3 are left, so each gives up 7.
    expect(await one.capLevel("count", 3)).toBe(true);
    const levels = () => store.readSet("k").then((state) => state!.limits.map((limit) => limit.level));
    expect((await levels()).slice(0, 2).map((level) => Math.round(level * 1000) / 1000)).toEqual([3, 93]);
    // A count above what is held changes nothing, and needs no round trip: the level as last seen (3, refilled
    // since at most to the burst) cannot be above it.
    const takes = vi.spyOn(store, "takeSet");
    expect(await one.capLevel("count", 5)).toBe(false);
    expect(await one.capLevel("count", 100)).toBe(false);
    expect(takes).not.toHaveBeenCalled();
    takes.mockRestore();
    expect((await levels())[0]).toBeCloseTo(3, 6);
    // The cost, which a window counts too, is left whole.
    expect(await one.capLevel("cost", 0)).toBe(false);
    expect((await levels())[2]).toBe(50);
    // Another process on the key sees the lowered level at its next take.
    const other = open();
    expect(await other.tryWait(4, 0)).toBe(false);
    expect(await other.tryWait(3, 0)).toBe(true);
    await one.close();
    await other.close();
  });
});
