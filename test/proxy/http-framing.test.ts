import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "./http-proxy-harness.js";

// How the HTTP proxy frames what it forwards (RFC 9112): raw bytes in, the exact bytes the backend got out.

const { proxyTo, raw } = useHttpProxies();
const tcpServers: TcpServer[] = [];
const backendSockets: Socket[] = [];

afterEach(async () => {
  // The proxy's keep-alive connections would hold the backends open.
  for (const socket of backendSockets.splice(0)) socket.destroy();
  await Promise.all(tcpServers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

const OK = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";

/**
 * A backend that records every byte it receives, and answers 200 `ok` each
 * time what it received so far ends a message (a blank line, a chunked
 * body's last chunk): it parses nothing, so it shows what a backend would.
 */
async function recordingBackend(): Promise<{ url: string; received: () => string }> {
  let received = "";
  const server = createTcpServer((socket: Socket) => {
    backendSockets.push(socket);
    socket.on("error", () => {});
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("latin1");
      if (received.endsWith("\r\n\r\n")) socket.write(OK);
    });
  });
  tcpServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received: () => received };
}

/** The head of the first message in `text`, and the chunked body after it decoded, with what follows its last chunk. */
function splitChunked(text: string): { head: string; body: string; rest: string } {
  const headEnd = text.indexOf("\r\n\r\n") + 4;
  let at = headEnd;
  let body = "";
  for (;;) {
    const lineEnd = text.indexOf("\r\n", at);
    const size = Number.parseInt(text.slice(at, lineEnd), 16);
    if (lineEnd < 0 || Number.isNaN(size)) throw new Error(`not a chunked body: ${JSON.stringify(text.slice(headEnd))}`);
    at = lineEnd + 2;
    if (size === 0) break;
    body += text.slice(at, at + size);
    at += size + 2;
  }
  return { head: text.slice(0, headEnd), body, rest: text.slice(at + 2) };
}

const SMUGGLED = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

describe("the HTTP proxy's framing of requests", () => {
  it("forwards a GET's chunked body chunked: the backend gets one request, its body the would-be smuggled one", async () => {
    const backend = await recordingBackend();
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write(`GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`);
    await until(() => client.text().endsWith("ok\n"), "the answer");
    const { head, body, rest } = splitChunked(backend.received());
    expect(head).toBe("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Forwarded-For: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
    expect(body).toBe(SMUGGLED);
    expect(rest).toBe("");
    expect(client.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok\n$/);
  });

  it("gives every client its own answer on a shared backend connection after a GET with a chunked body (no response queue poisoning)", async () => {
    // A smuggled request answered late: its answer would be the next one on the connection the proxy reuses.
    const backend = await listen((req, res) => {
      req.resume();
      req.on("end", () => setTimeout(() => res.end(`answer to ${req.method} ${req.url}\n`), req.url === "/smuggled" ? 200 : 0));
    });
    const { port } = await proxyTo(backend.url);
    const attacker = await raw(port);
    attacker.write(`GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`);
    await until(() => attacker.text().includes("answer to"), "the attacker's answer");
    for (const path of ["/b", "/c"]) {
      const victim = await raw(port);
      victim.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await until(() => victim.text().includes("answer to"), "a victim's answer");
      expect(victim.text()).toMatch(new RegExp(`\r\n\r\nanswer to GET ${path}\n$`));
    }
    expect(attacker.text()).toMatch(/\r\n\r\nanswer to GET \/a\n$/);
  });

  it("keeps the Content-Length a Connection field names: the body stays framed", async () => {
    const backend = await recordingBackend();
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write(`GET / HTTP/1.1\r\nHost: x\r\nConnection: content-length\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`);
    await until(() => backend.received().endsWith(SMUGGLED), "the body at the backend");
    expect(backend.received()).toBe(`GET / HTTP/1.1\r\nHost: x\r\nContent-Length: ${SMUGGLED.length}\r\nX-Forwarded-For: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n${SMUGGLED}`);
  });

  it("answers 400 and closes to two Host fields, a Host that is not host[:port], and Transfer-Encoding on HTTP/1.0; nothing reaches the backend", async () => {
    const backend = await recordingBackend();
    const { port } = await proxyTo(backend.url);
    for (const [attempt, why] of [
      ["GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "more than one Host field"],
      ["GET / HTTP/1.1\r\nHost: a b\r\n\r\n", "a Host field that is not host[:port]"],
      ["POST / HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "Transfer-Encoding on an HTTP/1.0 request"],
      ["GET /ws HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", "more than one Host field"],
    ] as const) {
      const client = await raw(port);
      client.write(attempt);
      await client.closed;
      expect(client.text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(client.text().endsWith(`\r\nConnection: close\r\n\r\nBad Request: ${why}\n`)).toBe(true);
    }
    // The well-formed ones go through: bracketed IPv6, a port, an empty Host.
    for (const host of ["[::1]:8080", "example.com:80", ""]) {
      const client = await raw(port);
      client.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      await until(() => client.text().endsWith("ok\n"), `the answer for Host ${host}`);
      expect(client.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    }
    expect(backend.received().match(/^GET /gm)).toHaveLength(3);
  });
});
