#!/usr/bin/env node
// The least CPU any Node.js pacer that writes in 10 ms steps can cost: read
// standard input with blocking reads, write 10 ms of the rate, sleep 10 ms,
// repeat. No bucket, no exactness (its sleeps drift late): a reference row for
// bench/pipe.mjs, to tell what part of tbucket's CPU is Node's own and this machine's.
//
//   head -c 10M /dev/zero | node bench/node-floor.mjs 1048576 > /dev/null
import { readSync, writeSync } from "node:fs";

const bytesPerSecond = Number(process.argv[2]);
const step = Math.max(1, Math.floor(bytesPerSecond / 100));
const buffer = Buffer.allocUnsafeSlow(step);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

for (;;) {
  let filled = 0;
  while (filled < step) {
    const n = readSync(0, buffer, filled, step - filled, null);
    if (n === 0) break;
    filled += n;
  }
  for (let written = 0; written < filled; ) written += writeSync(1, buffer, written, filled - written);
  if (filled < step) break;
  await sleep(10);
}
