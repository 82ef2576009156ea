import { describe, expect, it, vi } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import type { BucketStore } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { SharedLimiter } from "../../src/store/shared-limiter.js";
import { Throttle } from "../../src/stream/throttle.js";

// A paused key (rate 0) that still held tokens sent them one byte per take, since the slice was
// sized from the rate: a 100 KiB burst was 102,400 round trips to the store (2.7 s on SQLite).

const T0 = 1_700_000_000_000;
const KiB = 1024;
const BURST = 100 * KiB;
/** What one read of a pipe gives at most. */
const READ_BYTES = 64 * KiB;

/** The store, counting the round trips the limiter makes to it (takes, and reads of its settings). */
function counting(store: BucketStore): { store: BucketStore; calls: { takes: number; reads: number } } {
  const calls = { takes: 0, reads: 0 };
  const counted: BucketStore = {
    url: store.url,
    take: (...args) => (calls.takes++, store.take(...args)),
    read: (...args) => (calls.reads++, store.read(...args)),
    cancel: (...args) => store.cancel(...args),
    configure: (...args) => store.configure(...args),
    list: () => store.list(),
    delete: (key) => store.delete(key),
    close: () => store.close(),
  };
  return { store: counted, calls };
}

/** Feeds `reads` to the throttle as a pipe would, one read after another; counts what went out. */
function feed(throttle: Throttle, reads: number[]): { sent: () => number; done: () => boolean } {
  let sent = 0;
  let done = false;
  void (async () => {
    for (const bytes of reads) await throttle.pass(Buffer.alloc(bytes), (segment) => void (sent += segment.length));
    done = true;
  })();
  return { sent: () => sent, done: () => done };
}

async function runFor(clock: FakeClock, ms: number, stepMs = 10): Promise<void> {
  for (let left = ms; left > 0; left -= stepMs) await clock.advance(stepMs);
}

describe("a paused bucket that still holds tokens", () => {
  it("a shared key sends its 100 KiB burst in a few takes, then waits for a rate without asking the store again and again", async () => {
    const clock = new FakeClock(T0);
    const { store, calls } = counting(new MemoryStore({ clock }));
    await store.configure("k", { rate: 1024 * KiB, burst: BURST, kind: "bytes" });
    const config = await store.configure("k", { rate: 0, burst: BURST, kind: "bytes" });
    const limiter = new SharedLimiter({ store, key: "k", config, clock, pollMs: 500 });
    const throttle = new Throttle({ limiter, clock, oneReadBytes: READ_BYTES });

    const pipe = feed(throttle, [READ_BYTES, BURST - READ_BYTES, READ_BYTES]);
    await clock.advance(0);
    expect(pipe.sent()).toBe(BURST);
    // One take per read, and one for the wait that begins when the bucket is empty.
    expect(calls.takes).toBeLessThanOrEqual(3);

    // Paused: nothing goes, and the store is asked only every poll (500 ms) for a new rate.
    const before = { ...calls };
    await runFor(clock, 5000);
    expect(pipe.sent()).toBe(BURST);
    expect(calls.takes - before.takes).toBe(0);
    expect(calls.reads - before.reads).toBeLessThanOrEqual(11);

    // A rate resumes it: the last read goes out at that rate, starting within a poll.
    await store.configure("k", { rate: 1024 * KiB, burst: BURST, kind: "bytes" });
    await runFor(clock, 1000);
    expect(pipe.done()).toBe(true);
    expect(pipe.sent()).toBe(BURST + READ_BYTES);
    await limiter.close();
  });

  it("a shared key paused and drained before the pipe starts waits on one token, so a rate resumes it at once", async () => {
    const clock = new FakeClock(T0);
    const memory = new MemoryStore({ clock });
    await memory.configure("k", { rate: 0, burst: BURST, kind: "bytes" });
    await memory.take("k", BURST);
    const state = await memory.read("k");
    const { store, calls } = counting(memory);
    const limiter = new SharedLimiter({ store, key: "k", config: state!, clock, pollMs: 500 });
    const throttle = new Throttle({ limiter, clock, oneReadBytes: READ_BYTES });
    const pipe = feed(throttle, [READ_BYTES]);
    await runFor(clock, 2000);
    expect([pipe.sent(), calls.takes]).toEqual([0, 1]);
    // At 64 KiB/s, a 64 KiB slice owed from the pause would hold the first byte back a second.
    await store.configure("k", { rate: 64 * KiB, burst: BURST, kind: "bytes" });
    const resumedAtMs = clock.now();
    while (pipe.sent() === 0 && clock.now() - resumedAtMs < 2000) await clock.advance(10);
    expect(clock.now() - resumedAtMs).toBeLessThanOrEqual(500 + 20);
    await runFor(clock, 1500);
    expect(pipe.done()).toBe(true);
    await limiter.close();
  });

  it("a private bucket (the library's setRate(0)) sends what it holds in slices as large as the reads", async () => {
    const clock = new FakeClock(T0);
    const bucket = new TokenBucket({ rate: 1024 * KiB, burst: BURST, clock });
    bucket.setRate(0);
    const waits = vi.spyOn(bucket, "wait");
    const throttle = new Throttle({ limiter: bucket, clock, oneReadBytes: READ_BYTES });
    const pipe = feed(throttle, [READ_BYTES, BURST - READ_BYTES, 1]);
    await runFor(clock, 1000);
    expect(pipe.sent()).toBe(BURST);
    expect(pipe.done()).toBe(false);
    expect(waits.mock.calls.length).toBeLessThanOrEqual(3);
  });
});
