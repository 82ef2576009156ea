import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { eventLoopTurns } from "../../src/stream/event-loop-turns.js";
import type { NativeIo } from "../../src/stream/native-io.js";
import { SpliceProgress, spliceThrough, SpliceUnsupported } from "../../src/stream/splice-copy.js";
import { Throttle } from "../../src/stream/throttle.js";

const EAGAIN = 11;
const EINVAL = 22;

/**
 * A kernel stand-in: an input of `inputBytes`, moved on request. `stalls` says which calls
 * of spliceNow find a pipe empty or full (EAGAIN), so the move goes to the thread pool.
 */
function fakeIo(inputBytes: number, options: { stalls?: (call: number) => boolean; refuse?: boolean; unknownReadable?: boolean } = {}) {
  let left = inputBytes;
  const calls: Array<{ how: "now" | "pool"; asked: number; moved: number }> = [];
  const move = (asked: number) => {
    const moved = Math.min(asked, left);
    left -= moved;
    return moved;
  };
  const io: NativeIo = {
    pipeSize: () => 65536,
    bytesReadable: () => (options.unknownReadable ? -25 : left > 0 ? left : -61),
    setPipeSize: (_fd, bytes) => bytes,
    spliceNow(_in, _out, bytes) {
      if (options.refuse) return [0, -EINVAL, false];
      if (options.stalls?.(calls.length)) {
        calls.push({ how: "now", asked: bytes, moved: 0 });
        return [0, -EAGAIN, false];
      }
      const moved = move(bytes);
      calls.push({ how: "now", asked: bytes, moved });
      return [moved, 0, moved === 0];
    },
    splice(_in, _out, bytes, progress, done) {
      const moved = move(bytes);
      calls.push({ how: "pool", asked: bytes, moved });
      progress[0] = moved;
      setImmediate(() => done(0, moved, moved < bytes));
    },
  };
  return { io, calls };
}

async function copy(io: NativeIo, throttle: Throttle, clock: FakeClock) {
  let moved = 0;
  let done = false;
  const copying = spliceThrough(io, 3, 1, { throttle, moving: new SpliceProgress(), onMoved: (bytes) => (moved += bytes), turns: eventLoopTurns() });
  copying.then(
    () => (done = true),
    () => (done = true),
  );
  while (!done) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await clock.tick(1);
  }
  await copying;
  return moved;
}

describe("spliceThrough", () => {
  it("asks the kernel for exactly each granted slice (10 ms of the rate), and ends at the end of the input", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 100_000, burst: 10_000, clock }) });
    const { io, calls } = fakeIo(25_500);
    expect(await copy(io, throttle, clock)).toBe(25_500);
    // Slices of 1,000, and the 500 left: paid for what is there, not a whole slice.
    expect(calls.map((call) => call.asked)).toEqual([...Array(25).fill(1000), 500]);
    expect(throttle.stats.bytes).toBe(25_500);
    // 25,500 bytes through a 10,000-byte burst at 100,000 B/s take about 155 ms.
    expect(clock.now()).toBeGreaterThanOrEqual(155);
    expect(clock.now()).toBeLessThanOrEqual(165);
  });

  it("where the input cannot say what it holds, pays a whole slice for the last bytes and asks for the rest once more", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 100_000, burst: 10_000, clock }) });
    const { io, calls } = fakeIo(2500, { unknownReadable: true });
    expect(await copy(io, throttle, clock)).toBe(2500);
    expect(calls.map((call) => call.asked)).toEqual([1000, 1000, 1000, 500]);
  });

  it("moves the rest of a slice in the thread pool when a pipe would block, and counts it once", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: 100_000, burst: 10_000, clock }) });
    const { io, calls } = fakeIo(5000, { stalls: (call) => call % 2 === 0 });
    expect(await copy(io, throttle, clock)).toBe(5000);
    expect(calls.filter((call) => call.how === "pool").length).toBeGreaterThan(0);
    expect(calls.reduce((sum, call) => sum + call.moved, 0)).toBe(5000);
  });

  it("unlimited, asks for 4 MiB at a time", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: Infinity, burst: 1, clock }) });
    const { io, calls } = fakeIo(9 * 1024 * 1024);
    expect(await copy(io, throttle, clock)).toBe(9 * 1024 * 1024);
    expect(calls[0]!.asked).toBe(4 * 1024 * 1024);
  });

  // Paused, what a pipe pays ahead for an empty input is what is left of the key's burst, which
  // nothing refills: a producer that then sends 10 bytes and ends would waste the rest.
  it("paused (rate 0), pays for one byte while the input is empty, then for what it holds", async () => {
    const clock = new FakeClock();
    const bucket = new TokenBucket({ rate: 1000, burst: 100, clock });
    bucket.setRate(0);
    const throttle = new Throttle({ limiter: bucket });
    // Nothing at first; 10 bytes once a move waits for them in the thread pool; then the end.
    let state: "empty" | number | "ended" = "empty";
    const calls: number[] = [];
    const move = (bytes: number): number => {
      const moved = Math.min(bytes, state as number);
      calls.push(bytes);
      state = (state as number) - moved || "ended";
      return moved;
    };
    const io: NativeIo = {
      ...fakeIo(0).io,
      bytesReadable: () => (state === "empty" ? 0 : state === "ended" ? -61 : state),
      spliceNow: (_in, _out, bytes) => (typeof state === "number" ? [move(bytes), 0, false] : [0, state === "empty" ? -EAGAIN : 0, state === "ended"]),
      splice(_in, _out, bytes, progress, done) {
        if (state === "empty") state = 10;
        const moved = state === "ended" ? 0 : move(bytes);
        progress[0] = moved;
        setImmediate(() => done(0, moved, moved === 0));
      },
    };
    expect(await copy(io, throttle, clock)).toBe(10);
    expect(calls).toEqual([1, 9]);
    expect(bucket.tokens()).toBe(90);
  });

  it("says SpliceUnsupported when the first move is refused (EINVAL), having moved nothing", async () => {
    const clock = new FakeClock();
    const throttle = new Throttle({ limiter: new TokenBucket({ rate: Infinity, burst: 1, clock }) });
    const { io } = fakeIo(100, { refuse: true });
    await expect(copy(io, throttle, clock)).rejects.toBeInstanceOf(SpliceUnsupported);
  });
});
