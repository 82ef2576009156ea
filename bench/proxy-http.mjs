#!/usr/bin/env node
// The HTTP proxy next to nginx 1.22 (limit_req, proxy_pass), in the same run, on loopback:
//   1. per-client precision: 20 clients (distinct X-Forwarded-For, trusted from 127.0.0.1), each as
//      fast as it can for 10 s at 50/s, burst 10: admitted against b + r·T and 99 % of r·T;
//   2. honest Retry-After: clients that wait exactly Retry-After after a 429, admitted on the retry;
//   3. the queue policy: admitted requests against the bucket's schedule (median deviation);
//   4. overhead at --rate inf: wrk, 64 keep-alive connections, against nginx proxy_pass to the
//      same backend, and against the floor of any proxy built on node:http (ten lines, no limit,
//      no checks): requests/s, and the CPU each proxy process spends per request (which other
//      load on the machine does not skew as much); added p99 latency at 1,000 requests/s against
//      the backend direct;
//   5. memory: RSS after 100,000 distinct clients, and with 1,000 idle keep-alive connections.
//
//   node bench/proxy-http.mjs                 # about 2 minutes
//   node bench/proxy-http.mjs --seconds 5     # shorter runs for 1 and 4
//   node bench/proxy-http.mjs --only overhead,queue   # some of precision, queue, overhead, memory
//
// Needs `npm run build`. Installs nginx and wrk (Debian packages) with apt-get when missing, as root.
// bench/proxy.mjs imports runHttpBenchmarks (or measureHttpProxy, for the figures), and may pass
// `startProxy` to run the proxy its own way (the `tbucket proxy` command): (options) => Promise<{ port, pid, stop() }>.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePackages } from "./system-tools.mjs";
import { freePort } from "./free-port.mjs";

const PROXY_MODULE = fileURLToPath(new URL("../dist/proxy/http-proxy.js", import.meta.url));

/** nginx and wrk from Debian's packages, installed when missing (as root only); throws when they cannot be had. */
export function ensureNginxAndWrk() {
  const missing = ensurePackages({ "/usr/sbin/nginx": "nginx", wrk: "wrk" });
  if (missing.length > 0) throw new Error(`nginx and wrk are needed: apt-get install nginx wrk, or run as root`);
}

/** A port free just now on 127.0.0.1 (for nginx, which cannot be told to pick one). */

/** A child process that prints its port on its first line. */
async function startChild(args) {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  for await (const chunk of child.stdout) {
    out += chunk;
    if (out.includes("\n")) break;
  }
  const port = Number(out.trim());
  if (!(port > 0)) throw new Error(`child did not start: ${out}`);
  return {
    port,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

/** The backend: small answers ("ok\n"), keep-alive, in its own process. */
function startBackend() {
  const code = `
    const http = require("node:http");
    const server = http.createServer((req, res) => { req.resume(); res.end("ok\\n"); });
    server.keepAliveTimeout = 60000;
    server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
    process.on("SIGTERM", () => process.exit(0));`;
  return startChild(["-e", code]);
}

/** The proxy from the built library, in its own process; the default `startProxy`. */
function startLibraryProxy(options) {
  const code = `
    const { startHttpProxy } = await import(process.argv[1]);
    const options = JSON.parse(process.argv[2]);
    if (options.rate === "inf") options.rate = Infinity;
    const proxy = await startHttpProxy(options);
    process.stdout.write(proxy.address.port + "\\n");
    process.on("SIGTERM", async () => { await proxy.close(0); process.exit(0); });`;
  return startChild(["--input-type=module", "-e", code, PROXY_MODULE, JSON.stringify({ listen: { host: "127.0.0.1", port: 0 }, ...options })]);
}

/**
 * The least a reverse proxy on node:http does: a keep-alive agent, headers passed as they are,
 * bodies piped. No limit, no hop-by-hop headers removed, no timeouts: a reference for what part
 * of the proxy's cost is node's own on this machine.
 */
function startBareNodeProxy(backendPort) {
  const code = `
    const http = require("node:http");
    const agent = new http.Agent({ keepAlive: true, scheduling: "lifo" });
    const server = http.createServer((req, res) => {
      const back = http.request({ agent, host: "127.0.0.1", port: ${backendPort}, method: req.method, path: req.url, headers: req.headers }, (backRes) => {
        res.writeHead(backRes.statusCode, backRes.headers);
        backRes.pipe(res);
      });
      back.on("error", () => res.destroy());
      req.pipe(back);
    });
    server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
    process.on("SIGTERM", () => process.exit(0));`;
  return startChild(["-e", code]);
}

/** nginx with a limit_req server and a plain proxy_pass server, both to `backendPort`. */
async function startNginx(dir, backendPort, { rate, burst }) {
  const limited = await freePort();
  const plain = await freePort();
  const proxyPass = `proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection "";`;
  const config = `
    ${process.getuid?.() === 0 ? "user root;" : ""}
    worker_processes 1;
    daemon off;
    pid ${dir}/nginx.pid;
    error_log ${dir}/error.log;
    events { worker_connections 4096; }
    http {
      access_log off;
      client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
      uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
      set_real_ip_from 127.0.0.1;
      real_ip_header X-Forwarded-For;
      limit_req_zone $binary_remote_addr zone=perclient:64m rate=${rate}r/s;
      limit_req_status 429;
      upstream backend { server 127.0.0.1:${backendPort}; keepalive 64; }
      server { listen 127.0.0.1:${limited}; location / { limit_req zone=perclient burst=${burst} nodelay; ${proxyPass} } }
      server { listen 127.0.0.1:${plain}; location / { ${proxyPass} } }
    }`;
  writeFileSync(join(dir, "nginx.conf"), config);
  const binary = ["/usr/sbin/nginx", "nginx"].find((path) => {
    try {
      execFileSync(path, ["-v"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  });
  const child = spawn(binary, ["-c", join(dir, "nginx.conf"), "-p", dir], { stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i < 100; i++) {
    if (await answers(plain)) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    limited,
    plain,
    /** The worker's pid (nginx's master only starts it), for its CPU time. */
    workerPid: () => Number(execFileSync("pgrep", ["-P", String(child.pid)], { encoding: "utf8" }).trim().split("\n")[0]),
    stop: async () => {
      child.kill("SIGQUIT");
      if (child.exitCode === null) await once(child, "exit");
    },
  };
}

function answers(port) {
  return new Promise((resolve) => {
    request({ host: "127.0.0.1", port, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(true));
    })
      .on("error", () => resolve(false))
      .end();
  });
}

/** One request: status, Retry-After, and when the answer came (performance.now()). */
function ask(port, agent, headers = {}) {
  return new Promise((resolve, reject) => {
    request({ host: "127.0.0.1", port, agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, retryAfter: res.headers["retry-after"], atMs: performance.now() }));
    })
      .on("error", reject)
      .end();
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const quantile = (values, q) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))];
const clientAddress = (i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

/** Requests from clients of their own first, so that a JIT still warming up is not counted against the limit. */
async function warmUp(port, requests) {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < requests) await ask(port, agent, { "x-forwarded-for": clientAddress(900_000 + (next++ % 64)) });
  }));
  agent.destroy();
}

/** 1. Each client as fast as it can for `seconds`: how many each got admitted, and the window. */
async function precision(port, clients, seconds) {
  await warmUp(port, 5000);
  const startMs = performance.now();
  const counts = await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      let admitted = 0;
      while (performance.now() - startMs < seconds * 1000) {
        if ((await ask(port, agent, { "x-forwarded-for": clientAddress(i + 1) })).status === 200) admitted++;
      }
      agent.destroy();
      return admitted;
    }),
  );
  return { counts, elapsedS: (performance.now() - startMs) / 1000 };
}

/** 2. Clients that drain their bucket, wait exactly Retry-After, and retry: how many retries are admitted. */
async function retryAfterHonesty(port, clients, trials) {
  const results = await Promise.all(
    Array.from({ length: clients }, async (_, i) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const headers = { "x-forwarded-for": clientAddress(1000 + i) };
      let admitted = 0;
      for (let trial = 0; trial < trials; trial++) {
        let answer = await ask(port, agent, headers);
        while (answer.status === 200) answer = await ask(port, agent, headers);
        await sleep(Number(answer.retryAfter) * 1000);
        if ((await ask(port, agent, headers)).status === 200) admitted++;
      }
      agent.destroy();
      return admitted;
    }),
  );
  return { admitted: results.reduce((a, b) => a + b, 0), total: clients * trials };
}

/** 3. `count` requests of one client at once through the queue policy: deviation of each from the bucket's schedule. */
async function queueSchedule(port, rate, burst, count) {
  const agent = new Agent({ keepAlive: true, maxSockets: count });
  // Connections first, so that their setup is not in the schedule.
  await Promise.all(Array.from({ length: count }, () => ask(port, agent, { "x-forwarded-for": "10.200.0.1" })));
  await sleep((count / rate) * 1000 + 500);
  const startMs = performance.now();
  const answers = await Promise.all(Array.from({ length: count }, () => ask(port, agent, { "x-forwarded-for": "10.200.0.1" })));
  agent.destroy();
  const times = answers.filter((a) => a.status === 200).map((a) => a.atMs - startMs).sort((a, b) => a - b);
  // The queued ones, against the schedule from the first of them: one every 1/rate. (The burst goes at
  // once; when the bucket runs dry depends on how the requests' arrivals spread, which is the client's.)
  const deviations = times.slice(burst).map((t, k) => Math.abs(t - times[burst] - (k / rate) * 1000));
  return { admitted: times.length, medianDeviationMs: median(deviations), p90DeviationMs: quantile(deviations, 0.9) };
}

/** CPU time (user + system) a process has used, in ms; NaN when it cannot be read (not Linux). */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/** wrk's requests per second and its p99 latency; with `pid`, the CPU that process spent per request, in µs. */
function wrk(port, seconds, pid) {
  const cpuBefore = pid ? cpuMs(pid) : NaN;
  const out = execFileSync("wrk", ["-t2", "-c64", `-d${seconds}s`, "--latency", `http://127.0.0.1:${port}/`], { encoding: "utf8" });
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const p99 = /99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const p99Ms = p99 ? Number(p99[1]) * { us: 0.001, ms: 1, s: 1000 }[p99[2]] : NaN;
  return { rps, p99Ms, cpuUsPerRequest: ((cpuMs(pid) - cpuBefore) * 1000) / requests };
}

/** The median of each figure over `rounds` wrk runs, the contenders taking turns so that a busy moment hits all of them. */
function wrkRounds(contenders, seconds, rounds) {
  const runs = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, { port, pid }] of Object.entries(contenders)) runs[name].push(wrk(port, seconds, pid));
  }
  const medianOf = (name, field) => median(runs[name].map((run) => run[field]));
  return Object.fromEntries(
    Object.keys(contenders).map((name) => [name, { rps: medianOf(name, "rps"), p99Ms: medianOf(name, "p99Ms"), cpuUsPerRequest: medianOf(name, "cpuUsPerRequest") }]),
  );
}

/** Latencies at a steady `perSecond` for `seconds`, open loop over 32 keep-alive connections. */
async function latencyAt(port, perSecond, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const latencies = [];
  const pending = [];
  const startMs = performance.now();
  for (let i = 0; i < perSecond * seconds; i++) {
    const dueMs = startMs + (i * 1000) / perSecond;
    const waitMs = dueMs - performance.now();
    if (waitMs > 1) await sleep(waitMs);
    const sentMs = performance.now();
    pending.push(ask(port, agent).then((answer) => latencies.push(answer.atMs - sentMs)));
  }
  await Promise.all(pending);
  agent.destroy();
  return { p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99) };
}

/** Each target's latencies at 1,000 requests/s, the targets taking turns `rounds` times: the median of each figure (one stall on a busy machine spoils one round, not the row). */
async function latencyRounds(ports, rounds) {
  const runs = Object.fromEntries(Object.keys(ports).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, port] of Object.entries(ports)) runs[name].push(await latencyAt(port, 1000, 3));
  }
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => [name, { p50Ms: median(list.map((run) => run.p50Ms)), p99Ms: median(list.map((run) => run.p99Ms)) }]),
  );
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1]);
  return { rss: kib("VmRSS") / 1024, peak: kib("VmHWM") / 1024 };
}

/** 5a. 100,000 distinct clients, 64 at a time: the proxy's RSS after. */
async function manyClients(port, pid, clients) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < clients) await ask(port, agent, { "x-forwarded-for": clientAddress(next++) });
    }),
  );
  agent.destroy();
  return rssMiB(pid);
}

/** 5b. `count` keep-alive connections, each after one request, left idle: the proxy's RSS. */
async function idleConnections(port, pid, count) {
  const sockets = [];
  for (let i = 0; i < count; i++) {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    sockets.push(socket);
    socket.write(`GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: ${clientAddress(500_000 + i)}\r\n\r\n`);
  }
  await sleep(1000);
  const rss = rssMiB(pid);
  for (const socket of sockets) socket.destroy();
  return rss;
}

/**
 * Runs the five measurements and returns their figures and a Markdown table.
 * `startProxy(options)` starts the proxy ({ target, rate, burst, trustProxy, policy, maxWaitMs,
 * headersTimeoutMs }, rate "inf" for no limit) and resolves to { port, pid, stop() }.
 */
export async function measureHttpProxy({ seconds = 10, startProxy = startLibraryProxy, only = undefined, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const wanted = (part) => only === undefined || only.includes(part);
  ensureNginxAndWrk();
  const dir = mkdtempSync(join(tmpdir(), "tbucket-bench-proxy-http-"));
  const backend = await startBackend();
  const target = `http://127.0.0.1:${backend.port}`;
  const limit = { rate: 50, burst: 10 };
  const nginx = await startNginx(dir, backend.port, limit);
  const figures = { seconds };
  try {
    if (wanted("precision")) {
      log("1. per-client precision");
      const limited = await startProxy({ target, ...limit, trustProxy: ["127.0.0.1"] });
      figures.precision = { tbucket: await precision(limited.port, 20, seconds), nginx: await precision(nginx.limited, 20, seconds) };
      log("2. Retry-After");
      figures.retryAfter = await retryAfterHonesty(limited.port, 20, 10);
      await limited.stop();
    }

    if (wanted("queue")) {
      log("3. queue policy");
      const queued = await startProxy({ target, ...limit, trustProxy: ["127.0.0.1"], policy: "queue", maxWaitMs: 2000 });
      figures.queue = await queueSchedule(queued.port, limit.rate, limit.burst, 60);
      figures.queue.loadAverage = loadavg()[0];
      await queued.stop();
    }

    if (wanted("overhead")) await overhead();
    if (wanted("memory")) await memory();
  } finally {
    await nginx.stop();
    await backend.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return { figures, text: table(figures, limit) };

  async function overhead() {
    log("4. overhead");
    const open = await startProxy({ target, rate: "inf", burst: 1 });
    const bare = await startBareNodeProxy(backend.port);
    const contenders = { tbucket: { port: open.port, pid: open.pid }, nginx: { port: nginx.plain, pid: nginx.workerPid() }, bare: { port: bare.port, pid: bare.pid } };
    // A first round unmeasured: the JIT and the connection pools warm up.
    wrkRounds(contenders, Math.min(2, seconds), 1);
    figures.overhead = {
      ...wrkRounds(contenders, Math.max(1, Math.round(seconds / 3)), 3),
      loadAverage: loadavg()[0],
      ...(await latencyRounds({ latencyDirect: backend.port, latencyTbucket: open.port, latencyNginx: nginx.plain }, 3)),
    };
    await bare.stop();
    await open.stop();
  }

  async function memory() {
    log("5. memory");
    const counted = await startProxy({ target, ...limit, trustProxy: ["127.0.0.1"] });
    figures.memory = { clients: await manyClients(counted.port, counted.pid, 100_000) };
    await counted.stop();
    const idle = await startProxy({ target, ...limit, trustProxy: ["127.0.0.1"] });
    figures.memory.idle = await idleConnections(idle.port, idle.pid, 1000);
    await idle.stop();
  }
}

function table(f, { rate, burst }) {
  const envelope = (s) => burst + rate * s;
  // The floor: 99 % of r·T over the nominal run, T = the seconds asked for.
  const floor = () => 0.99 * rate * f.seconds;
  const range = (counts) => `${Math.min(...counts)}–${Math.max(...counts)}`;
  const within = ({ counts, elapsedS }) => counts.filter((c) => c <= envelope(elapsedS) && c >= floor()).length;
  const p = f.precision;
  const o = f.overhead;
  const ms = (v) => `${v.toFixed(2)} ms`;
  const cpu = (v) => (Number.isFinite(v) ? `${v.toFixed(0)} µs` : "–");
  const rows = [
    `# HTTP proxy against nginx (${new Date().toISOString().slice(0, 10)}, node ${process.version})`,
    "",
    "| measure | tbucket | nginx | goal |",
    "|---|---|---|---|",
  ];
  if (p) {
    rows.push(
      `| 1. admitted per client, 20 clients, ${rate}/s burst ${burst}, ${p.tbucket.elapsedS.toFixed(1)} s | ${range(p.tbucket.counts)} (${within(p.tbucket)}/20 within) | ${range(p.nginx.counts)} (${within(p.nginx)}/20 within) | ≤ ${envelope(p.tbucket.elapsedS).toFixed(0)}, ≥ ${floor().toFixed(0)} |`,
      `| 2. retries after exactly Retry-After admitted | ${f.retryAfter.admitted}/${f.retryAfter.total} | no Retry-After | ≥ 99 % |`,
    );
  }
  if (f.queue) {
    rows.push(`| 3. queue: deviation from the schedule, median (p90), load average ${f.queue.loadAverage.toFixed(1)} | ${ms(f.queue.medianDeviationMs)} (${ms(f.queue.p90DeviationMs)}), ${f.queue.admitted}/60 admitted | – | ≤ 5 ms |`);
  }
  if (o) {
    rows.push(
      `| 4. requests/s, rate inf, wrk -c64 (p99), median of 3, load average ${o.loadAverage.toFixed(1)} | ${o.tbucket.rps.toFixed(0)} (${ms(o.tbucket.p99Ms)}) | ${o.nginx.rps.toFixed(0)} (${ms(o.nginx.p99Ms)}) | ≥ 50 % of nginx: ${((o.tbucket.rps / o.nginx.rps) * 100).toFixed(0)} % |`,
      `| 4. the floor of node:http: a bare proxy of ten lines, requests/s | ${o.bare.rps.toFixed(0)} (${((o.bare.rps / o.nginx.rps) * 100).toFixed(0)} % of nginx) | – | – |`,
      `| 4. CPU per request of the proxy process (bare node:http proxy ${cpu(o.bare.cpuUsPerRequest)}) | ${cpu(o.tbucket.cpuUsPerRequest)} | ${cpu(o.nginx.cpuUsPerRequest)} | – |`,
      `| 4. p99 at 1,000 req/s, added to direct (${ms(o.latencyDirect.p99Ms)}), median of 3 | +${ms(o.latencyTbucket.p99Ms - o.latencyDirect.p99Ms)} | +${ms(o.latencyNginx.p99Ms - o.latencyDirect.p99Ms)} | ≤ 2 ms |`,
    );
  }
  if (f.memory) {
    rows.push(
      `| 5. RSS after 100,000 distinct clients (peak) | ${f.memory.clients.rss.toFixed(0)} MiB (${f.memory.clients.peak.toFixed(0)}) | – | < 150 MB |`,
      `| 5. RSS with 1,000 idle keep-alive connections | ${f.memory.idle.rss.toFixed(0)} MiB | – | < 150 MB |`,
    );
  }
  return rows.join("\n");
}

/** Runs the measurements and prints their table: what bench/proxy.mjs calls. */
export async function runHttpBenchmarks(options = {}) {
  const { text } = await measureHttpProxy(options);
  console.log(text);
}

export default runHttpBenchmarks;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const seconds = args.includes("--seconds") ? Number(args[args.indexOf("--seconds") + 1]) : 10;
  // --only overhead,queue: some of precision (1 and 2), queue, overhead, memory.
  const only = args.includes("--only") ? args[args.indexOf("--only") + 1].split(",") : undefined;
  await runHttpBenchmarks({ seconds, only });
}
