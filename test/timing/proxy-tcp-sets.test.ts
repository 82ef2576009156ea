import type { Socket } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sleep } from "../helpers/cli.js";
import { type Backend, connectTo, type Received, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-tcp-sets");
const KiB = 1024;
const MiB = 1024 * 1024;

/** A backend that sends to each connection as fast as it is read, until the connection goes. */
async function endlessBackend(): Promise<Backend> {
  const block = Buffer.alloc(64 * KiB, 0x62);
  return startBackend((socket) => {
    const feed = () => {
      while (!socket.destroyed && socket.write(block));
    };
    socket.on("drain", feed);
    socket.on("data", () => {});
    feed();
  });
}

/** Reads from `sockets` together for `ms`, then closes them, and returns what each received. */
async function download(sockets: Socket[], ms: number): Promise<Received[]> {
  const receiving = sockets.map((socket) => receiveAll(socket));
  await sleep(ms);
  for (const socket of sockets) socket.destroy();
  return Promise.all(receiving);
}

/** The arrivals of several sockets as one stream, in time order. */
function merged(received: Received[]): Received["arrivals"] {
  const chunks = received.flatMap((one) => one.arrivals.map((arrival, index) => ({ atMs: arrival.atMs, bytes: arrival.total - (one.arrivals[index - 1]?.total ?? 0) })));
  chunks.sort((a, b) => a.atMs - b.atMs);
  let total = 0;
  return chunks.map((chunk) => ({ atMs: chunk.atMs, total: (total += chunk.bytes) }));
}

interface Bucket {
  rate: number;
  burst: number;
}

/**
 * Every run of arrivals holds at most burst + rate × its span for each bucket of the set, with a
 * tolerance of 100 ms of the rate (and `slackBytes`: the leases other processes hold). A run spans
 * from the read before it (its bytes were sent after that read; for the first, from `originMs`,
 * before connecting): a reader that wakes late gets what was sent meanwhile, never more.
 */
function expectInsideSet(arrivals: Received["arrivals"], buckets: readonly Bucket[], originMs: number, slackBytes = 0): void {
  for (let from = 0; from < arrivals.length; from++) {
    const before = from === 0 ? 0 : arrivals[from - 1]!.total;
    const startMs = from === 0 ? originMs : arrivals[from - 1]!.atMs;
    for (let to = from; to < arrivals.length; to++) {
      const bytes = arrivals[to]!.total - before;
      const seconds = (arrivals[to]!.atMs - startMs) / 1000;
      for (const { rate, burst } of buckets) {
        if (bytes > burst + rate * seconds + rate * 0.1 + slackBytes) throw new Error(`${bytes} bytes in ${seconds.toFixed(3)} s, above ${burst} + ${rate} × t`);
      }
    }
  }
}

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
    expectInsideSet(received!.arrivals, [FAST, SLOW], originMs);
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
    expectInsideSet(merged(both), [FAST, SLOW], originMs, 2 * SLOW.rate * 0.02);
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
