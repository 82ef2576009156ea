import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { byteBucket, type LimiterFactory, type OpenedLimiter, openPrivateBucket } from "../../src/proxy/bucket-pool.js";
import { startTcpProxy, type TcpProxy } from "../../src/proxy/tcp-proxy.js";
import { startBackend } from "../helpers/proxy.js";

// A connection held by --connections whose client goes at the moment its turn
// comes, or while its buckets or its backend are being got: every path ends
// with the connection no longer counted and both its sockets closed.

let proxy: TcpProxy | undefined;
afterEach(async () => {
  await proxy?.close(0);
  proxy = undefined;
});

/** Lets the event loop go round a few times: what the kernel has for the proxy's sockets is read. */
async function turns(count = 5): Promise<void> {
  for (let turn = 0; turn < count; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** Connects and resolves once connected; the socket's 'close' is told by `closed`. */
async function client(port: number): Promise<{ socket: Socket; closed: Promise<string> }> {
  const socket = connect({ host: "127.0.0.1", port });
  socket.on("error", () => {});
  let data = "";
  socket.on("data", (chunk) => (data += chunk));
  const closed = new Promise<string>((resolve) => socket.on("close", () => resolve(data)));
  await new Promise((resolve) => socket.once("connect", resolve));
  return { socket, closed };
}

/** Starts a proxy of 1 connection a second (burst 1, --max-wait 1s) in front of a backend that says "hi" and ends. */
async function start(openBucket?: LimiterFactory) {
  const clock = new FakeClock(0);
  // Half-open allowed: the backend's side stays open until the proxy passes the client's end on.
  const backend = await startBackend((socket) => socket.end("hi"));
  proxy = await startTcpProxy({
    listen: { host: "127.0.0.1", port: 0 },
    to: { host: "127.0.0.1", port: backend.port },
    up: byteBucket(1e6, 1e6),
    per: "connection",
    openBucket,
    connections: { perSecond: 1, burst: 1, maxWaitMs: 1000 },
    clock,
  });
  const running = proxy;
  // The first takes the burst; the one after it is held for a second.
  const first = await client(running.address.port);
  first.socket.end();
  expect(await first.closed).toBe("hi");
  const held = await client(running.address.port);
  await vi.waitFor(() => expect(clock.pendingSleeps).toBe(1));
  return { clock, backend, proxy: running, held };
}

describe("TCP proxy: a held connection whose client goes as its turn comes", () => {
  it("closes at the instant of its turn: not counted open, both sockets closed", async () => {
    const { clock, backend, proxy, held } = await start();
    held.socket.destroy();
    await clock.advance(1000);
    await held.closed;
    await vi.waitFor(() => expect(proxy.stats.open).toBe(0), { timeout: 2000 });
    expect(backend.sockets.every((socket) => socket.destroyed)).toBe(true);
  });

  it("closes while its buckets are being opened, after its turn: the backend is told its end, and nothing is left open", async () => {
    let open: (() => void) | undefined;
    let opens = 0;
    const { clock, backend, proxy, held } = await start((key, direction, spec) => {
      const bucket = openPrivateBucket(key, direction, spec);
      // The second connection's bucket comes when the test says.
      if (++opens < 2) return bucket;
      return new Promise<OpenedLimiter>((resolve) => (open = () => resolve(bucket)));
    });
    await clock.advance(1000);
    await vi.waitFor(() => expect(open).toBeDefined());
    held.socket.destroy();
    await held.closed;
    // The proxy reads the client's end while the bucket is still being opened.
    await turns();
    open!();
    await vi.waitFor(() => expect(proxy.stats.open).toBe(0), { timeout: 2000 });
    expect(proxy.stats.accepted).toBe(2);
    expect(backend.sockets).toHaveLength(2);
    expect(backend.sockets.every((socket) => socket.destroyed)).toBe(true);
  });
});
