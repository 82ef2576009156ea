#!/usr/bin/env node
// Benchmark for classes on a shared key with `tbucket run` launches (run `npm run build` first):
// three `tbucket run --key api --class-of NAME -- true` at once on one store, each launching as
// fast as the key lets it. The key: 100 launches a second (burst 10) shared by
//   web    60/s, prio 0  -> 65/s (60 + the 5/s the guarantees leave)
//   batch  30/s, prio 1  -> 30/s
//   bulk    5/s, prio 2  -> 5/s (guarantees before lending)
// Prints each class's launches a second from its joblog (its first 2 s left out) beside the rule's.
// Usage: node bench/class-runs.mjs [sqlite|redis] [seconds=12]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { openBenchStore, tbucket } from "./bench-store.mjs";

const storeKind = process.argv[2] ?? "sqlite";
const seconds = Number(process.argv[3] ?? 12);
const CLASSES = [
  { name: "web", flag: "web=60/s,prio=0", rule: 65 },
  { name: "batch", flag: "batch=30/s,prio=1", rule: 30 },
  { name: "bulk", flag: "bulk=5/s,prio=2", rule: 5 },
];
const SETTLE_S = 2;

const opened = await openBenchStore(storeKind);
const { dir, url: store } = opened;
try {
  await tbucket(["key", "set", "api", "--rate", "100/s", "--burst", "10", ...CLASSES.flatMap((c) => ["--class", c.flag]), "--store", store]);
  const startS = Date.now() / 1000;
  await Promise.all(
    CLASSES.map((c) => tbucket(["run", "--key", "api", "--class-of", c.name, "--store", store, "-j", "0", "--duration", `${seconds}s`, "--joblog", join(dir, c.name), "--", "true"])),
  );
  console.log(`${storeKind}: three runs for ${seconds} s, launches a second from ${SETTLE_S} s on (node ${process.version})`);
  console.log(`  ${"class".padEnd(8)} ${"got/s".padStart(8)} ${"rule/s".padStart(8)} ${"off".padStart(8)}`);
  for (const c of CLASSES) {
    const starts = readFileSync(join(dir, c.name), "utf8").trimEnd().split("\n").map((line) => JSON.parse(line).start);
    const counted = starts.filter((s) => s >= startS + SETTLE_S && s < startS + seconds).length;
    const got = counted / (seconds - SETTLE_S);
    console.log(`  ${c.name.padEnd(8)} ${got.toFixed(2).padStart(8)} ${c.rule.toFixed(2).padStart(8)} ${`${(((got - c.rule) / c.rule) * 100).toFixed(2)}%`.padStart(8)}`);
  }
} finally {
  opened.close();
}

