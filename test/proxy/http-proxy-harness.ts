import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach } from "vitest";
import { type HttpProxyOptions, type RunningHttpProxy, startHttpProxy } from "../../src/proxy/http-proxy.js";

/** A raw connection to the proxy, for what an HTTP client would not send. */
export interface RawClient {
  socket: Socket;
  write(data: string | Buffer): void;
  end(data: string): void;
  destroy(): void;
  /** Everything received so far, as latin1 text. */
  text(): string;
  closed: Promise<void>;
}

/**
 * HTTP proxies (unlimited by default) and raw client connections to them for
 * one test file, all closed after each test.
 */
export function useHttpProxies() {
  const proxies: RunningHttpProxy[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close(0)));
  });

  async function proxyTo(target: string, options: Partial<HttpProxyOptions> = {}): Promise<{ proxy: RunningHttpProxy; url: string; port: number }> {
    const proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target, rate: Infinity, burst: 1, ...options });
    proxies.push(proxy);
    return { proxy, url: `http://127.0.0.1:${proxy.address.port}`, port: proxy.address.port };
  }

  async function raw(port: number, host = "127.0.0.1"): Promise<RawClient> {
    const socket = connect(port, host);
    sockets.push(socket);
    let received = "";
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("latin1")));
    socket.on("error", () => {});
    const closed = once(socket, "close").then(() => {});
    await once(socket, "connect");
    return {
      socket,
      write: (data) => void socket.write(data),
      end: (data) => void socket.end(data),
      destroy: () => void socket.destroy(),
      text: () => received,
      closed,
    };
  }

  /** Destroys `socket` with the rest after the test. */
  const track = (socket: Socket): Socket => (sockets.push(socket), socket);

  /**
   * Opens `count` connections that each send one `GET path`, in batches of at
   * most 100 so that none waits on a full listen backlog; resolves once all
   * are connected, with their sockets (to make them leave).
   */
  async function queueRequests(port: number, count: number, path: string): Promise<Socket[]> {
    const waiting: Socket[] = [];
    for (let first = 0; first < count; first += 100) {
      const connected: Array<Promise<unknown>> = [];
      for (let i = first; i < Math.min(count, first + 100); i++) {
        const socket = track(connect(port, "127.0.0.1"));
        socket.on("error", () => {});
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
        waiting.push(socket);
        connected.push(once(socket, "connect"));
      }
      await Promise.all(connected);
    }
    return waiting;
  }

  return { proxyTo, raw, track, queueRequests };
}
