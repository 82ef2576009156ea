import { readFileSync, renameSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { runCli } from "../helpers/cli.js";
import { freePort } from "../helpers/free-port.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-http");
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
});

async function httpBackend(): Promise<number> {
  const server = createServer((request, response) => response.end(`ok ${request.url}\n`));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

describe("tbucket proxy --to http://...", () => {
  it("admits the burst, answers 429 with Retry-After beyond it, logs each decision, counts them in metrics, and exits 0 on SIGTERM", async () => {
    const backendPort = await httpBackend();
    const log = join(tempDir(), "access.log");
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/10s", "--burst", "2", "--access-log", log, "--metrics", "127.0.0.1:0"]);
    const responses = [];
    for (let i = 0; i < 4; i++) responses.push(await fetch(`http://127.0.0.1:${proxy.port}/item/${i}`));
    expect(responses.map((response) => response.status)).toEqual([200, 200, 429, 429]);
    expect(await responses[0]!.text()).toBe("ok /item/0\n");
    expect(Number(responses[2]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(responses[2]!.headers.get("retry-after"))).toBeLessThanOrEqual(10);
    const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
    expect(metrics).toContain("tbucket_proxy_admitted_total 2\n");
    expect(metrics).toContain("tbucket_proxy_refused_total 2\n");
    expect(metrics).toContain("tbucket_proxy_live_keys 1\n");
    // The client connections fetch keeps open (as docs/design.md lists it).
    expect(metrics).toMatch(/^tbucket_proxy_open_connections [0-4]\n/m);
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^127\.0\.0\.1 - - \[.+\] "GET \/item\/0 HTTP\/1\.1" 200 \d+ .* admitted/);
    expect(lines[3]).toMatch(/"GET \/item\/3 HTTP\/1\.1" 429 .* refused/);
  });

  it("two proxies on one --key and store hold a client to one limit together", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const shared = ["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/10s", "--burst", "3", "--key", "api", "--store", `sqlite:${join(dir, "buckets.db")}`];
    const env = { XDG_STATE_HOME: dir };
    const first = await startProxy(shared, { env });
    const second = await startProxy(shared, { env });
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push((await fetch(`http://127.0.0.1:${(i % 2 === 0 ? first : second).port}/`)).status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(3);
    expect(statuses.filter((status) => status === 429)).toHaveLength(5);
    expect((await stopProxy(first)).code).toBe(0);
    expect((await stopProxy(second)).code).toBe(0);
  });

  it("makes each client's key forgettable once full again, and leaves a key set with tbucket key set as it is", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    expect((await runCli(["key", "set", "api:10.0.0.2", "--rate", "2/s", "--store", store], { env })).code).toBe(0);
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "5/s", "--trust-proxy", "127.0.0.1", "--key", "api", "--store", store], { env });
    for (const client of ["10.0.0.1", "10.0.0.2"]) {
      expect((await fetch(`http://127.0.0.1:${proxy.port}/`, { headers: { "x-forwarded-for": client } })).status).toBe(200);
    }
    expect((await stopProxy(proxy)).code).toBe(0);
    const opened = await SqliteStore.open(join(dir, "buckets.db"));
    expect((await opened.list()).map((state) => [state.key, state.rate, state.expiresWhenFull])).toEqual([
      ["api:10.0.0.1", 5, true],
      ["api:10.0.0.2", 2, undefined],
    ]);
    await opened.close();
  });

  it("passes --policy queue, --max-wait, --per and --trust-proxy on to the proxy", async () => {
    const backendPort = await httpBackend();
    const queued = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "5/s", "--policy", "queue", "--max-wait", "1s"]);
    const startedMs = performance.now();
    const statuses = await Promise.all([0, 1, 2].map(async () => (await fetch(`http://127.0.0.1:${queued.port}/`)).status));
    expect(statuses).toEqual([200, 200, 200]);
    // One at once, then one every 200 ms.
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(350);
    expect((await stopProxy(queued)).code).toBe(0);

    const perClient = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/10s", "--trust-proxy", "127.0.0.1", "--per", "ip", "--ipv6-prefix", "64"]);
    const as = async (client: string) => (await fetch(`http://127.0.0.1:${perClient.port}/`, { headers: { "x-forwarded-for": client } })).status;
    expect([await as("10.0.0.1"), await as("10.0.0.2"), await as("10.0.0.1")]).toEqual([200, 200, 429]);
    // One /64 is one client; the next /64 of the same /56 is another.
    expect([await as("2001:db8::1"), await as("2001:db8::2"), await as("2001:db8:0:1::1")]).toEqual([200, 429, 200]);
    expect((await stopProxy(perClient)).code).toBe(0);

    const perHeader = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/10s", "--per", "header:X-Api-Key"]);
    const key = async (name: string) => (await fetch(`http://127.0.0.1:${perHeader.port}/`, { headers: { "x-api-key": name } })).status;
    expect([await key("a"), await key("b"), await key("a")]).toEqual([200, 200, 429]);
    expect((await stopProxy(perHeader)).code).toBe(0);
  });

  it("says once that requests forwarded by a private address share one bucket without --trust-proxy; not with it, nor for requests not forwarded", async () => {
    const backendPort = await httpBackend();
    const args = ["--to", `http://127.0.0.1:${backendPort}`, "--rate", "100/s", "--burst", "20"];
    const [untrusted, trusted, plain] = await Promise.all([startProxy(args), startProxy([...args, "--trust-proxy", "127.0.0.1"]), startProxy(args)]);
    const forwarded = [{ "x-forwarded-for": "192.0.2.1" }, { forwarded: "for=192.0.2.2" }, { "x-forwarded-for": "192.0.2.3" }, { "x-forwarded-for": "192.0.2.1", forwarded: "for=192.0.2.1" }];
    for (const proxy of [untrusted, trusted]) {
      for (const headers of [{}, ...forwarded]) expect((await fetch(`http://127.0.0.1:${proxy.port}/`, { headers })).status).toBe(200);
    }
    for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${plain.port}/`)).status).toBe(200);
    const [untrustedEnd, trustedEnd, plainEnd] = await Promise.all([stopProxy(untrusted), stopProxy(trusted), stopProxy(plain)]);
    const saidBeyondListening = (stderr: string) => stderr.replace(/^tbucket proxy: listening on .*\n/, "");
    expect([untrustedEnd.code, saidBeyondListening(untrustedEnd.stderr)]).toEqual([
      0,
      `tbucket: warning: requests come through a proxy at 127.0.0.1 (they carry X-Forwarded-For) and --trust-proxy is not set, so every client behind it shares one bucket; ` +
        `add --trust-proxy 127.0.0.1 to key each client by its own address\n`,
    ]);
    expect([trustedEnd.code, saidBeyondListening(trustedEnd.stderr)]).toEqual([0, ""]);
    expect([plainEnd.code, saidBeyondListening(plainEnd.stderr)]).toEqual([0, ""]);
  });

  it("exits 1 with one line when the access log cannot be opened", async () => {
    const log = join(tempDir(), "missing", "access.log");
    const result = await runCli(["proxy", "--listen", "127.0.0.1:0", "--to", "http://127.0.0.1:9", "--rate", "5/s", "--access-log", log]);
    expect(result.stderr).toBe(`tbucket: --access-log ${log}: its folder does not exist; choose a file you can write\n`);
    expect(result.code).toBe(1);
  });

  it("exits 1 with one line when the port is in use", async () => {
    const port = await httpBackend();
    const result = await runCli(["proxy", "--listen", `127.0.0.1:${port}`, "--to", "http://127.0.0.1:9", "--rate", "5/s"]);
    expect(result.stderr).toBe(`tbucket: --listen 127.0.0.1:${port}: the address is in use; stop what listens there, or choose another port\n`);
    expect(result.code).toBe(1);
  });

  it("exits 2 for --policy queue without --max-wait", async () => {
    const result = await runCli(["proxy", "--listen", "0", "--to", "http://127.0.0.1:9", "--rate", "5/s", "--policy", "queue"]);
    expect(result.stderr).toBe(`tbucket: --policy queue: needs --max-wait, the longest a request waits its turn before a 429; add e.g. "--max-wait 2s"\n`);
    expect(result.code).toBe(2);
  });

  it("exits 2 for an --ipv6-prefix that is not 1 to 128", async () => {
    const result = await runCli(["proxy", "--listen", "0", "--to", "http://127.0.0.1:9", "--rate", "5/s", "--ipv6-prefix", "129"]);
    expect(result.stderr).toBe(
      `tbucket: --ipv6-prefix: "129" is not a prefix length; give the bits of an IPv6 address that make one client, 1 to 128 (56, the default, is one customer's network; 128 the whole address)\n`,
    );
    expect(result.code).toBe(2);
  });

  // The HTTP mode served on private buckets while its metrics said the store was up, and counted no error; the TCP mode counted it.
  it("a store unreachable at the start with --on-store-error local: one warning, private buckets, and the metrics say the store is not up", async () => {
    const backendPort = await httpBackend();
    const store = `redis://127.0.0.1:${await freePort()}`;
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/m", "--burst", "1", "--key", "api", "--store", store, "--on-store-error", "local", "--metrics", "127.0.0.1:0"]);
    expect(proxy.running.stderr()).toMatch(/^tbucket: warning: store redis:\/\/127\.0\.0\.1:\d+: cannot reach Redis .*; going on with private buckets\n/);
    const status = async () => (await fetch(`http://127.0.0.1:${proxy.port}/`)).status;
    expect([await status(), await status()]).toEqual([200, 429]);
    const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
    expect(metrics).toContain("\ntbucket_proxy_store_errors_total 1\n");
    expect(metrics).toContain("\ntbucket_proxy_store_up 0\n");
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it("--on-store-error open lets every request through while the SQLite file is away, says both ends, and limits again once it is back", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const path = join(dir, "buckets.db");
    const proxy = await startProxy(["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/m", "--burst", "1", "--key", "api", "--store", `sqlite:${path}`, "--on-store-error", "open"], {
      env: { XDG_STATE_HOME: dir },
    });
    const status = async () => (await fetch(`http://127.0.0.1:${proxy.port}/`)).status;
    const until = async (wanted: number, what: string) => {
      const deadline = performance.now() + 5000;
      while ((await status()) !== wanted) {
        if (performance.now() > deadline) throw new Error(`no ${wanted} in 5 s: ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    expect([await status(), await status()]).toEqual([200, 429]);
    renameSync(path, `${path}.away`);
    await until(200, "the file away");
    expect([await status(), await status(), await status()]).toEqual([200, 200, 200]);
    renameSync(`${path}.away`, path);
    await until(429, "the file back");
    const lines = proxy.running.stderr().split("\n").slice(1, -1);
    expect(lines).toEqual([
      `tbucket: warning: store sqlite:${path}: the file was deleted while in use, so its buckets are no longer shared; letting every request through until it is back`,
      expect.stringMatching(new RegExp(`^tbucket: store sqlite:${path.replace(/\./g, "\\.")}: back after (\\d+ ms|\\d+\\.\\d s); the buckets are shared again$`)),
    ]);
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});
