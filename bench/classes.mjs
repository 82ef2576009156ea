#!/usr/bin/env node
// Benchmark for classes in `tbucket simulate` (run `npm run build` first): three classes of a
// 100/s key (burst 20), each asking 1000 a second for 60 s (far more than the key), under drop
// and queue. Prints each class's share of the last 50 s beside the rule's answer (DESIGN
// section 12): guarantees first, then lent by prio, then weight, never past a ceil:
//   interactive 30/s, ceil 50/s, prio 0 -> 50/s (30 + 20 lent, held by its ceil)
//   backup      20/s, prio 1, weight 30 -> 35/s (20 + 3/4 of the 20 left)
//   bulk        10/s, prio 1, weight 10 -> 15/s (10 + 1/4 of the 20 left)
// Usage: node bench/classes.mjs [seconds=60]
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const bin = `${root}bin/tbucket`;
const seconds = Number(process.argv[2] ?? 60);
const CLASSES = [
  { flag: "interactive=30/s,ceil=50/s,prio=0", name: "interactive", rule: 50 },
  { flag: "backup=20/s,prio=1,weight=30", name: "backup", rule: 35 },
  { flag: "bulk=10/s,prio=1,weight=10", name: "bulk", rule: 15 },
];
const SKIP_S = 10;

// Every class asks once a millisecond, their order within the millisecond turning.
let trace = "";
for (let ms = 0; ms < seconds * 1000; ms++) {
  for (let k = 0; k < CLASSES.length; k++) trace += `${((ms + k * 0.1) / 1000).toFixed(5)} ${CLASSES[(ms + k) % CLASSES.length].name}\n`;
}

for (const policy of ["drop", "queue"]) {
  const args = ["simulate", "-r", "100/s", "-b", "20", ...CLASSES.flatMap((c) => ["--class", c.flag]), "--trace", "-", "--class-field", "2", "--policy", policy, "--format", "jsonl"];
  const started = process.hrtime.bigint();
  const result = spawnSync(bin, args, { input: trace, maxBuffer: 1 << 30, encoding: "utf8" });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`tbucket ${args.join(" ")}: exit ${result.status}: ${result.stderr}`);
  // What each class was served from SKIP_S on (the first burst spent), by the time it acted.
  const served = new Map(CLASSES.map((c) => [c.name, 0]));
  for (const line of result.stdout.split("\n")) {
    if (line === "") continue;
    const event = JSON.parse(line);
    const actS = event.t + event.wait;
    if (event.admitted && actS >= SKIP_S && actS < seconds) served.set(event.class, served.get(event.class) + event.cost);
  }
  const span = seconds - SKIP_S;
  console.log(`${policy}: ${CLASSES.length * seconds * 1000} events in ${(wallMs / 1000).toFixed(2)} s; served from ${SKIP_S} s to ${seconds} s`);
  console.log(`  ${"class".padEnd(12)} ${"got/s".padStart(8)} ${"rule/s".padStart(8)} ${"off".padStart(7)}`);
  for (const c of CLASSES) {
    const got = served.get(c.name) / span;
    console.log(`  ${c.name.padEnd(12)} ${got.toFixed(2).padStart(8)} ${c.rule.toFixed(2).padStart(8)} ${(((got - c.rule) / c.rule) * 100).toFixed(2).padStart(6)}%`);
  }
}
