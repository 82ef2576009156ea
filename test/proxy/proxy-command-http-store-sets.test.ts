import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { sleep } from "../helpers/cli.js";
import { startProxy, stopProxy, windowRetryAfterRange } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

// `tbucket proxy --to http://… --key` with a set of limits: each client's set in the store, held together by every proxy on it.

const tempDir = tempDirs("proxy-http-store-sets");
const servers: Server[] = [];
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

async function httpBackend(): Promise<number> {
  const server = createServer((request, response) => response.end(`ok ${request.url}\n`));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

// A window of 30 s: however slow the machine, each test's requests come within it.
const SET = ["--rate", "10/s", "--burst", "20", "--window", "15/30s", "--key", "api"];

describe("tbucket proxy --to http://… with a set of limits and --key", () => {
  it("two proxies on one SQLite file hold a client's set together: 15 through, then 429 from the window with its Retry-After", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const path = join(dir, "buckets.db");
    const args = ["--to", `http://127.0.0.1:${backendPort}`, ...SET, "--store", `sqlite:${path}`];
    const one = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    const two = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    expect(one.running.stderr()).toContain("(HTTP, rate 10/s burst 20, window 15/30s, per ip)");
    const statuses: number[] = [];
    const times = [];
    let refused: Response | undefined;
    for (let i = 0; i < 18; i++) {
      const sentMs = performance.now();
      const response = await fetch(`http://127.0.0.1:${(i % 2 === 0 ? one : two).port}/item/${i}`);
      times.push({ sentMs, answeredMs: performance.now() });
      statuses.push(response.status);
      if (response.status === 429) refused ??= response;
      else await response.text();
    }
    expect(statuses).toEqual([...Array(15).fill(200), 429, 429, 429]);
    // When the first admission (on the other proxy) leaves the window, to the second.
    const retryAfter = Number(refused!.headers.get("retry-after"));
    const [soonest, latest] = windowRetryAfterRange(30_000, times[0]!, times[15]!);
    expect(retryAfter).toBeGreaterThanOrEqual(soonest);
    expect(retryAfter).toBeLessThanOrEqual(latest);
    expect(refused!.headers.get("ratelimit-policy")).toBe(`"limit-1";q=10;w=1, "limit-2";q=15;w=30`);
    expect(refused!.headers.get("ratelimit")).toBe(`"limit-2";r=0;t=${retryAfter}`);
    expect(await refused!.text()).toBe(`Too Many Requests: retry after ${retryAfter} s\n`);
    expect((await stopProxy(one)).code).toBe(0);
    expect((await stopProxy(two)).code).toBe(0);
    const store = await SqliteStore.open(path);
    try {
      const state = await store.readSet("api:127.0.0.1");
      expect(state).toMatchObject({ expiresWhenFull: true, limits: [{ kind: "bucket", rate: 10, burst: 20 }, { kind: "window", n: 15, windowMs: 30_000 }] });
    } finally {
      await store.close();
    }
  });

  it("on Redis: the set holds, a lost server answers 503 with Retry-After 1, and the set is the store's again once it is back", async () => {
    const backendPort = await httpBackend();
    const redis = await startRedisServer();
    stops.push(() => redis.stop());
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, ...SET, "--store", redis.url]);
    const statuses: number[] = [];
    for (let i = 0; i < 16; i++) statuses.push((await fetch(`http://127.0.0.1:${proxy.port}/`)).status);
    expect(statuses).toEqual([...Array(15).fill(200), 429]);

    await redis.stop("SIGKILL");
    const lost = await fetch(`http://127.0.0.1:${proxy.port}/`);
    expect(lost.status).toBe(503);
    expect(lost.headers.get("retry-after")).toBe("1");
    expect(await lost.text()).toBe("Service Unavailable: the rate limit's store cannot be reached\n");
    expect((await fetch(`http://127.0.0.1:${proxy.port}/`)).status).toBe(503);
    expect(proxy.running.stderr()).toMatch(/\ntbucket: warning: store redis:\/\/127\.0\.0\.1:\d+: .*; answering 503 with Retry-After until it is back\n/);

    await redis.start();
    // Seen within a probe (at most 500 ms apart) and a round trip; the restarted server is empty, so the set starts afresh.
    let status = 503;
    const deadline = performance.now() + 5000;
    while (status === 503 && performance.now() < deadline) {
      await sleep(50);
      status = (await fetch(`http://127.0.0.1:${proxy.port}/`)).status;
    }
    expect(status).toBe(200);
    expect(proxy.running.stderr()).toMatch(/\ntbucket: store redis:\/\/127\.0\.0\.1:\d+: back after .*\n/);
    const again: number[] = [];
    for (let i = 0; i < 15; i++) again.push((await fetch(`http://127.0.0.1:${proxy.port}/`)).status);
    expect(again).toEqual([...Array(14).fill(200), 429]);
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});
