import type { Socket } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sleep } from "../helpers/cli.js";
import { type Backend, connectTo, type Received, receiveAll, startBackend, startProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-timing");

/** A backend that sends to each connection as fast as it is read, until the connection goes. */
async function endlessBackend(): Promise<Backend> {
  const block = Buffer.alloc(64 * 1024, 0x62);
  const backend = await startBackend((socket) => {
    const feed = () => {
      while (!socket.destroyed && socket.write(block));
    };
    socket.on("drain", feed);
    socket.on("data", () => {});
    feed();
  });
  return backend;
}

/** Reads from `sockets` together for `ms`, then closes them, and returns what each received. */
async function download(sockets: Socket[], ms: number): Promise<Received[]> {
  const receiving = sockets.map((socket) => receiveAll(socket));
  await sleep(ms);
  for (const socket of sockets) socket.destroy();
  return Promise.all(receiving);
}

/** A reader that wakes late on a loaded machine sees a bunch: 100 ms of the rate, far below what an unshaped link would show. */
const toleranceBytes = (rate: number) => rate * 0.1;

/**
 * Every run of arrivals holds at most burst + rate × the time it spans (with the tolerance). A run
 * spans from the read before it (its bytes were sent after that read took what was there; for the
 * first, from `originMs`, before connecting): a reader that wakes late gets what was sent meanwhile.
 */
function expectInsideEnvelope(arrivals: Received["arrivals"], rate: number, burst: number, originMs = arrivals[0]?.atMs ?? 0): void {
  for (let from = 0; from < arrivals.length; from++) {
    const before = from === 0 ? 0 : arrivals[from - 1]!.total;
    const startMs = from === 0 ? originMs : arrivals[from - 1]!.atMs;
    for (let to = from; to < arrivals.length; to++) {
      const bytes = arrivals[to]!.total - before;
      const seconds = (arrivals[to]!.atMs - startMs) / 1000;
      if (bytes > burst + rate * seconds + toleranceBytes(rate)) {
        throw new Error(`${bytes} bytes in ${seconds.toFixed(3)} s, above ${burst} + ${rate} × t`);
      }
    }
  }
}

/** The arrivals of several sockets as one stream, in time order. */
function merged(received: Received[]): Received["arrivals"] {
  const chunks = received.flatMap((one) => one.arrivals.map((arrival, index) => ({ atMs: arrival.atMs, bytes: arrival.total - (one.arrivals[index - 1]?.total ?? 0) })));
  chunks.sort((a, b) => a.atMs - b.atMs);
  let total = 0;
  return chunks.map((chunk) => ({ atMs: chunk.atMs, total: (total += chunk.bytes) }));
}

const RATE = 256 * 1024;
const BURST = 32 * 1024;
const SECONDS = 2;

describe("tbucket proxy (TCP): what clients receive stays inside burst + rate × t", () => {
  it("--per link: one client, then two sharing the link's rate", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k"]);
    const aloneFromMs = performance.now();
    const [alone] = await download([await connectTo(proxy.port)], SECONDS * 1000);
    expectInsideEnvelope(alone!.arrivals, RATE, BURST, aloneFromMs);
    expect(alone!.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);

    const pairFromMs = performance.now();
    const pair = await download([await connectTo(proxy.port), await connectTo(proxy.port)], SECONDS * 1000);
    expectInsideEnvelope(merged(pair), RATE, BURST, pairFromMs);
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
      expectInsideEnvelope(one.arrivals, RATE, BURST);
      expect(one.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
    }
  });

  it("--per client: each client address gets the rate, shared by its own connections", async () => {
    const { port } = await endlessBackend();
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "256k", "--burst", "32k", "--per", "client"]);
    const sockets = [await connectTo(proxy.port, "127.0.0.2"), await connectTo(proxy.port, "127.0.0.3"), await connectTo(proxy.port, "127.0.0.3")];
    const [first, second, third] = await download(sockets, SECONDS * 1000);
    expectInsideEnvelope(first!.arrivals, RATE, BURST);
    expect(first!.data.length).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
    const shared = merged([second!, third!]);
    expectInsideEnvelope(shared, RATE, BURST);
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
    expectInsideEnvelope(merged(pair), RATE, BURST + 2 * RATE * 0.02);
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
    expectInsideEnvelope(arrivals, RATE, BURST);
    expect(total).toBeGreaterThanOrEqual(RATE * SECONDS * 0.8);
  });
});
