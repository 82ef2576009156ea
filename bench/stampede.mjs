#!/usr/bin/env node
// Retry-After without a stampede (run `npm run build` first): a batch of 30 `curl -sf --retry 20`
// clients, one request each, all at once behind `tbucket proxy --per all --rate 5/s --burst 5`.
// Ideal: 5 at once, then 5 a second: 5 s. Prints the batch's time, the requests the proxy saw per
// request served (1 would be no retry at all), and whether every curl succeeded.
// Usage: node bench/stampede.mjs [clients=30]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TBUCKET as bin } from "./bench-store.mjs";
import { freePort } from "./free-port.mjs";

const clients = Number(process.argv[2] ?? 30);
const dir = mkdtempSync(join(tmpdir(), "tbucket-stampede-"));
const backend = createServer((_req, res) => res.end("ok\n"));
await new Promise((resolve) => backend.listen(0, "127.0.0.1", resolve));
const port = await freePort();
const log = join(dir, "access.log");
const proxy = spawn(bin, ["proxy", "--listen", String(port), "--to", `http://127.0.0.1:${backend.address().port}`, "--rate", "5/s", "--burst", "5", "--per", "all", "--access-log", log, "--quiet"], { stdio: "ignore" });
try {
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false);
    if (up) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, 1200)); // the bucket full again after the probe
  const startMs = performance.now();
  const codes = await Promise.all(
    Array.from({ length: clients }, (_, i) => new Promise((resolve) => spawn("curl", ["-sf", "--retry", "20", "-o", "/dev/null", `http://127.0.0.1:${port}/${i}`]).once("close", resolve))),
  );
  const seconds = (performance.now() - startMs) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 200));
  const lines = readFileSync(log, "utf8").trim().split("\n").filter((line) => !line.includes('"GET / '));
  const ideal = Math.max(0, (clients - 5) / 5);
  console.log(`${clients} curl --retry clients behind 5/s burst 5 (curl ${await curlVersion()}, node ${process.version})`);
  console.log(`  all served: ${codes.every((code) => code === 0)}; batch ${seconds.toFixed(2)} s (ideal ${ideal} s); ${(lines.length / clients).toFixed(2)} requests per request served`);
} finally {
  proxy.kill("SIGTERM");
  backend.close();
  rmSync(dir, { recursive: true, force: true });
}

function curlVersion() {
  return new Promise((resolve) => {
    let out = "";
    const child = spawn("curl", ["--version"]);
    child.stdout.on("data", (chunk) => (out += chunk));
    child.once("close", () => resolve(out.split(" ")[1]));
  });
}
