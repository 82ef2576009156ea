#!/usr/bin/env node
// The proxy's figures (issue 16, point 6 for TCP), read from outside: each client's output is
// timestamped here as it arrives. trickle (Debian's package) shapes the same transfer side by side.
//
//   node bench/proxy.mjs              # everything: TCP (about 1 minute), then HTTP when bench/proxy-http.mjs exists
//   node bench/proxy.mjs --only tcp   # a 50 MiB download through --down 5mb; 10 downloads per link and per connection;
//                                     # 1 GiB through --rate inf beside a plain node relay and socat, with CPU per GiB
//   node bench/proxy.mjs --only http  # the HTTP figures of bench/proxy-http.mjs (beside nginx, with wrk),
//                                     # measured on the `tbucket proxy` command
//
// Needs `npm run build` and curl (the client of every row: trickle wraps it, tbucket proxies it;
// the backend answers any request with SIZE bytes). Run as root, it installs trickle, nginx and
// wrk from Debian's packages when they are missing.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { envelopeExcess } from "./envelope.mjs";
import { ensurePackages, have } from "./system-tools.mjs";
import { freePort } from "./free-port.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const HTTP_BENCH = fileURLToPath(new URL("./proxy-http.mjs", import.meta.url));
const onlyIndex = process.argv.indexOf("--only");
const only = onlyIndex > 0 ? process.argv[onlyIndex + 1] : undefined;
if (only !== undefined && only !== "tcp" && only !== "http") {
  process.stderr.write(`bench: --only takes tcp or http, not ${only}\n`);
  process.exit(2);
}
const MiB = 1024 * 1024;
const RATE = 5 * MiB;
/** tbucket's default burst: 100 ms of the rate. */
const BURST = RATE / 10;
const work = mkdtempSync(join(tmpdir(), "tbucket-bench-"));
process.on("exit", () => rmSync(work, { recursive: true, force: true }));

// A backend that answers each connection's request with SIZE bytes and ends: its own process,
// so that the bench's event loop only reads.
const BACKEND = join(work, "backend.cjs");
writeFileSync(
  BACKEND,
  `const net = require("node:net");
const size = Number(process.argv[2]);
const block = Buffer.alloc(64 * 1024, 0x61);
const server = net.createServer((socket) => {
  socket.on("error", () => {});
  socket.once("data", () => {
    let left = size;
    const feed = () => {
      while (left > 0) {
        const chunk = left >= block.length ? block : block.subarray(0, left);
        left -= chunk.length;
        if (left === 0) { socket.end(chunk); return; }
        if (!socket.write(chunk)) return;
      }
    };
    socket.on("drain", feed);
    socket.write("HTTP/1.0 200 OK\\r\\nContent-Length: " + size + "\\r\\nConnection: close\\r\\n\\r\\n");
    feed();
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
`,
);
const curl = (port) => ["curl", "-s", "--http1.0", `http://127.0.0.1:${port}/`];

/** Starts a process that prints a port on its first line (backend) or says where it listens (proxy). */
function startServer(argv, pattern) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let text = "";
    const look = (chunk) => {
      text += chunk;
      const match = pattern.exec(text);
      if (match) resolve({ child, port: Number(match[1]) });
    };
    child.stdout.on("data", look);
    child.stderr.on("data", look);
    child.on("exit", (code) => reject(new Error(`${argv.join(" ")} ended (${code}): ${text}`)));
  });
}

const startBackend = (size) => startServer([process.execPath, BACKEND, String(size)], /^(\d+)/);
const startProxy = (backendPort, args) =>
  startServer([process.execPath, TBUCKET, "proxy", "--listen", "127.0.0.1:0", "--to", `127.0.0.1:${backendPort}`, ...args], /listening on 127\.0\.0\.1:(\d+)/);

async function stop({ child }) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.on("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}

/** Runs one client and timestamps what it receives. */
function download(argv) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "inherit"] });
    const times = [];
    const totals = [];
    let total = 0;
    child.stdout.on("data", (chunk) => {
      total += chunk.length;
      times.push(performance.now());
      totals.push(total);
    });
    child.on("error", reject);
    child.on("close", () => resolve({ times, totals, total }));
  });
}

/**
 * A client inside the bench: a socket whose every chunk is timestamped as it comes off the
 * connection, with no process or pipe between. Used for tbucket's own figures; a client
 * process (curl) adds its pipe's bunching and its start-up, and is what trickle can wrap.
 */
function socketDownload(port) {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const times = [];
    const totals = [];
    let total = 0;
    socket.on("connect", () => socket.write("GET / HTTP/1.0\r\n\r\n"));
    socket.on("data", (chunk) => {
      total += chunk.length;
      times.push(performance.now());
      totals.push(total);
    });
    socket.on("error", reject);
    socket.on("close", () => resolve({ times, totals, total }));
  });
}

/** The rate after the burst, from the first byte to the last, against the target. */
function steadyRate({ times, total }, burst) {
  return (total - burst) / ((times.at(-1) - times[0]) / 1000);
}

/** The lowest and highest rate over whole seconds after the first. */
function secondRates({ times, totals }) {
  const rates = [];
  for (let from = times[0] + 1000; from + 1000 <= times.at(-1); from += 1000) {
    rates.push(bytesUntil({ times, totals }, from + 1000) - bytesUntil({ times, totals }, from));
  }
  return rates.length ? { min: Math.min(...rates), max: Math.max(...rates) } : undefined;
}

function bytesUntil({ times, totals }, atMs) {
  let received = 0;
  for (let i = 0; i < times.length && times[i] <= atMs; i++) received = totals[i];
  return received;
}

/** Several downloads' arrivals as one, in time order. */
function merged(results) {
  const chunks = results.flatMap((one) => one.times.map((atMs, i) => ({ atMs, bytes: one.totals[i] - (i === 0 ? 0 : one.totals[i - 1]) })));
  chunks.sort((a, b) => a.atMs - b.atMs);
  let total = 0;
  const times = chunks.map((chunk) => chunk.atMs);
  const totals = chunks.map((chunk) => (total += chunk.bytes));
  return { times, totals, total };
}

/** Each download's share of what all received while all were running. */
function shares(results) {
  const fromMs = Math.max(...results.map((one) => one.times[0]));
  const toMs = Math.min(...results.map((one) => one.times.at(-1)));
  const got = results.map((one) => bytesUntil(one, toMs) - bytesUntil(one, fromMs));
  const sum = got.reduce((a, b) => a + b, 0);
  return { min: Math.min(...got) / sum, max: Math.max(...got) / sum, windowMs: toMs - fromMs };
}

const pct = (x) => `${x >= 0 ? "+" : ""}${(x * 100).toFixed(2)} %`;
const mibps = (x) => `${(x / MiB).toFixed(3)} MiB/s`;
const kib = (x) => `${(x / 1024).toFixed(1)} KiB`;
/** An excess over the envelope, and how long the rate takes to send it: a reader that woke that late sees it. */
const over = (x, rate) => (x <= 0 ? "never" : `${kib(x)} (${((x / rate) * 1000).toFixed(1)} ms of the rate)`);

async function singleDownload() {
  const size = 50 * MiB;
  console.log(`## One download of ${size / MiB} MiB at ${RATE / MiB} MiB/s\n`);
  console.log("| tool | steady rate vs 5 MiB/s | slowest / fastest second | worst window over b + r·T (b = 512 KiB) | worst window over r·T + 64 KiB |");
  console.log("|---|---|---|---|---|");
  const backend = await startBackend(size);
  const rows = [];
  const proxy = await startProxy(backend.port, ["--down", "5mb"]);
  rows.push(["tbucket proxy --down 5mb (client: a socket in the bench)", await socketDownload(proxy.port)]);
  rows.push(["tbucket proxy --down 5mb (client: curl)", await download(curl(proxy.port))]);
  await stop(proxy);
  if (have("trickle")) {
    rows.push(["trickle -s -d 5120", await download(["trickle", "-s", "-d", String(RATE / 1024), ...curl(backend.port)])]);
    rows.push(["trickle -s -d 5120 -w 65536", await download(["trickle", "-s", "-d", String(RATE / 1024), "-w", "65536", ...curl(backend.port)])]);
  }
  await stop(backend);
  for (const [name, result] of rows) {
    if (result.total < size) console.log(`| ${name} | received ${result.total} of ${size} bytes | | | |`);
    const seconds = secondRates(result);
    const excess = envelopeExcess(result, RATE, BURST);
    const tight = envelopeExcess(result, RATE, 64 * 1024);
    console.log(
      `| ${name} | ${pct(steadyRate(result, BURST) / RATE - 1)} | ${seconds ? `${mibps(seconds.min)} / ${mibps(seconds.max)}` : "-"} | ${over(excess, RATE)} | ${over(tight, RATE)} |`,
    );
  }
  console.log("");
}

async function concurrentDownloads() {
  const count = 10;
  console.log(`## ${count} downloads at once\n`);
  console.log("| tool | each | all together | smallest / largest share | each one's rate, slowest / fastest | worst window of all over b + r·T |");
  console.log("|---|---|---|---|---|---|");
  const cases = [];
  for (const client of ["socket", "curl"]) {
    const by = client === "socket" ? "(clients: sockets in the bench)" : "(clients: curl)";
    cases.push({ name: `tbucket proxy --down 5mb --per link ${by}`, client, each: 5 * MiB, args: ["--down", "5mb", "--per", "link"], rate: RATE });
    cases.push({ name: `tbucket proxy --down 5mb --per connection ${by}`, client, each: 10 * MiB, args: ["--down", "5mb", "--per", "connection"], rate: RATE * count });
  }
  if (have("trickle")) cases.push({ name: "trickle -s -d 5120 -w 65536, one per process (clients: curl)", each: 10 * MiB, trickle: true, rate: RATE * count });
  for (const test of cases) {
    const backend = await startBackend(test.each);
    const proxy = test.trickle ? undefined : await startProxy(backend.port, test.args);
    const argv = test.trickle ? ["trickle", "-s", "-d", String(RATE / 1024), "-w", "65536", ...curl(backend.port)] : curl(proxy.port);
    const results = await Promise.all(Array.from({ length: count }, () => (test.client === "socket" ? socketDownload(proxy.port) : download(argv))));
    if (proxy) await stop(proxy);
    await stop(backend);
    const all = merged(results);
    const share = shares(results);
    const rates = results.map((one) => steadyRate(one, test.trickle ? 0 : BURST));
    const excess = envelopeExcess(all, test.rate, test.trickle ? 0 : BURST * (test.rate / RATE));
    console.log(
      `| ${test.name} | ${test.each / MiB} MiB | ${mibps(steadyRate(all, 0))} | ${(share.min * 100).toFixed(1)} % / ${(share.max * 100).toFixed(1)} % | ` +
        `${mibps(Math.min(...rates))} / ${mibps(Math.max(...rates))} | ${over(excess, test.rate)} |`,
    );
  }
  console.log("");
}

// A plain relay in node, the floor for a proxy written in node: no bucket, pipe() both ways.
const RELAY = join(work, "relay.cjs");
writeFileSync(
  RELAY,
  `const net = require("node:net");
const to = Number(process.argv[2]);
const server = net.createServer((client) => {
  const backend = net.connect(to, "127.0.0.1");
  client.on("error", () => backend.destroy());
  backend.on("error", () => client.destroy());
  client.pipe(backend).pipe(client);
});
server.listen(0, "127.0.0.1", () => console.log("listening on 127.0.0.1:" + server.address().port));
`,
);

/** CPU seconds (user + system) a process and its finished children have used so far, from /proc. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    // utime, stime, and those of children waited for (socat forks one per connection).
    return fields.slice(11, 15).reduce((sum, ticks) => sum + Number(ticks), 0) / 100;
  } catch {
    return NaN;
  }
}

/** Point 6 beside it: 1 GiB with no limit (--rate inf) through tbucket, a plain node relay and socat, one at a time. */
async function throughput() {
  const size = 1024 * MiB;
  const backend = await startBackend(size);
  const rows = [];
  const relays = [
    { name: "tbucket proxy --rate inf", start: () => startProxy(backend.port, ["--rate", "inf"]) },
    { name: "node relay (pipe both ways)", start: () => startServer([process.execPath, RELAY, String(backend.port)], /listening on 127\.0\.0\.1:(\d+)/) },
  ];
  if (have("socat")) {
    relays.push({
      name: "socat",
      start: async () => {
        const port = await freePort();
        const child = spawn("socat", [`TCP-LISTEN:${port},bind=127.0.0.1,reuseaddr,fork`, `TCP:127.0.0.1:${backend.port}`], { stdio: "ignore" });
        await new Promise((resolve) => setTimeout(resolve, 300));
        return { child, port };
      },
    });
  }
  for (const relay of relays) {
    const server = await relay.start();
    const cpuBefore = cpuSeconds(server.child.pid);
    const startedMs = performance.now();
    const out = execFileSync("curl", ["-s", "--http1.0", "-o", "/dev/null", "-w", "%{size_download}", `http://127.0.0.1:${server.port}/`]).toString();
    const seconds = (performance.now() - startedMs) / 1000;
    // socat's child for the connection is counted once it has ended and been waited for.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cpu = cpuSeconds(server.child.pid) - cpuBefore;
    await stop(server);
    const gib = Number(out) / (1024 * MiB);
    rows.push(`| ${relay.name} | ${(Number(out) / MiB / seconds).toFixed(0)} MiB/s | ${Number.isNaN(cpu) ? "n/a" : `${(cpu / gib).toFixed(2)} s`} |`);
  }
  await stop(backend);
  console.log(`### 1 GiB with no limit, one connection (load average ${loadavg().map((load) => load.toFixed(2)).join(", ")})\n`);
  console.log("| relay | throughput | CPU per GiB (relay process) |");
  console.log("|---|---|---|");
  for (const row of rows) console.log(row);
  console.log("");
}

if (only === undefined || only === "tcp") {
  ensurePackages({ trickle: "trickle", socat: "socat" });
  if (!have("curl")) throw new Error("bench: curl is needed for the client (apt-get install curl)");
  await singleDownload();
  await concurrentDownloads();
  await throughput();
}
/**
 * Runs `tbucket proxy` in HTTP mode for bench/proxy-http.mjs, which measures it: its options
 * ({ target, rate, burst, trustProxy, policy, maxWaitMs }, rate "inf" for no limit) as flags.
 */
async function startHttpCommand(options) {
  const args = ["--rate", options.rate === "inf" ? "inf" : `${options.rate}/s`, "--burst", String(options.burst), "-q"];
  if (options.trustProxy?.length) args.push("--trust-proxy", options.trustProxy.join(","));
  if (options.policy === "queue") args.push("--policy", "queue", "--max-wait", `${options.maxWaitMs}ms`);
  const port = await freePort();
  const child = spawn(process.execPath, [TBUCKET, "proxy", "--listen", `127.0.0.1:${port}`, "--to", options.target, ...args], { stdio: ["ignore", "ignore", "inherit"] });
  // -q says nothing: ready once it accepts a connection.
  for (let attempt = 0; ; attempt++) {
    const accepted = await new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port }, () => resolve(socket.end() && true));
      socket.on("error", () => resolve(false));
    });
    if (accepted) break;
    if (attempt > 200 || child.exitCode !== null) throw new Error(`tbucket proxy did not start on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { port, pid: child.pid, stop: () => stop({ child }) };
}

if (only === undefined || only === "http") {
  if (existsSync(HTTP_BENCH)) {
    const http = await import(HTTP_BENCH);
    await http.runHttpBenchmarks({ startProxy: startHttpCommand });
  } else {
    process.stderr.write("bench: bench/proxy-http.mjs is not here; the HTTP figures are left out\n");
  }
}
