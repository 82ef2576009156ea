#!/usr/bin/env node
// Benchmark for classes on a shared key with `tbucket run` launches (run `npm run build` first):
// three `tbucket run --key api --class-of NAME -- true` at once on one store, each launching as
// fast as the key lets it; web stops halfway. The key: 100 launches a second (burst 10) shared by
//   web    60/s, prio 0  -> 65/s (60 + the 5/s the guarantees leave)
//   batch  30/s, prio 1  -> 30/s; once web stops, 95/s (30 + the 65 it leaves, prio 1 before 2)
//   bulk    5/s, prio 2  -> 5/s throughout (guarantees before lending)
// Prints each class's launches a second per half from its joblog (its first 2 s left out) beside
// the rule's, and how long after web stopped batch took the freed share (95 % of its 95/s).
// Usage: node bench/class-runs.mjs [sqlite|redis] [seconds=12]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openBenchStore, tbucket } from "./bench-store.mjs";

const storeKind = process.argv[2] ?? "sqlite";
const seconds = Number(process.argv[3] ?? 12);
const CLASSES = [
  { name: "web", flag: "web=60/s,prio=0", rule: [65, 0] },
  { name: "batch", flag: "batch=30/s,prio=1", rule: [30, 95] },
  { name: "bulk", flag: "bulk=5/s,prio=2", rule: [5, 5] },
];
const SETTLE_S = 2;

const opened = await openBenchStore(storeKind);
const { dir, url: store } = opened;
try {
  await tbucket(["key", "set", "api", "--rate", "100/s", "--burst", "10", ...CLASSES.flatMap((c) => ["--class", c.flag]), "--store", store]);
  const startS = Date.now() / 1000;
  const half = seconds / 2;
  await Promise.all(
    CLASSES.map((c) =>
      tbucket(["run", "--key", "api", "--class-of", c.name, "--store", store, "-j", "0", "--duration", `${c.rule[1] === 0 ? half : seconds}s`, "--joblog", join(dir, c.name), "--", "true"]),
    ),
  );
  console.log(`${storeKind}: three runs for ${half} s, then two for ${half} s; launches a second from ${SETTLE_S} s into each half (node ${process.version})`);
  console.log(`  ${"class".padEnd(8)} ${"1st /s".padStart(8)} ${"rule".padStart(5)} ${"off".padStart(7)}   ${"2nd /s".padStart(8)} ${"rule".padStart(5)} ${"off".padStart(7)}`);
  let batchStarts = [];
  for (const c of CLASSES) {
    const starts = readFileSync(join(dir, c.name), "utf8").trimEnd().split("\n").map((line) => JSON.parse(line).start);
    if (c.name === "batch") batchStarts = starts;
    const halves = [0, 1].map((h) => {
      if (c.rule[h] === 0) return `${"-".padStart(8)} ${"-".padStart(5)} ${"".padStart(7)}`;
      const from = startS + h * half + SETTLE_S;
      const to = startS + (h + 1) * half;
      const got = starts.filter((s) => s >= from && s < to).length / (to - from);
      return `${got.toFixed(2).padStart(8)} ${String(c.rule[h]).padStart(5)} ${`${(((got - c.rule[h]) / c.rule[h]) * 100).toFixed(2)}%`.padStart(7)}`;
    });
    console.log(`  ${c.name.padEnd(8)} ${halves.join("   ")}`);
  }
  // The first 500 ms after web stopped in which batch launched at 95 % of its new share.
  let lentS;
  for (let t = startS + half; t < startS + seconds - 0.5; t += 0.1) {
    if (batchStarts.filter((s) => s >= t && s < t + 0.5).length / 0.5 >= 0.95 * 95) {
      lentS = t - (startS + half);
      break;
    }
  }
  console.log(`  freed share lent to batch within ${lentS === undefined ? "never" : `${lentS.toFixed(1)} s`}`);
} finally {
  opened.close();
}

