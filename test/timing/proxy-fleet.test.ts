// A fleet: two HTTP proxies on two ports share their per-client buckets through one Redis, so
// a client that alternates between them as fast as it can is held to one limit in all: at most
// burst + rate x T admitted over T, and about rate x T.
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-fleet");
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

async function httpBackend(): Promise<number> {
  const server = createServer((_request, response) => response.end("ok\n"));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

describe("two tbucket proxies sharing --store redis://", () => {
  it("hold a client alternating between them to burst + rate x T in all", async () => {
    const RATE = 20;
    const BURST = 5;
    const backendPort = await httpBackend();
    const redis = await startRedisServer();
    const env = { XDG_STATE_HOME: tempDir() };
    const args = ["--to", `http://127.0.0.1:${backendPort}`, "--rate", `${RATE}/s`, "--burst", String(BURST), "--per", "ip", "--key", "fleet", "--store", redis.url];
    const proxies = [await startProxy(args, { env }), await startProxy(args, { env })];
    try {
      const startedMs = performance.now();
      let admitted = 0;
      let refused = 0;
      let lastAdmittedMs = startedMs;
      for (let i = 0; performance.now() - startedMs < 3000; i++) {
        const response = await fetch(`http://127.0.0.1:${proxies[i % 2]!.port}/`);
        await response.arrayBuffer();
        if (response.status === 200) {
          admitted++;
          lastAdmittedMs = performance.now();
        } else {
          expect(response.status).toBe(429);
          refused++;
        }
      }
      const seconds = (lastAdmittedMs - startedMs) / 1000;
      // The envelope, with one token of slack for the time a request takes to reach the store.
      expect(admitted).toBeLessThanOrEqual(BURST + RATE * seconds + 1);
      // A loaded machine may send fewer requests than the limit allows, never many fewer here.
      expect(admitted).toBeGreaterThanOrEqual(0.8 * RATE * 3);
      expect(refused).toBeGreaterThan(0);
    } finally {
      for (const proxy of proxies) expect((await stopProxy(proxy)).code).toBe(0);
      await redis.stop();
    }
  });
});
