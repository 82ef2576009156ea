import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { connectTo, download, endlessBackend, expectArrivalsInside, mergedArrivals, startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-tcp-sets");
const KiB = 1024;
const MiB = 1024 * 1024;

const FAST = { rate: MiB, burst: 64 * KiB };
const SLOW = { rate: 256 * KiB, burst: 256 * KiB };
const SET_ARGS = ["--rate", "1mb", "--burst", "64k", "--rate", "256k", "--burst", "256k"];
const SECONDS = 2.5;

describe("tbucket proxy (TCP) with a set of limits each way, in real time", () => {
  it("--rate 1mb --burst 64k --rate 256k --burst 256k: the first holds the first instant, the second the rest", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, ...SET_ARGS]);
    const originMs = performance.now();
    const [received] = await download([await connectTo(proxy.port)], SECONDS * 1000);
    await stopProxy(proxy);
    expectArrivalsInside(received!.arrivals, [FAST, SLOW], originMs);
    const total = received!.data.length;
    // The second bucket binds over the run: far below the first's 64k + 1mb × t, at least 80% of its own.
    expect(total).toBeLessThan(FAST.burst + FAST.rate * SECONDS * 0.6);
    expect(total).toBeGreaterThanOrEqual((SLOW.burst + SLOW.rate * SECONDS) * 0.8);
  });

  // Two proxies on one key share its set: what both clients get together stays inside the set's envelope.
  async function sharedRun(store: string, env: NodeJS.ProcessEnv): Promise<void> {
    const { port } = await endlessBackend();
    const args = ["--to", `127.0.0.1:${port}`, ...SET_ARGS, "--key", "pair", "--store", store];
    const a = await startProxy(args, { env });
    const b = await startProxy(args, { env });
    const originMs = performance.now();
    const both = await download([await connectTo(a.port), await connectTo(b.port)], SECONDS * 1000);
    await stopProxy(a);
    await stopProxy(b);
    // Each process may hold one lease besides what it passed on: about 20 ms of the lowest rate.
    expectArrivalsInside(mergedArrivals(both), [FAST, SLOW], originMs, 2 * SLOW.rate * 0.02);
    const total = both[0]!.data.length + both[1]!.data.length;
    expect(total).toBeGreaterThanOrEqual((SLOW.burst + SLOW.rate * SECONDS) * 0.7);
    // Both got a share.
    expect(Math.min(both[0]!.data.length, both[1]!.data.length)).toBeGreaterThan(0);
  }

  it("--key on SQLite: two proxies hold the set's envelope together", async () => {
    const dir = tempDir();
    await sharedRun(`sqlite:${join(dir, "buckets.db")}`, { XDG_STATE_HOME: dir });
  });

  it("--key on Redis: two proxies hold the set's envelope together", async () => {
    const redis = await startRedisServer();
    try {
      await sharedRun(redis.url, {});
    } finally {
      await redis.stop();
    }
  });
});
