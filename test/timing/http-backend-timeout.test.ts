import { describe, expect, it } from "vitest";
import { listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "../proxy/http-proxy-harness.js";

// The HTTP proxy's backend timeout in real time: it runs from the request's last byte.

const { proxyTo, raw } = useHttpProxies();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the HTTP proxy's backend timeout", () => {
  it("runs from the request's last byte: a body trickling in for longer than it goes through; a client that stops sending gets 408, a backend that does not answer 504", async () => {
    let received = "";
    const backend = await listen((req, res) => {
      req.on("data", (chunk: Buffer) => (received += chunk));
      if (req.url === "/mute") return;
      req.on("end", () => res.end(`got ${received.length}\n`));
    });
    const { port } = await proxyTo(backend.url, { backendTimeoutMs: 1000 });
    const slow = await raw(port);
    slow.write("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 24\r\n\r\n");
    const started = performance.now();
    for (let i = 0; i < 24; i++) {
      await sleep(100);
      slow.write("x");
    }
    await until(() => slow.text().endsWith("\r\n\r\ngot 24\n"), "the slow upload's answer");
    // Twice the timeout went by while the body came, a byte every 100 ms (a stall of 900 ms would still not cut it).
    expect(performance.now() - started).toBeGreaterThan(2000);
    expect(slow.text()).toMatch(/^HTTP\/1\.1 200 OK\r\n/);

    const stalled = await raw(port);
    stalled.write("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\nabc");
    await stalled.closed;
    expect(stalled.text()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*\r\nConnection: close\r\n\r\nRequest Timeout: the request's body stopped coming\n$/);

    const mute = await raw(port);
    mute.write("POST /mute HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
    await until(() => mute.text().includes("\r\n\r\n"), "the mute backend's 504");
    expect(mute.text()).toMatch(/^HTTP\/1\.1 504 Gateway Timeout\r\n[\s\S]*\r\n\r\nGateway Timeout: the backend did not answer in time\n$/);
  });
});
