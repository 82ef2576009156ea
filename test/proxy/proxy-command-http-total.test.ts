import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { runCli } from "../helpers/cli.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

// `tbucket proxy --to http://… --total`: a limit for every request together, beside each client's.

const tempDir = tempDirs("proxy-http-total");
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

const as = (port: number, client: string) => fetch(`http://127.0.0.1:${port}/`, { headers: { "x-forwarded-for": client } });

// Each client 5 at once, everyone together 3 in 100 s: the total binds from the fourth request on, whoever sends it.
const LIMITS = ["--per", "ip", "--trust-proxy", "127.0.0.1", "--rate", "5/s", "--burst", "5", "--total", "3/100s", "--total-burst", "3"];

describe("tbucket proxy --total", () => {
  it("refuses the fourth client by the total, with the total's Retry-After and fields, in the log and the metrics", async () => {
    const backendPort = await httpBackend();
    const log = join(tempDir(), "access.log");
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, ...LIMITS, "--access-log", log, "--metrics", "127.0.0.1:0"]);
    expect(proxy.running.stderr()).toContain("(HTTP, 5/s, burst 5, per ip, total 0.03/s, burst 3)");
    const statuses = [];
    for (const client of ["192.0.2.1", "192.0.2.2", "192.0.2.3"]) {
      const response = await as(proxy.port, client);
      await response.text();
      statuses.push(response.status);
      // 3 in 100 s is advertised as 1 in 34 s (whole numbers, never more than the rate).
      expect(response.headers.get("ratelimit-policy")).toBe(`"limit-1";q=5;w=1, "total";q=1;w=34`);
    }
    const refused = await as(proxy.port, "192.0.2.4");
    expect([...statuses, refused.status]).toEqual([200, 200, 200, 429]);
    // The total is empty and refills one request in 33.3 s.
    expect(refused.headers.get("retry-after")).toBe("34");
    expect(refused.headers.get("ratelimit")).toBe(`"total";r=0;t=34`);
    expect(await refused.text()).toBe("Too Many Requests: retry after 34 s\n");
    const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
    expect(metrics).toContain(`tbucket_proxy_refused_by_limit_total{limit="total"} 1\n`);
    expect(metrics).toContain("tbucket_proxy_admitted_total 3\n");
    expect((await stopProxy(proxy)).code).toBe(0);
    const { readFileSync } = await import("node:fs");
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines[3]).toMatch(/^192\.0\.2\.4 - - \[.*\] "GET \/ HTTP\/1\.1" 429 36 "-" "node" refused 0 total=1$/);
    expect(lines.slice(0, 3).every((line) => / 200 \d+ "-" "node" admitted \d+$/.test(line))).toBe(true);
  });

  it("with --key on SQLite two proxies share the total (the key NAME), and a client the total refused keeps its tokens", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const path = join(dir, "buckets.db");
    const args = ["--to", `http://127.0.0.1:${backendPort}`, ...LIMITS, "--key", "api", "--store", `sqlite:${path}`];
    const one = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    const two = await startProxy(args, { env: { XDG_STATE_HOME: dir } });
    const statuses = [];
    for (const [i, client] of ["192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.1", "192.0.2.4"].entries()) {
      const response = await as((i % 2 === 0 ? one : two).port, client);
      await response.text();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    expect((await stopProxy(one)).code).toBe(0);
    expect((await stopProxy(two)).code).toBe(0);
    const store = await SqliteStore.open(path);
    try {
      const total = await store.readSet("api");
      expect(total).toMatchObject({ limits: [{ kind: "bucket", rate: 0.03, burst: 3 }] });
      expect(total!.limits[0]!.level).toBeLessThan(0.2);
      // 192.0.2.1 was admitted once and refused once by the total: 4 tokens (and what refilled), not 3.
      const client = await store.readSet("api:192.0.2.1");
      expect(client!.limits[0]!.level).toBeGreaterThanOrEqual(4);
      // 192.0.2.4 was only ever refused by the total: its set was given back whole.
      const untouched = await store.readSet("api:192.0.2.4");
      expect(untouched === undefined || untouched.limits[0]!.level >= 5 - 1e-9).toBe(true);
    } finally {
      await store.close();
    }
  });

  it("on Redis: the total holds across two proxies", async () => {
    const backendPort = await httpBackend();
    const redis = await startRedisServer();
    stops.push(() => redis.stop());
    const args = ["--to", `http://127.0.0.1:${backendPort}`, ...LIMITS, "--key", "api", "--store", redis.url];
    const one = await startProxy(args);
    const two = await startProxy(args);
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      const response = await as((i % 2 === 0 ? one : two).port, `192.0.2.${i}`);
      await response.text();
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    expect((await stopProxy(one)).code).toBe(0);
    expect((await stopProxy(two)).code).toBe(0);
  });

  it("takes --total without --rate: no limit per client, the total for everyone", async () => {
    const backendPort = await httpBackend();
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--total", "2/100s", "--total-burst", "2"]);
    expect(proxy.running.stderr()).toContain("(HTTP, unlimited, per ip, total 0.02/s, burst 2)");
    const statuses = [];
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`http://127.0.0.1:${proxy.port}/`);
      await response.text();
      statuses.push(response.status);
      expect(response.headers.get("ratelimit-policy")).toBe(`"total";q=1;w=50`);
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it.each([
    [["--total", "lots"], `tbucket: --total: "lots" is not a count rate; try "5", "300/m" or "1/10s"\n`],
    [["--total", "2mb"], `tbucket: --total: "2mb" is a byte rate; --total counts the requests of every client together ("2000/s")\n`],
    [["--total-burst", "20"], `tbucket: --total-burst: sizes the --total bucket, and no --total is given; add e.g. "--total 2000/s --total-burst 20"\n`],
    [["--total", "20/s", "--total-burst", "0"], `tbucket: --total-burst: "0" is not a whole number 1 or more; try "1" or "10"\n`],
    [
      ["--total", "20/s", "--total-burst", "2", "--total-burst", "3"],
      `tbucket: --total-burst: given 2 times for 1 --total; the i-th --total-burst goes with the i-th --total, so drop one or add its --total\n`,
    ],
    [
      ["--total", "20/s", "--class", "a=1/s"],
      `tbucket: --total: beside --class is not built (classes share each key's limits); drop --total, or put a proxy with "--per all --rate RATE" in front\n`,
    ],
  ])("exits 2 for %j", async (extra, message) => {
    const result = await runCli(["proxy", "--listen", "0", "--to", "http://127.0.0.1:9", "--rate", "5/s", ...extra]);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });

  it("exits 2 for --total in TCP mode, saying what to write instead", async () => {
    const result = await runCli(["proxy", "--listen", "0", "--to", "127.0.0.1:9", "--rate", "1mb", "--total", "20/s"]);
    expect(result.stderr).toBe(
      `tbucket: --total: limits HTTP requests of every client together, and --to 127.0.0.1:9 is TCP, which shapes bytes; for all connections together use --per link (the default) with --rate, or --to http://HOST:PORT\n`,
    );
    expect(result.code).toBe(2);
  });
});
