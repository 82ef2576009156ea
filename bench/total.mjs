#!/usr/bin/env node
// Rotating client identities against a total (issue 23, point 4), in one run on loopback:
// 50 clients, each request from the next X-Forwarded-For (trusted from 127.0.0.1), 200 requests a
// second in all (4/s each, under the per-client 5/s), for --seconds (default 10), against
//   1. tbucket proxy --per ip --rate 5/s --total 20/s          (the total binds: 20/s for everyone)
//   2. tbucket proxy --per ip --rate 5/s                       (no total: rotating identities pass)
//   3. nginx limit_req, a per-client zone of 5r/s beside one zone for everyone of 20r/s burst=1
//      nodelay (nginx's way to say the same limits; Debian's package, installed as root when missing)
// and prints, for each, what was admitted a second, the worst excess over the total's envelope
// (burst + rate·T over any span, from the admitted answers' times: ≤ 0 is inside, client-side
// jitter adds a little), and the most any one identity got a second.
//
//   npm run build && node bench/total.mjs [--seconds 10] [--quick]
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensurePackages } from "./system-tools.mjs";
import { freePort } from "./free-port.mjs";

const TBUCKET = fileURLToPath(new URL("../bin/tbucket", import.meta.url));
const args = process.argv.slice(2);
const seconds = args.includes("--quick") ? 4 : Number(args[args.indexOf("--seconds") + 1] ?? 10) || 10;
const CLIENTS = 50;
const GAP_MS = 5;
const TOTAL = { rate: 20, burst: 2 };

function backend() {
  const server = createServer((req, res) => {
    req.resume();
    res.end("ok\n");
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ port: server.address().port, close: () => server.close() })));
}

async function startTbucket(backendPort, extra) {
  const child = spawn(TBUCKET, ["proxy", "--listen", "127.0.0.1:0", "--to", `http://127.0.0.1:${backendPort}`, "--per", "ip", "--rate", "5/s", "--trust-proxy", "127.0.0.1", ...extra], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  for await (const chunk of child.stderr) {
    err += chunk;
    const match = /listening on 127\.0\.0\.1:(\d+)/.exec(err);
    if (match) {
      child.stderr.resume();
      return { port: Number(match[1]), stop: async () => (child.kill("SIGTERM"), child.exitCode === null && (await once(child, "exit"))) };
    }
  }
  throw new Error(`tbucket proxy did not start: ${err}`);
}

async function startNginx(dir, backendPort) {
  const port = await freePort();
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
      limit_req_zone $binary_remote_addr zone=perclient:16m rate=5r/s;
      # A key every request shares (an empty one, as $server_name without server_name, is not counted).
      # A key every request shares (an empty one, as $server_name is without server_name, is not counted).
      limit_req_zone $server_port zone=everyone:1m rate=${TOTAL.rate}r/s;
      limit_req_status 429;
      upstream backend { server 127.0.0.1:${backendPort}; keepalive 64; }
      server {
        listen 127.0.0.1:${port};
        location / {
          limit_req zone=perclient;
          limit_req zone=everyone burst=${TOTAL.burst - 1} nodelay;
          proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection "";
        }
      }
    }`;
  writeFileSync(join(dir, "nginx.conf"), config);
  const child = spawn("/usr/sbin/nginx", ["-c", join(dir, "nginx.conf"), "-p", dir], { stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i < 100 && !(await answers(port)); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  return { port, stop: async () => (child.kill("SIGQUIT"), child.exitCode === null && (await once(child, "exit"))) };
}

function answers(port) {
  return new Promise((resolve) => {
    request({ host: "127.0.0.1", port, agent: false }, (res) => res.resume().on("end", () => resolve(true)))
      .on("error", () => resolve(false))
      .end();
  });
}

function ask(port, agent, client) {
  return new Promise((resolve) => {
    request({ host: "127.0.0.1", port, agent, path: "/", headers: { "x-forwarded-for": client } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, atMs: performance.now(), client, retryAfter: res.headers["retry-after"], policy: res.headers["ratelimit-policy"] }));
    })
      .on("error", () => resolve({ status: 0, atMs: performance.now(), client }))
      .end();
  });
}

/** The rotating clients against `port`: every GAP_MS the next identity. */
async function rotate(port) {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  // A second at the rate first, so that every contender starts from the same full buckets after it.
  const answersAll = [];
  const startMs = performance.now();
  for (let i = 0; performance.now() - startMs < seconds * 1000; i++) {
    answersAll.push(ask(port, agent, `198.51.100.${i % CLIENTS}`));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startMs + (i + 1) * GAP_MS - performance.now())));
  }
  const results = await Promise.all(answersAll);
  agent.destroy();
  const elapsed = (performance.now() - startMs) / 1000;
  const admitted = results.filter((result) => result.status === 200);
  const times = admitted.map((result) => result.atMs).sort((a, b) => a - b);
  const refused = results.filter((result) => result.status === 429);
  const perClient = new Map();
  for (const result of admitted) perClient.set(result.client, (perClient.get(result.client) ?? 0) + 1);
  return {
    sent: results.length,
    admittedPerSecond: admitted.length / elapsed,
    worstExcess: worstExcess(times, TOTAL.rate, TOTAL.burst),
    mostPerClientPerSecond: Math.max(0, ...perClient.values()) / elapsed,
    refusedWithRetryAfter: refused.length === 0 ? null : refused.filter((result) => result.retryAfter !== undefined).length / refused.length,
    totalInPolicy: refused.some((result) => /"total"/.test(String(result.policy))),
    failed: results.filter((result) => result.status !== 200 && result.status !== 429).length,
  };
}

function worstExcess(times, rate, burst) {
  let worst = -Infinity;
  // Every span from an admitted answer to a later one: O(n²), fine for the few thousand here.
  for (let i = 0; i < times.length; i++) for (let j = i; j < times.length; j++) worst = Math.max(worst, j - i + 1 - (burst + (rate * (times[j] - times[i])) / 1000));
  return worst;
}

const dir = mkdtempSync(join(tmpdir(), "tbucket-bench-total-"));
const rows = [];
const server = await backend();
try {
  for (const [name, extra] of [
    ["tbucket --total 20/s", ["--total", "20/s"]],
    ["tbucket, no total", []],
  ]) {
    const proxy = await startTbucket(server.port, extra);
    try {
      rows.push({ name, ...(await rotate(proxy.port)) });
    } finally {
      await proxy.stop();
    }
  }
  const missing = ensurePackages({ "/usr/sbin/nginx": "nginx" });
  if (missing.length === 0) {
    const nginx = await startNginx(dir, server.port);
    try {
      rows.push({ name: "nginx limit_req (2 zones)", ...(await rotate(nginx.port)) });
    } finally {
      await nginx.stop();
    }
  } else rows.push({ name: "nginx limit_req (2 zones)", missing: true });
} finally {
  server.close();
  rmSync(dir, { recursive: true, force: true });
}

// nginx -v says its version on standard error.
const version = spawnSync("/usr/sbin/nginx", ["-v"], { encoding: "utf8" }).stderr?.trim().replace(/^nginx version: /, "") ?? "";
console.log(`# ${CLIENTS} rotating identities, ${1000 / GAP_MS} requests/s for ${seconds} s; per client 5/s, total ${TOTAL.rate}/s burst ${TOTAL.burst} (node ${process.version}${version ? `, ${version}` : ""})`);
console.log("| contender | admitted/s | worst excess over the total's envelope | most one identity got /s | 429s with Retry-After | RateLimit-Policy names the total |");
console.log("|---|---|---|---|---|---|");
for (const row of rows) {
  if (row.missing) console.log(`| ${row.name} | missing | | | | |`);
  else {
    const retry = row.refusedWithRetryAfter === null ? "none refused" : `${Math.round(row.refusedWithRetryAfter * 100)} %`;
    console.log(`| ${row.name} | ${row.admittedPerSecond.toFixed(1)} | ${row.worstExcess.toFixed(1)} | ${row.mostPerClientPerSecond.toFixed(2)} | ${retry} | ${row.totalInPolicy ? "yes" : "no"} |`);
  }
}
for (const row of rows) console.log(JSON.stringify(row));
