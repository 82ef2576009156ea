#!/usr/bin/env node
// CPU (user + system, from GNU time) of tbucket's pipe next to what it cannot go below here:
// Node.js's own start, and cat copying the same bytes from pipe to pipe. Round robin, so that
// a busy moment of the machine does not fall on one row only; median and range of the rounds.
//
//   node bench/cpu.mjs                          # 5 rounds (about 2 minutes)
//   node bench/cpu.mjs --rounds 9
//   node bench/cpu.mjs --tbucket /other/checkout/bin/tbucket   # another build, for an A/B
//
// Needs `npm run build` and GNU time (apt-get install time).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const rounds = Number(option("--rounds", "5"));
const tbucketPath = option("--tbucket", fileURLToPath(new URL("../bin/tbucket", import.meta.url)));
const work = mkdtempSync(join(tmpdir(), "tbucket-cpu-"));
const timeFile = join(work, "time.txt");

const quote = (word) => `'${word.replaceAll("'", `'\\''`)}'`;
const tbucket = (...words) => [process.execPath, tbucketPath, ...words].map(quote).join(" ");
const timed = (command) => `/usr/bin/time -o ${quote(timeFile)} -f '%U %S' ${command}`;
const withoutCaCerts = "env -u NODE_EXTRA_CA_CERTS";

const rows = [
  { name: "node -e 0", script: timed(`${quote(process.execPath)} -e 0`) },
  { name: "node -e 0, without NODE_EXTRA_CA_CERTS", script: `${withoutCaCerts} ${timed(`${quote(process.execPath)} -e 0`)}` },
  { name: "cat, 1000 MiB pipe to pipe", script: `head -c 1000M /dev/zero | ${timed("cat")} | cat > /dev/null` },
  { name: "tbucket --rate inf, 1000 MiB pipe to pipe", script: `head -c 1000M /dev/zero | ${timed(tbucket("--rate", "inf"))} | cat > /dev/null` },
  { name: "tbucket --rate 100mib, 1000 MiB (10 s)", script: `head -c 1000M /dev/zero | ${timed(tbucket("--rate", "100mib"))} | cat > /dev/null` },
  { name: "tbucket --rate 1mib, 10 MiB (10 s)", script: `head -c 10M /dev/zero | ${timed(tbucket("--rate", "1mib"))} > /dev/null` },
];

const runs = rows.map(() => []);
try {
  for (let round = 0; round < rounds; round++) {
    for (const [i, row] of rows.entries()) {
      execFileSync("bash", ["-c", row.script], { stdio: ["ignore", "ignore", "inherit"] });
      const [user, system] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
      runs[i].push(user + system);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
console.log(`# CPU, user + system (${new Date().toISOString().slice(0, 10)}, node ${process.version}, ${rounds} rounds, ${tbucketPath})\n`);
console.log("| command | median | range |");
console.log("|---|---|---|");
for (const [i, row] of rows.entries()) {
  console.log(`| ${row.name} | ${median(runs[i]).toFixed(2)} s | ${Math.min(...runs[i]).toFixed(2)}–${Math.max(...runs[i]).toFixed(2)} s |`);
}
