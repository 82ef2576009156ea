import { createServer, type IncomingHttpHeaders, request, type RequestListener, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterEach } from "vitest";

/** Servers a test started, and their connections (upgraded ones too), closed after it. */
const servers: Server[] = [];
const connections = new Set<Socket>();

afterEach(async () => {
  for (const socket of connections) socket.destroy();
  connections.clear();
  const closing = servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
  await Promise.all(closing);
});

/** A node:http server on 127.0.0.1, on a port the system chose; closed after the test. */
export async function listen(listener: RequestListener): Promise<{ server: Server; url: string; port: number }> {
  const server = createServer(listener);
  servers.push(server);
  server.on("connection", (socket: Socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, port };
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request on its own connection; rejects when the connection fails before an answer. */
export function get(url: string, headers: Record<string, string> = {}, options: { method?: string; body?: string | Buffer } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers, method: options.method ?? "GET" }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Resolves when `condition` holds, polling; rejects after `timeoutMs` naming `what`. */
export async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
