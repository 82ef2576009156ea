import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach } from "vitest";
import { type Running, sleep, type StartOptions, startCli } from "./cli.js";

/** A TCP server on 127.0.0.1 at a port the system chose, for a proxy to forward to. */
export interface Backend {
  readonly port: number;
  /** Every connection it accepted, in order. */
  readonly sockets: Socket[];
  close(): Promise<void>;
}

/** Starts a backend that runs `handle` on each connection (half-open allowed, as the proxy's); closed after the test. */
export async function startBackend(handle: (socket: Socket) => void): Promise<Backend> {
  const sockets: Socket[] = [];
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    sockets.push(socket);
    socket.on("error", () => {});
    handle(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  const backend: Backend = {
    port,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  backends.push(backend);
  return backend;
}

// Every backend a test starts is closed after it.
const backends: Backend[] = [];
afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

/** An echo backend: sends back what it reads, and ends when the client does. */
export function echo(socket: Socket): void {
  socket.pipe(socket);
}

export interface RunningProxy {
  readonly running: Running;
  /** The port it listens on, as it said on standard error. */
  readonly port: number;
  /** The metrics port, when --metrics was given. */
  readonly metricsPort: number | undefined;
}

const started: Running[] = [];
afterEach(() => {
  for (const running of started.splice(0)) if (!running.done()) running.signal("SIGKILL");
});

/** Starts `tbucket proxy --listen 127.0.0.1:0 args...` and waits for the line that says where it listens. */
export async function startProxy(args: readonly string[], options: StartOptions = {}): Promise<RunningProxy> {
  const running = startCli(["proxy", "--listen", "127.0.0.1:0", ...args], options);
  started.push(running);
  const deadline = performance.now() + 10_000;
  for (;;) {
    const match = /listening on 127\.0\.0\.1:(\d+)/.exec(running.stderr());
    if (match) {
      const metrics = /metrics on http:\/\/127\.0\.0\.1:(\d+)/.exec(running.stderr());
      return { running, port: Number(match[1]), metricsPort: metrics ? Number(metrics[1]) : undefined };
    }
    if (running.done() || performance.now() > deadline) {
      throw new Error(`tbucket proxy did not say where it listens; stderr: ${running.stderr()}`);
    }
    await sleep(20);
  }
}

/** Connects to 127.0.0.1:`port` (from `localAddress`, another loopback address, to be another client). */
export function connectTo(port: number, localAddress?: string): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress, allowHalfOpen: true });
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

export interface Received {
  data: Buffer;
  /** Whether the peer ended its side (a FIN) before the socket closed. */
  ended: boolean;
  /** The socket's error, if it closed on one (ECONNRESET). */
  error: NodeJS.ErrnoException | undefined;
  /** Each chunk's arrival (performance.now()) and the total so far. */
  arrivals: Array<{ atMs: number; total: number }>;
}

/** Collects what `socket` receives until it closes; ends its side when the peer ends. */
export function receiveAll(socket: Socket): Promise<Received> {
  const chunks: Buffer[] = [];
  const arrivals: Received["arrivals"] = [];
  let total = 0;
  let ended = false;
  let error: NodeJS.ErrnoException | undefined;
  socket.on("data", (chunk: Buffer) => {
    chunks.push(chunk);
    total += chunk.length;
    arrivals.push({ atMs: performance.now(), total });
  });
  socket.on("end", () => {
    ended = true;
    // As a client that allows no half-open connection would: done when the peer is.
    socket.end();
  });
  socket.on("error", (failure) => (error = failure));
  return new Promise<Received>((resolve) => socket.on("close", () => resolve({ data: Buffer.concat(chunks), ended, error, arrivals })));
}

/** Sends SIGTERM and waits for the proxy's end. */
export async function stopProxy(proxy: RunningProxy): Promise<Awaited<Running["exited"]>> {
  proxy.running.signal("SIGTERM");
  return proxy.running.exited;
}

/**
 * The Retry-After (whole seconds) a refusal by a window of `windowMs` may give, when the window's
 * oldest admission was the first request and the refused one came after it: the server took them at
 * instants the client can only bound by when it sent each and when it had the answer.
 */
export function windowRetryAfterRange(windowMs: number, first: { sentMs: number; answeredMs: number }, refused: { sentMs: number; answeredMs: number }): [number, number] {
  return [Math.ceil((windowMs - (refused.answeredMs - first.sentMs)) / 1000), Math.ceil((windowMs - (refused.sentMs - first.answeredMs)) / 1000)];
}

/** The arrivals of several sockets as one stream, in time order. */
export function mergedArrivals(received: Received[]): Received["arrivals"] {
  const chunks = received.flatMap((one) => one.arrivals.map((arrival, index) => ({ atMs: arrival.atMs, bytes: arrival.total - (one.arrivals[index - 1]?.total ?? 0) })));
  chunks.sort((a, b) => a.atMs - b.atMs);
  let total = 0;
  return chunks.map((chunk) => ({ atMs: chunk.atMs, total: (total += chunk.bytes) }));
}

/**
 * Every run of arrivals holds at most burst + rate × its span for each bucket, with a tolerance
 * of 100 ms of the rate (a reader that wakes late on a loaded machine sees a bunch, far below what
 * an unshaped link would show) and `slackBytes` (the leases other processes hold). A run spans
 * from the read before it (its bytes were sent after that read took what was there; for the
 * first, from `originMs`, before connecting; by default the first arrival): a reader that wakes late gets what was sent
 * meanwhile, never more.
 */
export function expectArrivalsInside(arrivals: Received["arrivals"], buckets: ReadonlyArray<{ rate: number; burst: number }>, originMs = arrivals[0]?.atMs ?? 0, slackBytes = 0): void {
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

/** A backend that writes to each connection as fast as it will take it, for as long as it is open. */
export function endlessBackend(): Promise<Backend> {
  const block = Buffer.alloc(64 * 1024, 0x62);
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
export async function download(sockets: Socket[], ms: number): Promise<Received[]> {
  const receiving = sockets.map((socket) => receiveAll(socket));
  await sleep(ms);
  for (const socket of sockets) socket.destroy();
  return Promise.all(receiving);
}
