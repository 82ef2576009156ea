import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sleep } from "../helpers/cli.js";
import { connectTo, download, endlessBackend, expectArrivalsInside, mergedArrivals, type Received, startBackend, startProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-timing");

const RATE = 256 * 1024;
const BURST = 32 * 1024;
const SECONDS = 2;

describe("tbucket proxy (TCP): what clients receive stays inside burst + rate × t", () => {
  it("--per link: one client, then two sharing the link's rate", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k"]);
    const aloneFromMs = performance.now();
    const [alone] = await download([await connectTo(proxy.port)], SECONDS * 1000);
    expectArrivalsInside(alone!.arrivals, [{ rate: RATE, burst: BURST }], aloneFromMs);
    expect(alone!.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);

    const pairFromMs = performance.now();
    const pair = await download([await connectTo(proxy.port), await connectTo(proxy.port)], SECONDS * 1000);
    expectArrivalsInside(mergedArrivals(pair), [{ rate: RATE, burst: BURST }], pairFromMs);
    const total = pair[0]!.data.length + pair[1]!.data.length;
    expect(total).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
    // Turns are first come, first served: neither starves.
    for (const one of pair) expect(one.data.length).toBeGreaterThanOrEqual(total * 0.25);
  });

  it("--per connection: each connection gets the whole rate", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k", "--per", "connection"]);
    const pair = await download([await connectTo(proxy.port), await connectTo(proxy.port)], SECONDS * 1000);
    for (const one of pair) {
      expectArrivalsInside(one.arrivals, [{ rate: RATE, burst: BURST }]);
      expect(one.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
    }
  });

  it("--per client: each client address gets the rate, shared by its own connections", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k", "--per", "client"]);
    const sockets = [await connectTo(proxy.port, "127.0.0.2"), await connectTo(proxy.port, "127.0.0.3"), await connectTo(proxy.port, "127.0.0.3")];
    const [first, second, third] = await download(sockets, SECONDS * 1000);
    expectArrivalsInside(first!.arrivals, [{ rate: RATE, burst: BURST }]);
    expect(first!.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
    const shared = mergedArrivals([second!, third!]);
    expectArrivalsInside(shared, [{ rate: RATE, burst: BURST }]);
    expect(shared.at(-1)!.total).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
  });

  it("two proxies on one --key share the link's rate through the store", async () => {
    const { port } = await endlessBackend();
    const dir = tempDir();
    const args = ["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k", "--key", "fleet", "--store", `sqlite:${join(dir, "buckets.db")}`];
    const first = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    const second = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    const pair = await download([await connectTo(first.port), await connectTo(second.port)], SECONDS * 1000);
    // Each proxy may hold one lease (20 ms of the rate) beyond the bucket.
    expectArrivalsInside(mergedArrivals(pair), [{ rate: RATE, burst: BURST + 2 * RATE * 0.02 }]);
    const total = pair[0]!.data.length + pair[1]!.data.length;
    expect(total).toBeGreaterThanOrEqual(RATE * SECONDS * 0.7);
    for (const one of pair) expect(one.data.length).toBeGreaterThanOrEqual(total * 0.2);
  });

  it("--up shapes what clients send, and the backend receives it inside the envelope", async () => {
    const arrivals: Received["arrivals"] = [];
    let total = 0;
    const backend = await startBackend((socket) => {
      socket.on("data", (chunk: Buffer) => arrivals.push({ atMs: performance.now(), total: (total += chunk.length) }));
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--up", "256k", "--burst", "32k"]);
    const client = await connectTo(proxy.port);
    const block = Buffer.alloc(64 * 1024, 0x63);
    const feed = () => {
      while (!client.destroyed && client.write(block));
    };
    client.on("drain", feed);
    client.on("error", () => {});
    feed();
    await sleep(SECONDS * 1000);
    client.destroy();
    expectArrivalsInside(arrivals, [{ rate: RATE, burst: BURST }]);
    expect(total).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
  });
});
