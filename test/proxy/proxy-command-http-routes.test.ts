import { createServer, type Server } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { runCli } from "../helpers/cli.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

// `tbucket proxy --config FILE` and `--route`: rules per route, each with its own limits, cost and class.

const tempDir = tempDirs("proxy-http-routes");
const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(
    servers.splice(0).map((server) => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    }),
  );
});

async function httpBackend(): Promise<number> {
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => response.end(`ok ${request.method} ${request.url}\n`));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as { port: number }).port;
}

function configFile(name: string, text: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, text);
  return path;
}

async function status(port: number, client: string, method: string, path: string): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { "x-forwarded-for": client } });
  await response.text();
  return response.status;
}

// Rates of 1 in 100 s: nothing refills while a test runs, so each bucket holds its burst and no more.
const RULES = (backendPort: number) => `
to: http://127.0.0.1:${backendPort}
per: ip
trust-proxy: 127.0.0.1
rate: 1/100s
burst: 3
routes:
  - match: POST /login
    rate: 1/100s
    burst: 2
  # Never reached by POST /login: the first match wins.
  - match: /login*
    rate: 1/100s
    burst: 1
  - /export*=cost=3
`;

describe("tbucket proxy --config with routes", () => {
  it("holds each rule to its own limits, apart from the default and the other rules, the first match winning", async () => {
    const backendPort = await httpBackend();
    const proxy = await startProxy(["--config", configFile("tbucket.yaml", RULES(backendPort))]);
    try {
      expect(proxy.running.stderr()).toContain(`(HTTP, 0.01/s, burst 3, per ip, 3 routes)`);
      // POST /login: its own 2, whatever the default holds.
      const login = [];
      for (let i = 0; i < 3; i++) login.push(await status(proxy.port, "192.0.2.1", "POST", "/login"));
      expect(login).toEqual([200, 200, 429]);
      // The default is untouched by the rule's requests; GET /login is the second rule's (1), not the first's.
      expect(await status(proxy.port, "192.0.2.1", "GET", "/")).toBe(200);
      expect(await status(proxy.port, "192.0.2.1", "GET", "/login?next=/")).toBe(200);
      expect(await status(proxy.port, "192.0.2.1", "GET", "/login")).toBe(429);
      // Each client its own keys in a rule too.
      expect(await status(proxy.port, "192.0.2.2", "POST", "/login")).toBe(200);
      // /export costs 3 of the default: client 1 has 2 left, client 3 all 3 (then none for GET /).
      expect(await status(proxy.port, "192.0.2.1", "GET", "/export/all")).toBe(429);
      expect(await status(proxy.port, "192.0.2.3", "GET", "/export/all")).toBe(200);
      expect(await status(proxy.port, "192.0.2.3", "GET", "/")).toBe(429);
    } finally {
      expect((await stopProxy(proxy)).code).toBe(0);
    }
  });

  it("holds every rule's requests to --total together with the default's", async () => {
    const backendPort = await httpBackend();
    const file = configFile("tbucket.json", JSON.stringify({ to: `http://127.0.0.1:${backendPort}`, per: "ip", "trust-proxy": "127.0.0.1", rate: "5/s", routes: [{ match: "POST /login", rate: "5/s" }] }));
    const proxy = await startProxy(["--config", file, "--total", "3/100s", "--total-burst", "3"]);
    try {
      const statuses = [];
      for (const [client, method, path] of [["192.0.2.1", "POST", "/login"], ["192.0.2.2", "GET", "/"], ["192.0.2.3", "POST", "/login"], ["192.0.2.4", "GET", "/"], ["192.0.2.5", "POST", "/login"]]) {
        statuses.push(await status(proxy.port, client!, method!, path!));
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
    } finally {
      expect((await stopProxy(proxy)).code).toBe(0);
    }
  });

  it("with --key on SQLite two proxies hold a rule together, in keys apart from the default's", async () => {
    const backendPort = await httpBackend();
    const dir = tempDir();
    const path = join(dir, "buckets.db");
    const file = configFile("tbucket.yaml", `${RULES(backendPort)}key: api\nstore: sqlite:${path}\n`);
    const one = await startProxy(["--config", file], { env: { XDG_STATE_HOME: dir } });
    const two = await startProxy(["--config", file], { env: { XDG_STATE_HOME: dir } });
    const statuses = [];
    for (const proxy of [one, two, one]) statuses.push(await status(proxy.port, "192.0.2.1", "POST", "/login"));
    statuses.push(await status(two.port, "192.0.2.1", "GET", "/"));
    expect(statuses).toEqual([200, 200, 429, 200]);
    expect((await stopProxy(one)).code).toBe(0);
    expect((await stopProxy(two)).code).toBe(0);
    const store = await SqliteStore.open(path);
    try {
      const keys = (await store.listSets()).map((set) => set.key.replace(/^api:[0-9a-f]{8}:/, "api:<plan>:")).sort();
      expect(keys).toEqual(["api:<plan>:192.0.2.1", "api:<plan>:route1:192.0.2.1"]);
    } finally {
      await store.close();
    }
  });

  it("takes --route on the command line, which replaces the file's routes", async () => {
    const backendPort = await httpBackend();
    const file = configFile("tbucket.yaml", RULES(backendPort));
    const proxy = await startProxy(["--config", file, "--route", "POST /login=1/100s"]);
    try {
      expect(proxy.running.stderr()).toContain(`, 1 route)`);
      expect([await status(proxy.port, "192.0.2.1", "POST", "/login"), await status(proxy.port, "192.0.2.1", "POST", "/login")]).toEqual([200, 429]);
      // No /login* rule any more: GET /login is the default's.
      expect(await status(proxy.port, "192.0.2.1", "GET", "/login")).toBe(200);
    } finally {
      expect((await stopProxy(proxy)).code).toBe(0);
    }
  });
});

describe("tbucket proxy --check-config", () => {
  it("prints what each rule resolves to, and the default, without listening", async () => {
    const file = configFile(
      "tbucket.yaml",
      `listen: 8080
to: http://127.0.0.1:3000
per: header:X-Api-Key
rate: 10/s
burst: 20
total: 2000/s
routes:
  - match: POST /login
    rate: 5/m
    burst: 5
  - match: /api/*
    rate: 100/s
    window: 1000/h
    concurrency: 4
  - "/export*=cost=10"
  - match: GET /healthz
    rate: inf
`,
    );
    const result = await runCli(["proxy", "--config", file, "--check-config", "--burst", "30"]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe(
      `${file}: ok
listen 127.0.0.1:8080, to http://127.0.0.1:3000 (HTTP, per header x-api-key)
default: 10/s, burst 30
total: 2000/s, burst 200 (every request together, rules' too)
rule 1: POST /login (POST, path /login): 0.083333333/s, burst 5 (keys apart: route1:<client>); cost 1
rule 2: /api/* (any method, paths starting /api/): 100/s, burst 1 and 1000 in any 1h00m00s and 4 at once (keys apart: route2:<client>); cost 1
rule 3: /export* (any method, paths starting /export): the default's limits (in its keys); cost 10
rule 4: GET /healthz (GET and HEAD, path /healthz): unlimited (keys apart: route4:<client>); cost 1
other requests: the default
`,
    );
  });

  it("checks the flags alone too", async () => {
    const result = await runCli(["proxy", "--listen", "8080", "--to", "http://127.0.0.1:3000", "--rate", "10/s", "--class", "interactive=6/s", "--class", "batch=4/s", "--route", "/search*=class=interactive,cost=2", "--check-config"]);
    expect(result.stderr).toBe("");
    expect(result.stdout.toString()).toBe(
      `flags: ok
listen 127.0.0.1:8080, to http://127.0.0.1:3000 (HTTP, per ip)
default: 10/s, burst 1; classes interactive, batch, default interactive
rule 1: /search* (any method, paths starting /search): the default's limits (in its keys); cost 2; class interactive
other requests: the default
`,
    );
    expect(result.code).toBe(0);
  });
});

describe("tbucket proxy --config: mistakes", () => {
  const HEAD = "listen: 8080\nto: http://127.0.0.1:3000\n";
  const cases: Array<[string, string, string]> = [
    ["an unknown key", `${HEAD}rat: 10/s\n`, `c.yaml:3: rat: is not a key of the proxy's config; did you mean "rate"? the keys are the flags' names without "--" (listen, to, per, rate, burst, window, concurrency, total, class, routes, …)`],
    ["a bad rate", `${HEAD}rate: 10/q\n`, `c.yaml:3: rate: "10/q" is not a count rate; try "5", "300/m" or "1/10s"`],
    ["a value of the wrong type", `${HEAD}rate: 10/s\npolicy: [drop]\n`, `c.yaml:4: policy: is a list; give one value as the flag takes it, e.g. "policy: VALUE"`],
    ["a bad value found with the flags", `${HEAD}rate: 10/s\npolicy: wait\n`, `c.yaml:4: policy: "wait" is not a policy; try "--policy drop" (429 at once) or "--policy queue --max-wait 2s"`],
    ["broken YAML", `${HEAD}rate: [10/s\n`, `c.yaml:4:1: Flow sequence in block collection must be sufficiently indented and end with a ]; fix the YAML (or JSON) there`],
    ["a key twice", `${HEAD}rate: 10/s\nrate: 5/s\n`, `c.yaml:4:1: Map keys must be unique; fix the YAML (or JSON) there`],
    ["not a mapping", `- listen\n`, `c.yaml:1: is not a mapping of keys; write one key a line, e.g. "listen: 8080" and "to: http://127.0.0.1:3000"`],
    ["routes not a list", `${HEAD}routes: /login=5/m\n`, `c.yaml:3: routes: is not a list; write one rule an item: "- match: POST /login" with "rate: 5/m" under it, or "- POST /login=5/m,burst=5"`],
    ["an unknown key of a rule", `${HEAD}routes:\n  - match: /login\n    rat: 5/m\n`, `c.yaml:5: routes, rule 1: rat: is not a key of a rule; did you mean "rate"? a rule's keys are match, rate, burst, window, concurrency, cost, class`],
    ["a rule without match", `${HEAD}routes:\n  - rate: 5/m\n`, `c.yaml:4: routes, rule 1: has no match; add "match: [METHOD ]PATH", e.g. "match: POST /login" or "match: /api/*"`],
    ["a bad method", `${HEAD}routes:\n  - match: post /login\n    rate: 5/m\n`, `c.yaml:4: routes, rule 1: match: "post" is not a method; write "[METHOD ]PATH" with METHOD in capitals, e.g. "POST /login"`],
    ["a bad rule rate", `${HEAD}routes:\n  - match: /a\n    rate: 5/m\n  - match: /b\n    rate: 5mb\n`, `c.yaml:7: routes, rule 2: rate: "5mb" is a byte rate; a rule counts requests ("5/m", "10/s")`],
    ["a burst without a rate", `${HEAD}routes:\n  - match: /login\n    burst: 5\n`, `c.yaml:5: routes, rule 1: burst: sizes the rule's rate, and it has none; add one, e.g. "/login=5/m,burst=5"`],
    ["a bad cost", `${HEAD}routes:\n  - match: /export\n    cost: -1\n`, `c.yaml:5: routes, rule 1: cost: "-1" is not a number of requests; e.g. cost=5 (each request takes 5 of every rate and window)`],
    ["a rule in the flag's form", `${HEAD}routes:\n  - /x=5/m,brust=2\n`, `c.yaml:4: routes, rule 1: "brust" is not an item of a rule; write "[METHOD ]PATH=LIMITS", LIMITS a RATE then any of burst=N, window=N/D, concurrency=N, cost=N, class=NAME, e.g. "POST /login=5/m,burst=5"`],
    ["a class no --class defines", `${HEAD}rate: 10/s\nroutes:\n  - match: /x\n    class: batch\n`, `c.yaml:4: routes "/x": class=batch names a class, and no --class defines any; add e.g. "--class batch=10/s", or drop class=`],
    ["routes in TCP mode", `listen: 8080\nto: 127.0.0.1:3000\nrate: 1mb\nroutes:\n  - /x=5/m\n`, `c.yaml:4: routes: is for HTTP mode, and --to 127.0.0.1:3000 is TCP (http://HOST:PORT selects HTTP); drop --route or change --to`],
  ];
  it.each(cases)("%s: one line naming the file, its line and key; exit 2", async (_what, text, line) => {
    const dir = tempDir();
    writeFileSync(join(dir, "c.yaml"), text);
    const result = await runCli(["proxy", "--config", "c.yaml", "--check-config"], { cwd: dir });
    expect(result.stderr).toBe(`tbucket: ${line}\n`);
    expect(result.code).toBe(2);
  });

  it("a file that cannot be read: exit 1, as for any file the CLI reads", async () => {
    const result = await runCli(["proxy", "--config", "none.yaml", "--check-config"], { cwd: tempDir() });
    expect(result.stderr).toBe("tbucket: --config none.yaml: no such file or directory; check the path\n");
    expect(result.code).toBe(1);
  });

  it("a value the command line overrides is not checked from the file", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "c.yaml"), `${HEAD}rate: 10/q\n`);
    const result = await runCli(["proxy", "--config", "c.yaml", "--rate", "10/s", "--check-config"], { cwd: dir });
    expect(result.code).toBe(0);
  });

  it("--route's mistakes name the flag", async () => {
    const result = await runCli(["proxy", "--listen", "8080", "--to", "http://127.0.0.1:3000", "--route", "/login"]);
    expect(result.stderr).toBe(`tbucket: --route "/login": gives no limits; write "[METHOD ]PATH=LIMITS", LIMITS a RATE then any of burst=N, window=N/D, concurrency=N, cost=N, class=NAME, e.g. "POST /login=5/m,burst=5"\n`);
    expect(result.code).toBe(2);
    const classes = await runCli(["proxy", "--listen", "8080", "--to", "http://127.0.0.1:3000", "--rate", "10/s", "--class", "a=5/s", "--route", "/x=1/s"]);
    expect(classes.stderr).toBe(`tbucket: --route "/x": limits of its own beside --class are not built (classes share each key's limits); give the rule only cost= and class=, or drop --class\n`);
    expect(classes.code).toBe(2);
  });
});
