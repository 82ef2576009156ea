import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { get, listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "./http-proxy-harness.js";

const { proxyTo, raw } = useHttpProxies();

describe("the HTTP proxy with a set of limits per client", () => {
  it("a WebSocket tunnel holds its concurrency slot while open and gives it back when it closes", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    backend.server.on("upgrade", (_req, socket: Socket) => {
      socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
      // The tunnel is open until both ends close: this end closes when the client does.
      socket.on("end", () => socket.end());
    });
    const { proxy, url } = await proxyTo(backend.url, { limits: [{ concurrency: 1 }] });
    const tunnel = await raw(proxy.address.port);
    tunnel.write("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
    await until(() => tunnel.text().includes("\r\n\r\n"), "the 101");
    expect(tunnel.text()).toMatch(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    expect(await get(url)).toMatchObject({ status: 429, headers: { "retry-after": "1" } });
    tunnel.destroy();
    await tunnel.closed;
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await get(url)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(status).toBe(200);
  });

  it("a plain request's slot comes back when its response ends", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    const { url } = await proxyTo(backend.url, { limits: [{ concurrency: 1 }, { rate: 1000, burst: 1000 }] });
    for (let i = 0; i < 20; i++) expect((await get(url)).status).toBe(200);
  });
});
