#!/usr/bin/env node
// Retry-After without a stampede (run `npm run build` first): a batch of clients, one request each,
// all at once behind one limit for everyone, each retrying on 429 as its library does:
//   curl -sf --retry 20                      (honours Retry-After; without one, backs off 1, 2, 4... s)
//   Python urllib3 Retry(total=20, respect_retry_after_header=True, status_forcelist=[429], backoff_factor=0)
// against `tbucket proxy --per all` with one bucket (--rate 5/s --burst 5), with a set (the same bucket
// and --window 1000/h), with a window-bound set (--rate 100/s --window 10/2s, 5/2s with --quick), with the set in a SQLite
// store (--store sqlite:... --key ...), and against nginx limit_req (rate=5r/s burst=4 nodelay, which
// admits the same 5 at once; status 429, no Retry-After). nginx comes from Debian's package, installed
// with apt-get when root and missing; its rows are left out otherwise.
// Prints each batch's time against the ideal, how many clients were served, and the requests the
// server saw per request served (1 would be no retry at all).
// Usage: node bench/stampede.mjs [--quick] [clients=30]    (--quick: 10 clients)
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TBUCKET as bin } from "./bench-store.mjs";
import { freePort } from "./free-port.mjs";
import { ensurePackages } from "./system-tools.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
const clients = Number(args.find((arg) => /^\d+$/.test(arg)) ?? (quick ? 10 : 30));
const dir = mkdtempSync(join(tmpdir(), "tbucket-stampede-"));

// One client thread each behind a barrier, so that the batch starts together; prints each status and the batch's time.
const URLLIB3_CLIENTS = `
import json, sys, threading, time
import urllib3
from urllib3.util import Retry
url, n = sys.argv[1], int(sys.argv[2])
barrier = threading.Barrier(n + 1)
statuses = [None] * n
def client(i):
    http = urllib3.PoolManager(retries=Retry(total=20, respect_retry_after_header=True, status_forcelist=[429], backoff_factor=0))
    barrier.wait()
    try:
        statuses[i] = http.request("GET", f"{url}/{i}").status
    except Exception as error:
        statuses[i] = type(error).__name__
threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
for thread in threads: thread.start()
barrier.wait()
start = time.monotonic()
for thread in threads: thread.join()
print(json.dumps({"seconds": time.monotonic() - start, "statuses": statuses}))
`;

const backend = createServer((_req, res) => res.end("ok\n"));
await new Promise((resolve) => backend.listen(0, "127.0.0.1", resolve));
const backendUrl = `http://127.0.0.1:${backend.address().port}`;

/** The batch of curl clients against `url`: its time and how many were served. */
async function curlBatch(url) {
  const startMs = performance.now();
  const codes = await Promise.all(
    Array.from({ length: clients }, (_, i) => new Promise((resolve) => spawn("curl", ["-sf", "--retry", "20", "-o", "/dev/null", `${url}/${i}`]).once("close", resolve))),
  );
  return { seconds: (performance.now() - startMs) / 1000, served: codes.filter((code) => code === 0).length };
}

/** The batch of urllib3 clients (threads of one Python process) against `url`. */
async function urllib3Batch(url) {
  const child = spawn("python3", ["-c", URLLIB3_CLIENTS, url, String(clients)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (chunk) => (out += chunk));
  await once(child, "close");
  const { seconds, statuses } = JSON.parse(out);
  return { seconds, served: statuses.filter((status) => status === 200).length };
}

const BATCHES = { curl: curlBatch, urllib3: urllib3Batch };

/** The requests of the batch in an access log (`/<i>`; the start-up probe asks `/`). */
function batchRequests(log) {
  return readFileSync(log, "utf8").split("\n").filter((line) => /"GET \/\d+ /.test(line)).length;
}

async function waitUp(url) {
  for (let i = 0; i < 200; i++) {
    if (await fetch(url).then(() => true, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`bench: nothing answers at ${url}`);
}

/** A batch behind `tbucket proxy --per all` with `limits`, each row on its own proxy (and store file). */
async function tbucketRow(client, limits, store = false) {
  const port = await freePort();
  const rowDir = mkdtempSync(join(dir, "row-"));
  const log = join(rowDir, "access.log");
  const storeArgs = store ? ["--store", `sqlite:${join(rowDir, "buckets.db")}`, "--key", "stampede"] : [];
  const proxy = spawn(bin, ["proxy", "--listen", String(port), "--to", backendUrl, ...limits, "--per", "all", ...storeArgs, "--access-log", log, "--quiet"], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, XDG_STATE_HOME: rowDir },
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    await waitUp(url);
    await new Promise((resolve) => setTimeout(resolve, 2200)); // every limit full again after the probe
    const batch = await BATCHES[client](url);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the log's last lines
    return { ...batch, requests: batchRequests(log) };
  } finally {
    proxy.kill("SIGTERM");
    if (proxy.exitCode === null) await once(proxy, "exit");
  }
}

/** nginx limit_req for everyone: 5r/s, burst=4 nodelay (5 at once, as --burst 5), 429 without Retry-After. */
async function startNginx() {
  const port = await freePort();
  const nginxDir = mkdtempSync(join(dir, "nginx-"));
  const log = join(nginxDir, "access.log");
  const config = `
    ${process.getuid?.() === 0 ? "user root;" : ""}
    worker_processes 1;
    daemon off;
    pid ${nginxDir}/nginx.pid;
    error_log ${nginxDir}/error.log;
    events { worker_connections 1024; }
    http {
      access_log ${log};
      client_body_temp_path ${nginxDir}/body; proxy_temp_path ${nginxDir}/proxy; fastcgi_temp_path ${nginxDir}/fastcgi;
      uwsgi_temp_path ${nginxDir}/uwsgi; scgi_temp_path ${nginxDir}/scgi;
      # A key every request shares (an empty one is not counted).
      limit_req_zone $server_port zone=everyone:1m rate=5r/s;
      limit_req_status 429;
      server {
        listen 127.0.0.1:${port};
        location / { limit_req zone=everyone burst=4 nodelay; proxy_pass ${backendUrl}; }
      }
    }`;
  writeFileSync(join(nginxDir, "nginx.conf"), config);
  const child = spawn("/usr/sbin/nginx", ["-c", join(nginxDir, "nginx.conf"), "-p", nginxDir], { stdio: ["ignore", "ignore", "inherit"] });
  await waitUp(`http://127.0.0.1:${port}`);
  return { url: `http://127.0.0.1:${port}`, log, stop: async () => (child.kill("SIGQUIT"), child.exitCode === null && (await once(child, "exit"))) };
}

async function nginxRow(client) {
  const nginx = await startNginx();
  try {
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const batch = await BATCHES[client](nginx.url);
    await new Promise((resolve) => setTimeout(resolve, 300));
    return { ...batch, requests: batchRequests(nginx.log) };
  } finally {
    await nginx.stop();
  }
}

const BUCKET = ["--rate", "5/s", "--burst", "5"];
const SET = [...BUCKET, "--window", "1000/h"];
// The window's n: 10 of 30 clients at once (5 of 10 with --quick), the rest as its records leave.
const windowN = quick ? 5 : 10;
const WINDOW_BOUND = ["--rate", "100/s", "--burst", "100", "--window", `${windowN}/2s`];
const bucketIdeal = Math.max(0, Math.ceil((clients - 5) / 5));
// n at once, then n each time the window's records leave (every 2 s).
const windowIdeal = Math.max(0, Math.ceil((clients - windowN) / windowN) * 2);
const rows = [
  { server: "tbucket proxy", limit: "--rate 5/s --burst 5", client: "curl", ideal: bucketIdeal, run: () => tbucketRow("curl", BUCKET) },
  { server: "tbucket proxy", limit: "--rate 5/s --burst 5", client: "urllib3", ideal: bucketIdeal, run: () => tbucketRow("urllib3", BUCKET) },
  { server: "tbucket proxy", limit: "set: + --window 1000/h", client: "curl", ideal: bucketIdeal, run: () => tbucketRow("curl", SET) },
  { server: "tbucket proxy", limit: "set: + --window 1000/h", client: "urllib3", ideal: bucketIdeal, run: () => tbucketRow("urllib3", SET) },
  { server: "tbucket proxy", limit: "set in SQLite (--store, --key)", client: "curl", ideal: bucketIdeal, run: () => tbucketRow("curl", SET, true) },
  { server: "tbucket proxy", limit: `window-bound set: --rate 100/s --window ${windowN}/2s`, client: "curl", ideal: windowIdeal, run: () => tbucketRow("curl", WINDOW_BOUND) },
  { server: "nginx limit_req", limit: "rate=5r/s burst=4 nodelay", client: "curl", ideal: bucketIdeal, nginx: true, run: () => nginxRow("curl") },
  { server: "nginx limit_req", limit: "rate=5r/s burst=4 nodelay", client: "urllib3", ideal: bucketIdeal, nginx: true, run: () => nginxRow("urllib3") },
];

const nginxMissing = ensurePackages({ "/usr/sbin/nginx": "nginx" }).length > 0 || !existsSync("/usr/sbin/nginx");
const urllib3Version = spawnSync("python3", ["-c", "import urllib3; print(urllib3.__version__)"], { encoding: "utf8" }).stdout?.trim() || "missing";
const curlVersion = spawnSync("curl", ["--version"], { encoding: "utf8" }).stdout?.split(" ")[1] ?? "?";
const nginxVersion = nginxMissing ? "missing" : (spawnSync("/usr/sbin/nginx", ["-v"], { encoding: "utf8" }).stderr?.trim().replace(/^nginx version: /, "") ?? "");
try {
  console.log(`# ${clients} clients at once, one request each, one limit for everyone (curl ${curlVersion}, urllib3 ${urllib3Version}, ${nginxVersion}, node ${process.version})`);
  console.log("| server | limit | clients | served | batch (ideal) | requests per request served |");
  console.log("|---|---|---|---:|---:|---:|");
  for (const row of rows) {
    if ((row.nginx && nginxMissing) || (row.client === "urllib3" && urllib3Version === "missing")) {
      console.log(`| ${row.server} | ${row.limit} | ${row.client} | (not installed) | | |`);
      continue;
    }
    const { seconds, served, requests } = await row.run();
    const perServed = served > 0 ? (requests / served).toFixed(2) : "∞";
    console.log(`| ${row.server} | ${row.limit} | ${row.client} | ${served}/${clients} | ${seconds.toFixed(2)} s (${row.ideal} s) | ${perServed} |`);
  }
} finally {
  backend.close();
  rmSync(dir, { recursive: true, force: true });
}
