import { beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { LimitSetLimiter } from "../../src/core/limit-set-limiter.js";
import { BucketPool, byteBucket, type LimiterFactory, privateBuckets, singleBucket } from "../../src/proxy/bucket-pool.js";

const spec = byteBucket(1000, 100);

describe("BucketPool", () => {
  let clock: FakeClock;
  let opened: string[];
  let closed: string[];
  const open: LimiterFactory = (key, direction, bucket) => {
    opened.push(`${direction}:${key}`);
    return {
      limiter: new TokenBucket({ rate: singleBucket(bucket)!.rate, burst: singleBucket(bucket)!.burst, clock }),
      close: async () => void closed.push(`${direction}:${key}`),
    };
  };
  beforeEach(() => {
    clock = new FakeClock();
    opened = [];
    closed = [];
  });

  it("gives every connection of the link the same buckets, and keeps them", async () => {
    const pool = new BucketPool({ scope: "link", up: spec, down: spec, open, clock });
    const first = await pool.acquire("127.0.0.1");
    const second = await pool.acquire("127.0.0.2");
    expect(second.down).toBe(first.down);
    expect(second.up).toBe(first.up);
    first.release();
    second.release();
    expect(pool.liveKeys).toBe(1);
    expect(opened).toEqual(["up:", "down:"]);
  });

  it("gives each connection its own buckets, dropped with it", async () => {
    const pool = new BucketPool({ scope: "connection", down: spec, open, clock });
    const first = await pool.acquire("127.0.0.1");
    const second = await pool.acquire("127.0.0.1");
    expect(second.down).not.toBe(first.down);
    expect(first.up).toBeUndefined();
    first.release();
    await clock.advance(0);
    expect(pool.liveKeys).toBe(1);
    expect(closed).toEqual(["down:#1"]);
  });

  it("shares a client's buckets between its connections, and drops them once it has none open and they are full", async () => {
    const pool = new BucketPool({ scope: "client", down: spec, open, clock });
    const first = await pool.acquire("127.0.0.1");
    const second = await pool.acquire("127.0.0.1");
    const other = await pool.acquire("127.0.0.2");
    expect(second.down).toBe(first.down);
    expect(other.down).not.toBe(first.down);
    expect(first.down!.tokens!()).toBe(100);
    first.release();
    // Kept while a connection of the client is open, however long.
    await clock.advance(100);
    expect(pool.liveKeys).toBe(2);
    // 60 of 100 bytes spent: full again 60 ms later, at 1000 B/s.
    (second.down as TokenBucket).reserve(60);
    second.release();
    other.release();
    await clock.advance(0);
    // The other client's bucket was full: dropped at once; this one waits to refill.
    expect(pool.liveKeys).toBe(1);
    await clock.advance(59);
    expect(pool.liveKeys).toBe(1);
    await clock.advance(2);
    expect(pool.liveKeys).toBe(0);
    expect(closed.sort()).toEqual(["down:127.0.0.1", "down:127.0.0.2"]);
  });

  it("keeps a client's bucket when it comes back before the bucket refilled", async () => {
    const pool = new BucketPool({ scope: "client", down: spec, open, clock });
    const first = await pool.acquire("127.0.0.1");
    (first.down as TokenBucket).reserve(100);
    first.release();
    await clock.advance(50);
    const again = await pool.acquire("127.0.0.1");
    expect(again.down).toBe(first.down);
    expect(again.down!.tokens!()).toBeCloseTo(50);
    again.release();
    expect(closed).toEqual([]);
  });

  it("keeps a paused client's empty bucket (rate 0) without holding up the others' drops", async () => {
    const paused: LimiterFactory = (key, direction, bucket) => (key === "10.0.0.1" ? { limiter: new TokenBucket({ rate: 0, burst: 100, clock }), close: async () => void closed.push(key) } : open(key, direction, bucket));
    const pool = new BucketPool({ scope: "client", down: spec, open: paused, clock });
    const stuck = await pool.acquire("10.0.0.1");
    (stuck.down as TokenBucket).reserve(50);
    stuck.release();
    const other = await pool.acquire("10.0.0.2");
    (other.down as TokenBucket).reserve(60);
    other.release();
    await clock.advance(61);
    expect(pool.liveKeys).toBe(1);
    expect(closed).toEqual(["down:10.0.0.2"]);
    await clock.advance(60_000);
    expect(pool.liveKeys).toBe(1);
  });

  it("closes every bucket, in use or refilling, when it closes", async () => {
    const pool = new BucketPool({ scope: "client", down: spec, open, clock });
    const held = await pool.acquire("127.0.0.1");
    const left = await pool.acquire("127.0.0.2");
    (left.down as TokenBucket).reserve(60);
    left.release();
    await pool.close();
    expect(closed.sort()).toEqual(["down:127.0.0.1", "down:127.0.0.2"]);
    expect(pool.liveKeys).toBe(0);
    expect(clock.pendingSleeps).toBe(0);
    held.release();
  });
});

describe("BucketPool with byte windows", () => {
  it("gives each direction a set of its bucket and the windows, and keeps a client's until every window is empty", async () => {
    const clock = new FakeClock();
    const windowed = { limits: [...byteBucket(1000, 100).limits, { kind: "window" as const, unit: "bytes" as const, n: 150, windowMs: 1000 }] };
    const pool = new BucketPool({ scope: "client", up: windowed, down: windowed, open: privateBuckets(clock), clock });
    const buckets = await pool.acquire("127.0.0.1");
    const down = buckets.down as LimitSetLimiter;
    expect(down).toBeInstanceOf(LimitSetLimiter);
    expect(buckets.up).not.toBe(down);
    // 100 now (the burst), then the window lets only 50 more within the second.
    expect(await down.tryWait(100, 0)).toBe(true);
    clock.set(100);
    expect(await down.tryWait(60, 0)).toBe(false);
    expect(down.set.limitedBy).toEqual([2]);
    expect(await down.tryWait(50, 0)).toBe(true);
    buckets.release();
    // The bucket is full again at 200 ms; the window still holds the records until 1.1 s.
    await clock.advance(500);
    expect(pool.liveKeys).toBe(1);
    await clock.advance(1000);
    expect(pool.liveKeys).toBe(0);
  });
});
