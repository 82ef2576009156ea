#!/usr/bin/env node
// The HTTP key table full and churning, as a busy proxy at --max-keys is: each new client evicts
// the least recently used one, and each request touches a recent key. Prints the time per new
// key at three table sizes; a table whose cost grows with the keys it evicted shows it here.
//
//   node bench/key-table.mjs                 # about 2 seconds
//   node bench/key-table.mjs --module PATH   # another build of KeyTable (e.g. an older commit's, built)
//
// Needs `npm run build`.
import { pathToFileURL } from "node:url";

const moduleFlag = process.argv.indexOf("--module");
const modulePath = moduleFlag === -1 ? new URL("../dist/core/key-table.js", import.meta.url).href : pathToFileURL(process.argv[moduleFlag + 1]).href;
const { KeyTable } = await import(modulePath);

function nanosecondsPerNewKey(maxKeys, newKeys) {
  const table = new KeyTable({ maxKeys, isSpent: () => false });
  for (let i = 0; i < maxKeys; i++) table.set(`10.${i}`, i);
  let next = maxKeys;
  const startMs = performance.now();
  for (let i = 0; i < newKeys; i++) {
    table.set(`10.${next++}`, i);
    table.get(`10.${next - 5}`);
  }
  return ((performance.now() - startMs) * 1e6) / newKeys;
}

console.log("| --max-keys | per new key, full table (best of 3, 200,000 new keys) |");
console.log("| ---: | ---: |");
for (const maxKeys of [1000, 10_000, 100_000]) {
  const best = Math.min(...[0, 1, 2].map(() => nanosecondsPerNewKey(maxKeys, 200_000)));
  console.log(`| ${maxKeys.toLocaleString("en-US")} | ${(best / 1000).toFixed(2)} µs |`);
}
