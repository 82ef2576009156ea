import { readFileSync } from "node:fs";
import { createServer, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startProxy, stopProxy, windowRetryAfterRange } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-http-sets");
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

/** A backend that answers at once, or, for /hold, when the test lets it. */
async function httpBackend(held: ServerResponse[] = []): Promise<number> {
  const server = createServer((request, response) => {
    if (request.url === "/hold") held.push(response);
    else response.end(`ok ${request.url}\n`);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

describe("tbucket proxy --to http://... with a set of limits per client", () => {
  it("--rate 10/s --burst 20 --window 15/30s lets 15 through, then 429 from the window with its Retry-After, in the log and the metrics", async () => {
    const backendPort = await httpBackend();
    const log = join(tempDir(), "access.log");
    const proxy = await startProxy([
      "--to", `http://127.0.0.1:${backendPort}`, "--rate", "10/s", "--burst", "20", "--window", "15/30s", "--access-log", log, "--metrics", "127.0.0.1:0",
    ]);
    expect(proxy.running.stderr()).toContain("(HTTP, rate 10/s burst 20, window 15/30s, per ip)");
    const responses = [];
    const times = [];
    for (let i = 0; i < 18; i++) {
      const sentMs = performance.now();
      responses.push(await fetch(`http://127.0.0.1:${proxy.port}/item/${i}`));
      times.push({ sentMs, answeredMs: performance.now() });
    }
    // A window of 30 s: however slow the machine, the 18 come within it.
    expect(responses.map((response) => response.status)).toEqual([...Array(15).fill(200), 429, 429, 429]);
    expect(responses[0]!.headers.get("ratelimit-policy")).toBe(`"limit-1";q=10;w=1, "limit-2";q=15;w=30`);
    expect(responses[0]!.headers.get("ratelimit")).toBe(`"limit-1";r=19;t=1, "limit-2";r=14;t=30`);
    const refused = responses[15]!;
    // When the first admission leaves the window, to the second.
    const retryAfter = Number(refused.headers.get("retry-after"));
    const [soonest, latest] = windowRetryAfterRange(30_000, times[0]!, times[15]!);
    expect(retryAfter).toBeGreaterThanOrEqual(soonest);
    expect(retryAfter).toBeLessThanOrEqual(latest);
    expect(refused.headers.get("ratelimit")).toBe(`"limit-2";r=0;t=${retryAfter}`);
    expect(await refused.text()).toBe(`Too Many Requests: retry after ${retryAfter} s\n`);
    const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
    expect(metrics).toContain("tbucket_proxy_admitted_total 15\n");
    expect(metrics).toContain(`tbucket_proxy_refused_by_limit_total{limit="2"} 3\n`);
    expect((await stopProxy(proxy)).code).toBe(0);
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines).toHaveLength(18);
    expect(lines[0]).toMatch(/"GET \/item\/0 HTTP\/1\.1" 200 .* admitted 0$/);
    expect(lines[15]).toMatch(/"GET \/item\/15 HTTP\/1\.1" 429 .* refused 0 limit=2$/);
  });

  it("--concurrency 1 holds a client's slot while its response is under way and gives it back when it ends", async () => {
    const held: ServerResponse[] = [];
    const backendPort = await httpBackend(held);
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--concurrency", "1"]);
    const first = fetch(`http://127.0.0.1:${proxy.port}/hold`);
    for (let i = 0; i < 500 && held.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(held).toHaveLength(1);
    const refused = await fetch(`http://127.0.0.1:${proxy.port}/`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("1");
    held[0]!.end("done\n");
    expect(await (await first).text()).toBe("done\n");
    expect((await fetch(`http://127.0.0.1:${proxy.port}/`)).status).toBe(200);
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});
