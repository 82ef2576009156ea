import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from "node:net";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import type { RequestDecision } from "../../src/proxy/http-proxy.js";
import { get, listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "./http-proxy-harness.js";

// What a hostile client or backend does to the HTTP proxy, each case once found or feared.

const { proxyTo, raw, track, queueRequests } = useHttpProxies();
const tcpServers: TcpServer[] = [];

afterEach(async () => {
  await Promise.all(tcpServers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

/** A backend that speaks raw TCP, for answers node:http would not write. */
async function rawBackend(handle: (socket: Socket) => void): Promise<string> {
  const server = createTcpServer((socket) => {
    track(socket);
    socket.on("error", () => {});
    handle(socket);
  });
  tcpServers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The responses in `text`, split after each status line's block: status codes in order. */
function statuses(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}

describe("the HTTP proxy against hostile clients and backends", () => {
  it("answers 408 to headers dribbled a byte at a time once the header timeout passes, while other clients are served", async () => {
    const backend = await listen((_req, res) => res.end("ok\n"));
    const { port, url } = await proxyTo(backend.url, { headersTimeoutMs: 400 });
    const slow = await raw(port);
    const request = "GET / HTTP/1.1\r\nHost: x\r\nX-Padding: " + "a".repeat(200);
    const started = performance.now();
    let sent = 0;
    const dribble = setInterval(() => {
      if (sent < request.length && !slow.socket.destroyed) slow.write(request[sent++]!);
    }, 20);
    try {
      // Others go on meanwhile.
      for (let i = 0; i < 5; i++) expect(await get(url)).toMatchObject({ status: 200, body: "ok\n" });
      await slow.closed;
    } finally {
      clearInterval(dribble);
    }
    expect(slow.text()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // Not before the timeout; within it and node's check interval (a quarter of it), with room for a loaded machine.
    expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("forwards a queued request whose body has not ended at its turn, and cancels it at the backend when its client leaves", async () => {
    let partial = "";
    let aborted = false;
    const backend = await listen((req, res) => {
      if (req.url === "/first") return void res.end("first\n");
      req.on("data", (chunk: Buffer) => (partial += chunk));
      req.on("close", () => (aborted = !req.complete));
      void res;
    });
    const clock = new FakeClock(0);
    const decisions: Array<{ decision: RequestDecision; waitMs: number }> = [];
    const observer = { decision: (decision: RequestDecision, waitMs: number) => void decisions.push({ decision, waitMs }), bytes: () => {}, storeError: () => {} };
    const { port, url } = await proxyTo(backend.url, { rate: 5, burst: 1, policy: "queue", maxWaitMs: 2000, clock, observer });
    /** Lets 200 ms pass once a request waits its turn: the proxy's clock sleeps for the sweep and for the queue's first turn. */
    const nextTurn = async () => {
      await until(() => clock.pendingSleeps === 2, "a request waiting its turn");
      await clock.advance(200);
    };
    expect(await get(`${url}/first`)).toMatchObject({ status: 200 });
    const client = await raw(port);
    client.write("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nbegun");
    await nextTurn();
    await until(() => partial === "begun", "the queued request's first bytes at the backend");
    expect(decisions.at(-1)).toEqual({ decision: "queued", waitMs: 200 });
    client.socket.destroy();
    await until(() => aborted, "the backend request's abort");
    const last = get(`${url}/first`, {}, {});
    await nextTurn();
    expect(await last).toMatchObject({ status: 200 });
  });

  it("gives every token back when 1,000 queued clients hang up: the next request goes at once", async () => {
    const backend = await listen((_req, res) => res.end("ok\n"));
    const log = new PassThrough();
    let lines = "";
    log.on("data", (chunk: Buffer) => (lines += chunk));
    const decisions: Array<{ decision: RequestDecision; waitMs: number }> = [];
    const { port, url } = await proxyTo(backend.url, {
      rate: 10,
      burst: 5,
      policy: "queue",
      maxWaitMs: 300_000,
      per: { by: "all" },
      accessLog: log,
      observer: { decision: (decision, waitMs) => void decisions.push({ decision, waitMs }), bytes: () => {}, storeError: () => {} },
    });
    for (let i = 0; i < 5; i++) expect(await get(url)).toMatchObject({ status: 200 });
    const waiting = await queueRequests(port, 1000, "/wait");
    // Each of them in the queue by then (the bucket owes them 100 s); then they all leave.
    await sleep(1000);
    for (const socket of waiting) socket.destroy();
    // Those whose turn came meanwhile (10 a second) were served; all the others say they were cancelled.
    const waitLines = () => lines.split("\n").filter((line) => line.includes('"GET /wait '));
    await until(() => waitLines().length === 1000, "1,000 lines in the access log", 20_000);
    // Each one served (its turn came: queued, whatever became of it after; admitted at once when a token
    // came back while a loaded machine was still connecting them) or cancelled.
    const served = waitLines().filter((line) => / (?:queued|admitted) \d+$/.test(line)).length;
    expect(waitLines().filter((line) => / 499 - "-" "-" cancelled \d+$/.test(line))).toHaveLength(1000 - served);
    expect(served).toBeLessThan(100);
    await sleep(200);
    const started = performance.now();
    const answer = await get(url);
    expect(answer.status).toBe(200);
    // At once, not after the leavers' 100 s of turns: with room for a loaded machine.
    expect(performance.now() - started).toBeLessThan(5000);
    expect(decisions.at(-1)).toEqual({ decision: "admitted", waitMs: 0 });
  }, 30_000);

  it("passes on a backend's answer sent before it read the request's body", async () => {
    const backend = await listen((req, res) => {
      res.writeHead(413, { "content-type": "text/plain", connection: "close" });
      res.end("too large\n");
      void req;
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n");
    const chunk = Buffer.alloc(64 * 1024, 97);
    for (let i = 0; i < 20 && !client.socket.destroyed; i++) {
      client.write(chunk);
      await sleep(5);
    }
    await until(() => client.text().includes("too large\n"), "the backend's 413 at the client").catch((error: Error) => {
      throw new Error(`${error.message}; it has ${JSON.stringify(client.text().slice(0, 200))}`);
    });
    expect(client.text()).toMatch(/^HTTP\/1\.1 413 Payload Too Large\r\n/);
  });

  it("answers 502 to a backend that closes in the middle of its headers, and stays up", async () => {
    const target = await rawBackend((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Le"));
    });
    const { url } = await proxyTo(target);
    expect(await get(url)).toMatchObject({ status: 502 });
    expect(await get(url)).toMatchObject({ status: 502 });
  });

  it("passes chunked bodies both ways whole", async () => {
    let seen = "";
    let seenEncoding: string | undefined;
    const backend = await listen((req, res) => {
      seenEncoding = req.headers["transfer-encoding"];
      req.on("data", (chunk: Buffer) => (seen += chunk));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("one,");
        setTimeout(() => res.end("two\n"), 20);
      });
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    await sleep(20);
    client.write("6\r\n world\r\n0\r\n\r\n");
    await until(() => client.text().endsWith("0\r\n\r\n"), "the chunked answer's end");
    expect(seen).toBe("hello world");
    expect(seenEncoding).toBe("chunked");
    const [head, body] = client.text().split("\r\n\r\n");
    expect(head!.toLowerCase()).toContain("transfer-encoding: chunked");
    expect(body).toBeDefined();
    expect(client.text().replace(/^[\s\S]*?\r\n\r\n/, "")).toBe("4\r\none,\r\n4\r\ntwo\n\r\n0\r\n\r\n");
  });

  it("answers Expect: 100-continue and passes the body that follows", async () => {
    const backend = await listen((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk));
      req.on("end", () => res.end(`got ${body}\n`));
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    await until(() => client.text().startsWith("HTTP/1.1 100 Continue\r\n\r\n"), "100 Continue");
    client.write("data");
    await until(() => client.text().endsWith("got data\n"), "the answer");
    expect(statuses(client.text())).toEqual([100, 200]);
  });

  it("tells a client that expects 100-continue to go on only when the limit lets its request through; a refused one gets the 429 and the connection closes", async () => {
    const bodies: string[] = [];
    const backend = await listen((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk));
      req.on("end", () => {
        bodies.push(body);
        res.end("ok\n");
      });
    });
    const { port } = await proxyTo(backend.url, { rate: 1, burst: 1 });
    const admitted = await raw(port);
    admitted.write("PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    await until(() => admitted.text().startsWith("HTTP/1.1 100 Continue\r\n\r\n"), "100 Continue");
    admitted.write("data");
    await until(() => admitted.text().endsWith("ok\n"), "the answer");
    const refused = await raw(port);
    refused.write("PUT /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
    await refused.closed;
    expect(statuses(refused.text())).toEqual([429]);
    expect(refused.text().toLowerCase()).toContain("connection: close");
    expect(bodies).toEqual(["data"]);
  });

  it("passes HEAD, 204 and 304 answers without a body, the connection still good for the next request", async () => {
    const backend = await listen((req, res) => {
      if (req.method === "HEAD") {
        res.writeHead(200, { "content-length": "1234", "content-type": "text/plain" });
        return void res.end();
      }
      if (req.url === "/none") return void res.writeHead(204).end();
      if (req.url === "/same") return void res.writeHead(304, { etag: '"v1"' }).end();
      res.end("last\n");
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => statuses(client.text()).length === 1, "the HEAD answer");
    client.write("GET /none HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => statuses(client.text()).length === 2, "the 204");
    client.write("GET /same HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"v1\"\r\n\r\n");
    await until(() => statuses(client.text()).length === 3, "the 304");
    client.write("GET /last HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => client.text().endsWith("last\n"), "the last answer");
    expect(statuses(client.text())).toEqual([200, 204, 304, 200]);
    expect(client.text().toLowerCase()).toContain("content-length: 1234");
    expect(client.text().toLowerCase()).toContain('etag: "v1"');
    // No stray bytes: each answer's head is followed by the next answer, and the last by its body.
    const head = "(?:[^\\r]+\\r\\n)*\\r\\n";
    expect(client.text()).toMatch(new RegExp(`^HTTP/1\\.1 200 OK\\r\\n${head}HTTP/1\\.1 204 No Content\\r\\n${head}HTTP/1\\.1 304 Not Modified\\r\\n${head}HTTP/1\\.1 200 OK\\r\\n${head}last\\n$`));
  });

  it("passes very long URLs and header values intact, and answers 431 beyond node's header limit", async () => {
    let seen: { url?: string; value?: string } = {};
    const backend = await listen((req, res) => {
      seen = { url: req.url, value: req.headers["x-long"] as string };
      res.setHeader("x-back", "b".repeat(8000));
      res.end("ok\n");
    });
    const { url, port } = await proxyTo(backend.url);
    const path = `/${"p".repeat(6000)}?q=${"v".repeat(1000)}`;
    const answer = await get(`${url}${path}`, { "x-long": "h".repeat(6000) });
    expect(answer.status).toBe(200);
    expect(answer.headers["x-back"]).toBe("b".repeat(8000));
    expect(seen).toEqual({ url: path, value: "h".repeat(6000) });
    const huge = await raw(port);
    huge.write(`GET /${"x".repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    await huge.closed;
    expect(huge.text()).toMatch(/^HTTP\/1\.1 431 /);
  });

  it("answers pipelined requests on one connection in their order, however long each takes at the backend", async () => {
    const backend = await listen((req, res) => {
      const delayMs = Number(new URL(req.url!, "http://x").searchParams.get("delay"));
      setTimeout(() => res.end(`${req.url}\n`), delayMs);
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write(
      "GET /a?delay=150 HTTP/1.1\r\nHost: x\r\n\r\nGET /b?delay=0 HTTP/1.1\r\nHost: x\r\n\r\nPOST /c?delay=50 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiGET /d?delay=0 HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    await until(() => statuses(client.text()).length === 4 && client.text().endsWith("/d?delay=0\n"), "four answers");
    expect([...client.text().matchAll(/\r\n\r\n(\/\w)\?/g)].map((match) => match[1])).toEqual(["/a", "/b", "/c", "/d"]);
  });

  it("forwards a connection's pipelined requests one at a time: 500 in one write are never 500 backend requests and connections at once", async () => {
    let underWay = 0;
    let most = 0;
    let connections = 0;
    const backend = await listen((_req, res) => {
      most = Math.max(most, ++underWay);
      setTimeout(() => {
        underWay--;
        res.end("ok\n");
      }, 2);
    });
    backend.server.on("connection", () => connections++);
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(500));
    await until(() => statuses(client.text()).length === 500, "500 answers", 20_000);
    expect(most).toBe(1);
    expect(connections).toBe(1);
  });

  it("listens on the IPv6 loopback [::1], keying and forwarding its clients by their IPv6 address", async () => {
    let forwardedFor: string | undefined;
    const backend = await listen((req, res) => {
      forwardedFor = req.headers["x-forwarded-for"] as string;
      res.end("ok\n");
    });
    const log = new PassThrough();
    let lines = "";
    log.on("data", (chunk: Buffer) => (lines += chunk));
    const { proxy } = await proxyTo(backend.url, { listen: { host: "::1", port: 0 }, rate: 1, burst: 1, accessLog: log });
    const url = `http://[::1]:${proxy.address.port}/`;
    expect(await get(url)).toMatchObject({ status: 200, body: "ok\n" });
    expect((await get(url)).status).toBe(429);
    expect(forwardedFor).toBe("::1");
    await until(() => lines.split("\n").length > 2, "two log lines");
    expect(lines.split("\n")[0]).toMatch(/^::1 - - \[/);
  });

  it("forwards to a backend at an IPv6 address, http://[::1]:PORT, requests and upgrades alike", async () => {
    const backend = createHttpServer((req, res) => res.end(`${req.url}\n`));
    const upgraded: Socket[] = [];
    backend.on("upgrade", (_req, socket: Socket) => {
      upgraded.push(socket);
      socket.on("error", () => {});
      socket.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => backend.listen(0, "::1", resolve));
    try {
      const { port, url } = await proxyTo(`http://[::1]:${(backend.address() as { port: number }).port}`);
      expect(await get(`${url}/six`)).toMatchObject({ status: 200, body: "/six\n" });
      const client = await raw(port);
      client.write("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
      await until(() => client.text().includes("\r\n\r\n"), "the 101");
      client.write("ping");
      await until(() => client.text().endsWith("ping"), "the echo through the tunnel");
      expect(statuses(client.text())).toEqual([101]);
    } finally {
      for (const socket of upgraded) socket.destroy();
      backend.closeAllConnections();
      await new Promise<void>((resolve) => backend.close(() => resolve()));
    }
  });

  it("passes on a backend's refusal of a WebSocket upgrade, then closes the connection", async () => {
    const backend = await listen((_req, res) => {
      res.writeHead(403, { "content-type": "text/plain" });
      res.end("no sockets here\n");
    });
    const { port, url } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    await client.closed;
    expect(client.text()).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
    expect(client.text().toLowerCase()).toContain("connection: close");
    expect(client.text().endsWith("no sockets here\n")).toBe(true);
    expect(await get(url)).toMatchObject({ status: 403 });
  });

  it("passes on a refused upgrade whose answer is chunked, its body whole and delimited by the close", async () => {
    const backend = await listen((_req, res) => {
      res.writeHead(400, { "content-type": "text/plain" });
      res.write("bad ");
      setTimeout(() => res.end("upgrade\n"), 20);
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    await client.closed;
    expect(client.text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(client.text().toLowerCase()).not.toContain("transfer-encoding");
    expect(client.text().endsWith("\r\n\r\nbad upgrade\n")).toBe(true);
  });
  it("refuses requests that could smuggle another (Content-Length with chunked, two lengths) with 400, and nothing reaches the backend", async () => {
    const seen: string[] = [];
    const backend = await listen((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      res.end("ok\n");
    });
    const { port } = await proxyTo(backend.url);
    for (const attempt of [
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
      "POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
    ]) {
      const client = await raw(port);
      client.write(attempt);
      await client.closed;
      expect(client.text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    }
    expect(seen).toEqual([]);
  });

  it("sends the path of an absolute-form request and OPTIONS * as they are meant, and answers CONNECT with 405", async () => {
    const seen: string[] = [];
    const backend = await listen((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end("ok\n");
    });
    const { port } = await proxyTo(backend.url);
    const client = await raw(port);
    client.write("GET http://elsewhere.example/abs?q=1 HTTP/1.1\r\nHost: x\r\n\r\nOPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => statuses(client.text()).length === 2, "two answers");
    expect(seen).toEqual(["GET /abs?q=1", "OPTIONS *"]);
    const tunnel = await raw(port);
    tunnel.write("CONNECT elsewhere.example:443 HTTP/1.1\r\nHost: elsewhere.example:443\r\n\r\n");
    await tunnel.closed;
    expect(tunnel.text()).toMatch(/^HTTP\/1\.1 405 Method Not Allowed\r\n/);
  });
});
