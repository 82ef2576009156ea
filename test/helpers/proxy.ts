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
