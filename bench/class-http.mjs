#!/usr/bin/env node
// Benchmark for classes in the HTTP proxy (run `npm run build` first): one `tbucket proxy` in front
// of a backend, 100 requests/s (burst 10) for everyone, the class from the X-Class header:
//   interactive  60/s, ceil 60/s, prio 0   -> 60/s, its guarantee, whatever batch does
//   batch        10/s, prio 1              -> 40/s (10 + the 30 left); once interactive stops, 100/s
// Eight keep-alive clients per class ask as fast as they are answered; interactive stops halfway.
// Prints each class's admitted rate per half (its first 2 s left out) beside the rule's, the share
// refused, the Retry-After values told, and how long batch took to get the freed share (95 %).
// Usage: node bench/class-http.mjs [private|sqlite|redis] [seconds=16]
import { spawn } from "node:child_process";
import { Agent, createServer, request } from "node:http";
import { openBenchStore, TBUCKET as bin } from "./bench-store.mjs";
import { freePort } from "./free-port.mjs";

const storeKind = process.argv[2] ?? "private";
const seconds = Number(process.argv[3] ?? 16);
const CLIENTS = 8;
const SETTLE_S = 2;
const BIN_MS = 100;
const CLASSES = [
  { name: "interactive", flag: "interactive=60/s,ceil=60/s", rule: [60, 0] },
  { name: "batch", flag: "batch=10/s,prio=1", rule: [40, 100] },
];

const backend = createServer((_req, res) => res.end("ok\n"));
await new Promise((resolve) => backend.listen(0, "127.0.0.1", resolve));
const opened = storeKind === "private" ? undefined : await openBenchStore(storeKind);
const port = await freePort();
const args = ["proxy", "--listen", String(port), "--to", `http://127.0.0.1:${backend.address().port}`, "--rate", "100/s", "--burst", "10", "--per", "all"];
args.push(...CLASSES.flatMap((c) => ["--class", c.flag]), "--class-from", "header:X-Class", "--quiet");
if (opened) args.push("--key", "api", "--store", opened.url);
const proxy = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
let said = "";
proxy.stderr.on("data", (chunk) => (said += chunk));
try {
  await untilListening(port);
  const startMs = performance.now();
  const bins = CLASSES.map(() => new Float64Array(Math.ceil((seconds * 1000) / BIN_MS) + 10));
  const asked = CLASSES.map(() => 0);
  const refused = CLASSES.map(() => 0);
  const retryAfters = CLASSES.map(() => new Map());
  const stopAt = [seconds / 2, seconds].map((s) => startMs + s * 1000);
  const loops = CLASSES.flatMap((c, i) => {
    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    return Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < stopAt[i === 0 ? 0 : 1]) {
        const { status, retryAfter } = await get(agent, port, c.name);
        asked[i]++;
        if (status === 200) bins[i][Math.floor((performance.now() - startMs) / BIN_MS)]++;
        else {
          refused[i]++;
          retryAfters[i].set(retryAfter, (retryAfters[i].get(retryAfter) ?? 0) + 1);
        }
      }
    });
  });
  await Promise.all(loops);

  const rateOf = (i, fromMs, toMs) => {
    let n = 0;
    for (let b = Math.floor(fromMs / BIN_MS); b < Math.floor(toMs / BIN_MS); b++) n += bins[i][b];
    return n / ((toMs - fromMs) / 1000);
  };
  const halfMs = (seconds * 1000) / 2;
  console.log(`${storeKind}: two classes for ${seconds / 2} s, then batch alone for ${seconds / 2} s, ${CLIENTS} clients each (node ${process.version})`);
  console.log(`  ${"class".padEnd(12)} ${"1st /s".padStart(8)} ${"rule".padStart(5)} ${"off".padStart(7)}   ${"2nd /s".padStart(8)} ${"rule".padStart(5)} ${"off".padStart(7)}   refused  Retry-After told`);
  CLASSES.forEach((c, i) => {
    const halves = [
      [SETTLE_S * 1000, halfMs],
      [halfMs + SETTLE_S * 1000, seconds * 1000],
    ].map(([from, to], h) => {
      if (c.rule[h] === 0) return `${"-".padStart(8)} ${"-".padStart(5)} ${"".padStart(7)}`;
      const got = rateOf(i, from, to);
      return `${got.toFixed(2).padStart(8)} ${String(c.rule[h]).padStart(5)} ${`${(((got - c.rule[h]) / c.rule[h]) * 100).toFixed(2)}%`.padStart(7)}`;
    });
    const told = [...retryAfters[i]].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s} s ×${n}`).join(", ");
    console.log(`  ${c.name.padEnd(12)} ${halves.join("   ")}   ${`${((refused[i] / asked[i]) * 100).toFixed(1)}%`.padStart(7)}  ${told}`);
  });
  // How long after interactive stopped batch got 95 % of the key, in 100 ms bins averaged over 500 ms.
  let lentMs;
  for (let b = Math.floor(halfMs / BIN_MS); b + 5 < bins[1].length; b++) {
    const n = bins[1].slice(b, b + 5).reduce((sum, x) => sum + x, 0);
    if (n / 0.5 >= 95) {
      lentMs = b * BIN_MS - halfMs;
      break;
    }
  }
  console.log(`  freed share lent to batch (95 % of the key) within ${lentMs === undefined ? "never" : `${(Math.max(0, lentMs) / 1000).toFixed(1)} s`}`);
} finally {
  proxy.kill("SIGTERM");
  await new Promise((resolve) => proxy.once("close", resolve));
  backend.closeAllConnections();
  backend.close();
  opened?.close();
  if (said.trim()) process.stderr.write(said);
}

function get(agent, port, className) {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path: "/", agent, headers: { "x-class": className } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, retryAfter: Number(res.headers["retry-after"]) }));
    });
    req.on("error", reject);
    req.end();
  });
}

async function untilListening(port) {
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const req = request({ host: "127.0.0.1", port, path: "/", headers: { "x-class": "batch" } }, (res) => {
        res.resume();
        resolve(true);
      });
      req.on("error", () => resolve(false));
      req.end();
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the proxy did not listen on ${port}: ${said}`);
}
