#!/usr/bin/env node
// Benchmark for classes on a shared key with real pipes (run `npm run build` first): three
// `tbucket --key uplink --class X < /dev/zero` at once on one store, then interactive stops
// halfway. The key: 20 MiB/s, burst 2 MiB, shared by
//   interactive  5 MiB/s, prio 0            -> 9 MiB/s  (5 + the 4 MiB/s the guarantees leave)
//   backup      10 MiB/s, ceil 20, prio 1   -> 10 MiB/s; once interactive stops, 19 (10 + 9 lent)
//   bulk         1 MiB/s, prio 2            -> 1 MiB/s, throughout (guarantees before lending)
// Prints each class's rate in each half (its first 2 s left out) beside the rule's, and how long
// after interactive stopped the others took all the key's rate (98 %) again.
// Usage: node bench/class-pipes.mjs [sqlite|redis] [seconds=24]
import { spawn } from "node:child_process";
import { join } from "node:path";
import { openBenchStore, TBUCKET as bin, tbucket } from "./bench-store.mjs";

const storeKind = process.argv[2] ?? "sqlite";
const seconds = Number(process.argv[3] ?? 24);
const MiB = 2 ** 20;
const CLASSES = [
  { name: "interactive", flag: "interactive=5mb,prio=0", rule: [9, 0] },
  { name: "backup", flag: "backup=10mb,ceil=20mb,prio=1", rule: [10, 19] },
  { name: "bulk", flag: "bulk=1mb,prio=2", rule: [1, 1] },
];
const SETTLE_S = 2;
const BIN_MS = 100;

const opened = await openBenchStore(storeKind);
const { dir, url: store } = opened;
try {
  await tbucket(["key", "set", "uplink", "--rate", "20mb", "--burst", "2mb", ...CLASSES.flatMap((c) => ["--class", c.flag]), "--store", store]);
  const startMs = performance.now();
  const bins = CLASSES.map(() => new Float64Array(Math.ceil((seconds * 1000) / BIN_MS) + 10));
  const pipes = CLASSES.map((c, i) => {
    const child = spawn(bin, ["--key", "uplink", "--class", c.name, "--store", store], { stdio: ["pipe", "pipe", "inherit"] });
    const zeros = Buffer.alloc(1 << 20);
    const feed = () => {
      while (child.stdin.writable && child.stdin.write(zeros));
    };
    child.stdin.on("drain", feed);
    child.stdin.on("error", () => {});
    feed();
    child.stdout.on("data", (chunk) => {
      bins[i][Math.floor((performance.now() - startMs) / BIN_MS)] += chunk.length;
    });
    child.closed = new Promise((resolve) => child.once("close", resolve));
    return child;
  });
  const halfMs = (seconds * 1000) / 2;
  await sleep(halfMs);
  pipes[0].kill("SIGINT");
  await sleep(halfMs);
  for (const child of pipes.slice(1)) child.kill("SIGINT");
  await Promise.all(pipes.map((child) => child.closed));

  const rateOf = (i, fromMs, toMs) => {
    let bytes = 0;
    for (let b = Math.floor(fromMs / BIN_MS); b < Math.floor(toMs / BIN_MS); b++) bytes += bins[i][b];
    return bytes / MiB / ((toMs - fromMs) / 1000);
  };
  console.log(`${storeKind}: three pipes for ${seconds / 2} s, then two for ${seconds / 2} s (node ${process.version})`);
  console.log(`  ${"class".padEnd(12)} ${"1st MiB/s".padStart(10)} ${"rule".padStart(6)} ${"off".padStart(7)}   ${"2nd MiB/s".padStart(10)} ${"rule".padStart(6)} ${"off".padStart(7)}`);
  CLASSES.forEach((c, i) => {
    const halves = [rateOf(i, SETTLE_S * 1000, halfMs), rateOf(i, halfMs + SETTLE_S * 1000, seconds * 1000)];
    const cells = halves.map((got, h) => {
      const rule = c.rule[h];
      const off = rule === 0 ? "" : `${(((got - rule) / rule) * 100).toFixed(2)}%`;
      return `${got.toFixed(3).padStart(10)} ${rule.toFixed(0).padStart(6)} ${off.padStart(7)}`;
    });
    console.log(`  ${c.name.padEnd(12)} ${cells.join("   ")}`);
  });
  // The freed share is lent once backup and bulk together move the key's 20 MiB/s again (over 500 ms).
  let lentMs = Infinity;
  for (let t = halfMs; t < seconds * 1000 - 500; t += BIN_MS) {
    if (rateOf(1, t, t + 500) + rateOf(2, t, t + 500) >= 0.98 * 20) {
      lentMs = t - halfMs;
      break;
    }
  }
  console.log(`  freed share lent within ${lentMs === Infinity ? "never" : `${(lentMs / 1000).toFixed(1)} s`} of interactive stopping`);
} finally {
  opened.close();
}


function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
