import { once } from "node:events";
import { Agent, request } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { PassThrough, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { parseAccessLogLine, type ParsedLine } from "../../src/simulate/trace-line.js";
import { parseHttpTarget, type RequestDecision, startHttpProxy } from "../../src/proxy/http-proxy.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { get, listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "./http-proxy-harness.js";

const { proxyTo, raw, track } = useHttpProxies();

describe("the HTTP proxy", () => {
  it("forwards method, path under the target's prefix and body, appends X-Forwarded-For, and drops hop-by-hop headers both ways", async () => {
    let seen: { method?: string; url?: string; headers?: Record<string, unknown>; body?: string } = {};
    const backend = await listen((req, res) => {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk));
      req.on("end", () => {
        seen = { method: req.method, url: req.url, headers: req.headers, body };
        res.writeHead(201, { "x-kept": "yes", "keep-alive": "timeout=99", "x-dropped": "no", connection: "x-dropped" });
        res.end("made\n");
      });
    });
    const { proxy } = await proxyTo(`${backend.url}/api`);
    const socket = await raw(proxy.address.port);
    socket.write(
      "PUT /things?x=1 HTTP/1.1\r\nHost: example\r\nX-Forwarded-For: 203.0.113.7\r\nConnection: close, x-private\r\nX-Private: secret\r\n" +
        "TE: deflate\r\nProxy-Authorization: Basic eA==\r\nContent-Length: 5\r\n\r\nhello",
    );
    await socket.closed;
    expect(seen).toMatchObject({ method: "PUT", url: "/api/things?x=1", body: "hello" });
    expect(seen.headers).toMatchObject({ host: "example", "x-forwarded-for": "203.0.113.7, 127.0.0.1" });
    expect(seen.headers).not.toHaveProperty("x-private");
    expect(seen.headers).not.toHaveProperty("te");
    expect(seen.headers).not.toHaveProperty("proxy-authorization");
    const head = socket.text().split("\r\n\r\n")[0]!.toLowerCase();
    expect(head).toMatch(/^http\/1\.1 201 created/);
    expect(head).toContain("x-kept: yes");
    expect(head).not.toContain("x-dropped");
    expect(head).not.toContain("timeout=99");
    // Re-framed by the proxy: the backend's transfer coding was hop-by-hop.
    expect(socket.text()).toContain("\r\n\r\n5\r\nmade\n\r\n0\r\n\r\n");
  });

  it("sends a request without a body whole, not chunked (a final empty chunk in a packet of its own waits on delayed ACKs)", async () => {
    const seen: Array<Record<string, unknown>> = [];
    const backend = await listen((req, res) => {
      seen.push({ ...req.headers });
      req.resume();
      req.on("end", () => res.end());
    });
    const { url } = await proxyTo(backend.url);
    await get(url);
    await get(url, { "transfer-encoding": "chunked" }, { method: "POST", body: "abc" });
    expect(seen[0]).not.toHaveProperty("transfer-encoding");
    expect(seen[1]).toHaveProperty("transfer-encoding", "chunked");
  });

  it("streams: the client has the first part of a body before the backend has sent the rest, and uploads flow the same way", async () => {
    let finish: (() => void) | undefined;
    let uploadedFirst = false;
    const backend = await listen((req, res) => {
      if (req.method === "POST") {
        req.once("data", () => {
          uploadedFirst = true;
        });
        req.on("end", () => res.end("done"));
        req.resume();
        return;
      }
      res.write("first part\n");
      finish = () => res.end("rest\n");
    });
    const { url } = await proxyTo(backend.url);
    const body: string[] = [];
    const ended = new Promise<void>((resolve) => {
      request(`${url}/stream`, { agent: false }, (res) => {
        res.on("data", (chunk: Buffer) => body.push(chunk.toString()));
        res.on("end", () => resolve());
      }).end();
    });
    await until(() => body.join("") === "first part\n", "the first part");
    finish!();
    await ended;
    expect(body.join("")).toBe("first part\nrest\n");
    let uploaded = "";
    const upload = request(`${url}/up`, { agent: false, method: "POST" }, (res) => {
      res.on("data", (chunk: Buffer) => (uploaded += chunk));
    });
    upload.write(Buffer.alloc(64 * 1024, 1));
    await until(() => uploadedFirst, "the first part of the upload at the backend");
    upload.end();
    await until(() => uploaded === "done", "the answer to the upload");
  });

  it("answers 502 while the backend is down and stays up, then serves it again", async () => {
    const backend = await listen((_req, res) => res.end("back\n"));
    const port = backend.port;
    await new Promise<void>((resolve) => backend.server.close(() => resolve()));
    const { url } = await proxyTo(`http://127.0.0.1:${port}`);
    const down = await get(url);
    expect(down.status).toBe(502);
    expect(down.body).toBe("Bad Gateway: the backend cannot be reached (ECONNREFUSED)\n");
    backend.server.listen(port, "127.0.0.1");
    await once(backend.server, "listening");
    expect(await get(url)).toMatchObject({ status: 200, body: "back\n" });
  });

  it("answers 504 when the backend does not start its answer in time", async () => {
    const backend = await listen(() => {});
    const { url } = await proxyTo(backend.url, { backendTimeoutMs: 100 });
    expect(await get(url)).toMatchObject({ status: 504, body: "Gateway Timeout: the backend did not answer in time\n" });
  });

  it("answers 400 to a request it cannot parse, and 408 then closes a client that never finishes its headers", async () => {
    const backend = await listen((_req, res) => res.end());
    const { proxy } = await proxyTo(backend.url, { headersTimeoutMs: 200 });
    const garbage = await raw(proxy.address.port);
    garbage.write("NOT HTTP AT ALL\r\n\r\n");
    await garbage.closed;
    expect(garbage.text()).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const slow = await raw(proxy.address.port);
    slow.write("GET / HTTP/1.1\r\nHost: x\r\n");
    await slow.closed;
    expect(slow.text()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    // One that connects and says nothing at all is closed too.
    const silent = await raw(proxy.address.port);
    const started = performance.now();
    await silent.closed;
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("closes only that client's connection when the backend resets mid-body", async () => {
    const backend = await listen((req, res) => {
      if (req.url === "/cut") {
        res.writeHead(200, { "content-length": "1000" });
        res.write("partial");
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.end("whole\n");
    });
    const { url } = await proxyTo(backend.url);
    const cut = new Promise<string>((resolve) => {
      request(`${url}/cut`, { agent: false }, (res) => {
        res.on("data", () => {});
        res.on("error", () => resolve("error"));
        res.on("aborted", () => resolve("aborted"));
        res.on("end", () => resolve("end"));
      })
        .on("error", () => resolve("error"))
        .end();
    });
    expect(["aborted", "error"]).toContain(await cut);
    expect(await get(url)).toMatchObject({ status: 200, body: "whole\n" });
  });

  it("tunnels a WebSocket upgrade both ways, counted as one request", async () => {
    const backend = await listen((_req, res) => res.end());
    backend.server.on("upgrade", (req, socket: Socket) => {
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
      socket.on("data", (chunk: Buffer) => socket.write(`echo:${chunk}`));
    });
    const decisions: RequestDecision[] = [];
    const { proxy, url } = await proxyTo(backend.url, {
      rate: 0.001,
      burst: 1,
      observer: { decision: (decision) => decisions.push(decision), bytes: () => {}, storeError: () => {} },
    });
    const socket = await raw(proxy.address.port);
    socket.write("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    await until(() => socket.text().includes("\r\n\r\n"), "the 101");
    expect(socket.text()).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    socket.write("ping");
    await until(() => socket.text().endsWith("echo:ping"), "the echo");
    expect((await get(url)).status).toBe(429);
    expect(decisions).toEqual(["admitted", "refused"]);
  });

  it("refuses an upgrade over the limit with a 429 and its fields, then closes", async () => {
    const backend = await listen((_req, res) => res.end());
    const { proxy } = await proxyTo(backend.url, { rate: 0.5, burst: 1 });
    await get(`http://127.0.0.1:${proxy.address.port}/`);
    const socket = await raw(proxy.address.port);
    socket.write("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
    await socket.closed;
    expect(socket.text()).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\n/);
    expect(socket.text()).toContain("Retry-After: 2\r\n");
  });

  it("adds the RateLimit fields to the backend's answers, and Retry-After to its own 429s", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    const { url } = await proxyTo(backend.url, { rate: 2, burst: 2 });
    const answers = [await get(url), await get(url), await get(url)];
    expect(answers.map((a) => [a.status, a.headers["ratelimit-policy"], a.headers["retry-after"]])).toEqual([
      [200, `"default";q=2;w=1`, undefined],
      [200, `"default";q=2;w=1`, undefined],
      [429, `"default";q=2;w=1`, "1"],
    ]);
    expect(answers[0]!.headers.ratelimit).toBe(`"default";r=1;t=1`);
  });

  it("keys per header, falling back to the client's address without it", async () => {
    const backend = await listen((_req, res) => res.end());
    const { url } = await proxyTo(backend.url, { rate: 0.001, burst: 1, per: { by: "header", name: "X-Api-Key" } });
    const statuses = [];
    for (const key of ["a", "a", "b", undefined, undefined]) statuses.push((await get(url, key ? { "x-api-key": key } : {})).status);
    expect(statuses).toEqual([200, 429, 200, 200, 429]);
  });

  // Regression: a header value equal to a client's address landed in that client's bucket and drained it.
  it("never puts a header's value in the bucket of the address it spells", async () => {
    const backend = await listen((_req, res) => res.end());
    const store = new MemoryStore();
    const { url } = await proxyTo(backend.url, { rate: 0.001, burst: 1, per: { by: "header", name: "X-Api-Key" }, shared: { store, name: "api", onStoreError: "fail" } });
    const statuses = [];
    for (const key of ["127.0.0.1", undefined, "x-api-key=a", "a"]) statuses.push((await get(url, key ? { "x-api-key": key } : {})).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect((await store.list()).map((bucket) => bucket.key).sort()).toEqual(["api:127.0.0.1", "api:x-api-key=127.0.0.1", "api:x-api-key=a", "api:x-api-key=x-api-key=a"]);
  });

  it("keys IPv6 clients by their /56, or by ipv6Subnet", async () => {
    const backend = await listen((_req, res) => res.end());
    const { url: by56 } = await proxyTo(backend.url, { rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"] });
    const { url: by64 } = await proxyTo(backend.url, { rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"], ipv6Subnet: 64 });
    for (const [url, want] of [[by56, [200, 429, 429, 200]], [by64, [200, 200, 429, 200]]] as const) {
      const statuses = [];
      for (const client of ["2001:db8:0:100::1", "2001:db8:0:1ff::1", "2001:db8:0:1ff::2", "2001:db8:0:200::1"]) statuses.push((await get(url, { "x-forwarded-for": client })).status);
      expect(statuses).toEqual(want);
    }
  });

  it("takes neither Forwarded nor X-Forwarded-For from a client through a trusted proxy that writes the other", async () => {
    const backend = await listen((_req, res) => res.end());
    const { url } = await proxyTo(backend.url, { rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"] });
    const statuses = [];
    for (const headers of <Array<Record<string, string>>>[{ forwarded: "for=198.51.100.6", "x-forwarded-for": "192.0.2.1" }, { forwarded: "for=192.0.2.1" }]) statuses.push((await get(url, headers)).status);
    expect(statuses).toEqual([200, 200]);
  });

  it("keys by the forwarded client only from trusted proxies", async () => {
    const backend = await listen((_req, res) => res.end());
    const { url: trusting } = await proxyTo(backend.url, { rate: 0.001, burst: 1, trustProxy: ["127.0.0.0/8"] });
    const { url: wary } = await proxyTo(backend.url, { rate: 0.001, burst: 1 });
    for (const [url, want] of [[trusting, [200, 200]], [wary, [200, 429]]] as const) {
      const statuses = [];
      for (const client of ["1.1.1.1", "2.2.2.2"]) statuses.push((await get(url, { "x-forwarded-for": client })).status);
      expect(statuses).toEqual(want);
    }
  });

  it("counts body-rate bytes per key and tells the observer", async () => {
    const backend = await listen((_req, res) => res.end(Buffer.alloc(300_000, 7)));
    let shaped = 0;
    const { url } = await proxyTo(backend.url, {
      bodyRate: { bytesPerSecond: 100 * 1024 * 1024, burstBytes: 1024 * 1024 },
      observer: { decision: () => {}, bytes: (n) => (shaped += n), storeError: () => {} },
    });
    const answer = await get(url);
    expect(answer.body.length).toBe(300_000);
    expect(shaped).toBe(300_000);
  });

  it("writes an access log line per request in Combined Log Format with the decision, which the trace reader takes as it is", async () => {
    const backend = await listen((_req, res) => res.end("12345"));
    const lines: string[] = [];
    const accessLog = new PassThrough();
    accessLog.on("data", (line: Buffer) => lines.push(line.toString()));
    const { url } = await proxyTo(backend.url, { rate: 0.001, burst: 1, accessLog });
    await get(`${url}/a"b`, { "user-agent": 'evil"agent', referer: "http://r/" });
    await get(`${url}/again`);
    await until(() => lines.length === 2, "two log lines");
    expect(lines[0]).toMatch(/^127\.0\.0\.1 - - \[\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2}\.\d{3} \+0000\] "GET \/a%22b HTTP\/1\.1" 200 5 "http:\/\/r\/" "evil\\"agent" admitted 0\n$/);
    expect(lines[1]).toMatch(/"GET \/again HTTP\/1\.1" 429 \d+ "-" "-" refused 0\n$/);
    for (const line of lines) {
      const out = {} as ParsedLine;
      parseAccessLogLine(line.trimEnd(), { costField: undefined, keyField: undefined, costBytes: true, wantKeys: true }, out);
      expect(out.key).toBe("127.0.0.1");
    }
  });

  it("goes on serving when the access log fails (a closed pipe), writing no more to it", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    let writes = 0;
    const accessLog = new Writable({
      write(_chunk, _encoding, callback) {
        writes++;
        callback(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
      },
    });
    accessLog.on("error", () => {});
    const { url } = await proxyTo(backend.url, { accessLog });
    for (let i = 0; i < 3; i++) expect((await get(url)).status).toBe(200);
    expect(writes).toBe(1);
  });

  it("answers 431 to headers larger than node takes, and 502 to a backend that answers garbage", async () => {
    const garbage = createTcpServer((socket) => socket.end("SMTP READY\r\n\r\n"));
    await new Promise<void>((resolve) => garbage.listen(0, "127.0.0.1", resolve));
    try {
      const { proxy, url } = await proxyTo(`http://127.0.0.1:${(garbage.address() as { port: number }).port}`);
      const big = await raw(proxy.address.port);
      big.write(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
      await big.closed;
      expect(big.text()).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
      expect((await get(url)).status).toBe(502);
    } finally {
      garbage.close();
    }
  });

  it("holds long header keys by their hash, so the table stays small whatever clients send", async () => {
    const backend = await listen((_req, res) => res.end());
    const { proxy, url } = await proxyTo(backend.url, { rate: 0.001, burst: 1, per: { by: "header", name: "x-api-key" }, maxKeys: 10 });
    const long = "k".repeat(10_000);
    expect((await get(url, { "x-api-key": long })).status).toBe(200);
    expect((await get(url, { "x-api-key": long })).status).toBe(429);
    for (let i = 0; i < 50; i++) await get(url, { "x-api-key": `${long}${i}` });
    expect(proxy.liveKeys()).toBe(10);
  });

  it("holds at most maxKeys clients, however many distinct ones come", async () => {
    const backend = await listen((_req, res) => res.end());
    const { proxy, url } = await proxyTo(backend.url, { rate: 1, burst: 5, trustProxy: ["127.0.0.1"], maxKeys: 100 });
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 2000) {
          const client = `10.1.${next >> 8}.${next++ & 255}`;
          await new Promise<void>((resolve, reject) => {
            request(url, { agent, headers: { "x-forwarded-for": client } }, (res) => res.resume().on("end", resolve)).on("error", reject).end();
          });
        }
      }),
    );
    agent.destroy();
    expect(proxy.liveKeys()).toBe(100);
  });

  it("lets go of keys whose buckets refilled while the proxy is idle", async () => {
    const backend = await listen((_req, res) => res.end());
    const clock = new FakeClock(0);
    // Half a second to refill; the sweep comes every second.
    const { proxy, url } = await proxyTo(backend.url, { rate: 2, burst: 1, trustProxy: ["127.0.0.1"], clock });
    for (let i = 0; i < 5; i++) await get(url, { "x-forwarded-for": `10.2.0.${i}` });
    expect(proxy.liveKeys()).toBe(5);
    await clock.advance(999);
    expect(proxy.liveKeys()).toBe(5);
    await clock.advance(1);
    expect(proxy.liveKeys()).toBe(0);
  });

  it("shares each client's limit with another proxy through a store: a client alternating between them gets burst + rate x T in all", async () => {
    const backend = await listen((_req, res) => res.end());
    const store = new MemoryStore();
    const shared = { store, name: "api", onStoreError: "fail" as const };
    const { url: one } = await proxyTo(backend.url, { rate: 0.001, burst: 2, shared });
    const { url: two } = await proxyTo(backend.url, { rate: 0.001, burst: 2, shared });
    const statuses = [];
    for (const url of [one, two, one, two]) statuses.push((await get(url)).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect((await store.read("api:127.0.0.1"))?.tokens).toBeLessThan(1);
  });

  it("answers 503 while a shared store fails under onStoreError fail, telling the observer", async () => {
    const backend = await listen((_req, res) => res.end());
    const store = new MemoryStore();
    store.read = async () => {
      throw new StoreError("lost", "store memory: gone", { storeUrl: "memory:" });
    };
    const errors: StoreError[] = [];
    const { url } = await proxyTo(backend.url, {
      rate: 10,
      burst: 2,
      shared: { store, name: "api", onStoreError: "fail" },
      observer: { decision: () => {}, bytes: () => {}, storeError: (error) => errors.push(error) },
    });
    expect(await get(url)).toMatchObject({ status: 503, body: "Service Unavailable: the rate limit's store cannot be reached\n" });
    expect(errors).toHaveLength(1);
  });

  it("rejects with EADDRINUSE when the port is taken", async () => {
    const taken = await listen(() => {});
    await expect(startHttpProxy({ listen: { host: "127.0.0.1", port: taken.port }, target: taken.url, rate: 1, burst: 1 })).rejects.toMatchObject({ code: "EADDRINUSE" });
  });

  it("on close, lets a request under way finish within the drain time and takes no new ones", async () => {
    let release: (() => void) | undefined;
    const backend = await listen((_req, res) => {
      release = () => res.end("late\n");
    });
    const proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: Infinity, burst: 1 });
    const url = `http://127.0.0.1:${proxy.address.port}`;
    const pending = get(url);
    await until(() => release !== undefined, "the request at the backend");
    const closing = proxy.close(5000);
    await expect(get(url)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    release!();
    expect(await pending).toMatchObject({ status: 200, body: "late\n" });
    await closing;
  });

  it("keeps serving new requests while 1,000 idle connections are open", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    const { proxy, url } = await proxyTo(backend.url);
    const idle = await Promise.all(Array.from({ length: 1000 }, () => raw(proxy.address.port)));
    expect(await get(url)).toMatchObject({ status: 200, body: "ok" });
    for (const socket of idle) socket.destroy();
  });
});

describe("parseHttpTarget", () => {
  it.each([
    ["127.0.0.1:8080", `"127.0.0.1:8080" is not a URL; expected http://HOST:PORT`],
    ["tcp://127.0.0.1:8080", `"tcp://127.0.0.1:8080" is not an http:// address (tcp is not proxied); expected http://HOST:PORT`],
    ["https://127.0.0.1:8443", `"https://127.0.0.1:8443" is not an http:// address (https is not proxied); expected http://HOST:PORT`],
    ["http://", `"http://" is not a URL; expected http://HOST:PORT`],
    ["http://127.0.0.1:8080/?q=1", `"http://127.0.0.1:8080/?q=1" has a query or fragment; expected http://HOST:PORT[/prefix]`],
    ["http://u:p@127.0.0.1", `"http://u:p@127.0.0.1" holds a user name or password, which the proxy would not send; expected http://HOST:PORT`],
  ])("refuses %s", (text, message) => {
    expect(() => parseHttpTarget(text)).toThrow(message);
  });

  it("takes http://HOST:PORT with a path prefix", () => {
    expect(parseHttpTarget("http://127.0.0.1:8080/api").pathname).toBe("/api");
  });
});
