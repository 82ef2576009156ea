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
async function recordingBackend(): Promise<{ url: string; received: () => string; clear: () => void }> {
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
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received: () => received, clear: () => void (received = "") };
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

  it("forwards one Transfer-Encoding: chunked however the client spelled it, and answers 501 to any other coding; nothing else reaches the backend", async () => {
    // Two fields, or identity before chunked: a backend that reads only the first would take the body for the next request.
    const backend = await recordingBackend();
    const { port } = await proxyTo(backend.url);
    for (const codings of [["identity", "chunked"], ["identity, chunked"], ["gzip, chunked"], ["x, chunked"]]) {
      const client = await raw(port);
      client.write(`POST / HTTP/1.1\r\nHost: x\r\n${codings.map((coding) => `Transfer-Encoding: ${coding}\r\n`).join("")}\r\n3\r\nabc\r\n0\r\n\r\n`);
      await client.closed;
      expect(client.text()).toMatch(/^HTTP\/1\.1 501 Not Implemented\r\n/);
      expect(client.text().endsWith("\r\nConnection: close\r\n\r\nNot Implemented: a transfer coding other than chunked\n")).toBe(true);
    }
    expect(backend.received()).toBe("");
    for (const coding of ["CHUNKED", ",chunked"]) {
      const client = await raw(port);
      client.write(`POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ${coding}\r\n\r\n3\r\nabc\r\n0\r\n\r\n`);
      await until(() => client.text().endsWith("ok\n"), `the answer for ${coding}`);
      const { head, body } = splitChunked(backend.received());
      expect(head).toBe("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Forwarded-For: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
      expect(body).toBe("abc");
      backend.clear();
    }
  });

  it("answers 400 to a path with dot-segments when the target has a prefix, however encoded: none climbs out of /api to a backend that resolves them", async () => {
    const backend = await recordingBackend();
    const { port } = await proxyTo(`${backend.url}/api`);
    for (const path of ["/../admin", "/a/../../admin", "/%2e%2e/admin", "/%2E./admin", "/..%2fadmin", "/..%5Cadmin", "/./admin", "http://x/../admin"]) {
      const client = await raw(port);
      client.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await client.closed;
      expect(client.text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(client.text().endsWith("\r\n\r\nBad Request: a path with a . or .. segment, which could climb out of the target's /api\n")).toBe(true);
    }
    expect(backend.received()).toBe("");
    // Dots within a name, and an encoded slash between names, are not segments of their own.
    const client = await raw(port);
    client.write("GET /a..b/.well-known/x%2Fy?q=/../ HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => client.text().endsWith("ok\n"), "the answer");
    expect(backend.received()).toMatch(/^GET \/api\/a\.\.b\/\.well-known\/x%2Fy\?q=\/\.\.\/ HTTP\/1\.1\r\n/);
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

/** A backend that answers every request with `answer`, written raw once the request's head is in. */
async function scriptedBackend(answer: (socket: Socket, head: string) => void): Promise<string> {
  const server = createTcpServer((socket: Socket) => {
    backendSockets.push(socket);
    socket.on("error", () => {});
    let head = "";
    socket.on("data", (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (head.includes("\r\n\r\n")) {
        answer(socket, head);
        head = "";
      }
    });
  });
  tcpServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe("what the HTTP proxy passes back", () => {
  it("passes repeated response fields (two Set-Cookie) as they came, beside the limit's own fields", async () => {
    const backend = await scriptedBackend((socket) =>
      socket.write("HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2; HttpOnly\r\nVary: A\r\nVary: B\r\nContent-Length: 3\r\n\r\nok\n"),
    );
    for (const rate of [Infinity, 100]) {
      const { port } = await proxyTo(backend, { rate, burst: 10 });
      const client = await raw(port);
      client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
      await until(() => client.text().endsWith("ok\n"), "the answer");
      const head = client.text().split("\r\n\r\n")[0]!;
      expect(head.match(/^Set-Cookie: .*$/gim)).toEqual(["Set-Cookie: a=1; Path=/", "Set-Cookie: b=2; HttpOnly"]);
      expect(head.match(/^Vary: .*$/gim)).toEqual(["Vary: A", "Vary: B"]);
      if (rate !== Infinity) expect(head).toMatch(/^RateLimit-Policy: /im);
    }
  });

  it("asks for trailers when the client takes them and passes them on after the body; passes a 103 before the final answer", async () => {
    let asked = "";
    const server = createTcpServer((socket: Socket) => {
      backendSockets.push(socket);
      socket.on("error", () => {});
      socket.once("data", (chunk: Buffer) => {
        asked = chunk.toString("latin1");
        socket.write("HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n");
        setTimeout(
          () => socket.write("HTTP/1.1 200 OK\r\nTrailer: Server-Timing\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\nServer-Timing: db;dur=53\r\n\r\n"),
          50,
        );
      });
    });
    tcpServers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = await proxyTo(`http://127.0.0.1:${(server.address() as { port: number }).port}`);
    const client = await raw(port);
    client.write("GET / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n");
    await until(() => client.text().endsWith("\r\n\r\n") && client.text().includes("200 OK"), "the whole answer");
    expect(asked).toMatch(/\r\nTE: trailers\r\nConnection: te\r\n/);
    const text = client.text();
    expect(text).toMatch(/^HTTP\/1\.1 103 Early Hints\r\nLink: <\/style\.css>; rel=preload; as=style\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(text).toMatch(/\r\nTrailer: Server-Timing\r\n/);
    expect(text.endsWith("\r\n\r\n3\r\nok\n\r\n0\r\nServer-Timing: db;dur=53\r\n\r\n")).toBe(true);
  });

  it("leaves the Trailer field and trailers out where the answer is not chunked (HTTP/1.0, HEAD), the answer otherwise whole", async () => {
    const backend = await scriptedBackend((socket, head) => {
      const fields = "HTTP/1.1 200 OK\r\nTrailer: Server-Timing\r\nTransfer-Encoding: chunked\r\n\r\n";
      socket.write(head.startsWith("HEAD ") ? fields : `${fields}3\r\nok\n\r\n0\r\nServer-Timing: db;dur=53\r\n\r\n`);
    });
    const { port } = await proxyTo(backend);
    const old = await raw(port);
    old.write("GET / HTTP/1.0\r\nHost: x\r\nTE: trailers\r\n\r\n");
    await old.closed;
    expect(old.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(old.text()).not.toMatch(/Trailer|Server-Timing/);
    expect(old.text().endsWith("\r\n\r\nok\n")).toBe(true);
    const head = await raw(port);
    head.write("HEAD / HTTP/1.1\r\nHost: x\r\nTE: trailers\r\n\r\n");
    await until(() => head.text().endsWith("\r\n\r\n"), "the HEAD answer");
    expect(head.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(head.text()).not.toMatch(/Trailer/);
  });

  it("never gives a declined upgrade's backend connection to another client: a Content-Length it announced cannot swallow the next upgrade", async () => {
    // The attacker's upgrade says 60 bytes of body and sends none; a backend that declines with keep-alive still waits for them.
    const connectionOf = new Map<Socket, number>();
    const heads: Array<[number, string]> = [];
    const backend = await scriptedBackend((socket, head) => {
      if (!connectionOf.has(socket)) connectionOf.set(socket, connectionOf.size);
      heads.push([connectionOf.get(socket)!, head.split("\r\n")[0]!]);
      socket.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
    });
    const { port } = await proxyTo(backend);
    const attacker = await raw(port);
    attacker.write("GET /attacker HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\nContent-Length: 60\r\n\r\n");
    await attacker.closed;
    const victim = await raw(port);
    victim.write("GET /victim HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\nCookie: secret\r\n\r\n");
    await victim.closed;
    expect(victim.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok\n$/);
    expect(heads.map(([, line]) => line)).toEqual(["GET /attacker HTTP/1.1", "GET /victim HTTP/1.1"]);
    expect(heads[0]![0]).not.toBe(heads[1]![0]);
  });

  it("never opens an h2c tunnel, whose HTTP/2 requests the limit would not see: the request goes without its Upgrade, and its answer ends the connection", async () => {
    const heads: string[] = [];
    const backend = await scriptedBackend((socket, head) => {
      heads.push(head);
      // A backend that speaks h2c takes the upgrade whenever it is asked.
      if (/^upgrade: h2c\r$/im.test(head)) socket.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n");
      else socket.write("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
    });
    const { port } = await proxyTo(backend);
    const client = await raw(port);
    client.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n");
    await client.closed;
    expect(client.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok\n$/);
    expect(heads).toHaveLength(1);
    expect(heads[0]).not.toMatch(/upgrade|http2-settings/i);
    // Another protocol beside h2c is still offered to the backend.
    const both = await raw(port);
    both.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c, websocket\r\n\r\n");
    await both.closed;
    expect(heads[1]).toMatch(/^upgrade: websocket\r$/im);
  });

  it("sends no 1xx to an HTTP/1.0 client", async () => {
    const backend = await scriptedBackend((socket) => socket.write("HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"));
    const { port } = await proxyTo(backend);
    const client = await raw(port);
    client.write("GET / HTTP/1.0\r\nHost: x\r\n\r\n");
    await client.closed;
    expect(client.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok\n$/);
  });
});
