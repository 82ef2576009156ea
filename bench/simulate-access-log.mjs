#!/usr/bin/env node
// Writes a deterministic Combined Log Format access log to standard output, for trying
// `tbucket simulate` on something shaped like real traffic: a steady background of clients,
// a crawler that bursts, and a busy hour in the middle.
// Usage: node bench/simulate-access-log.mjs [minutes=60] > access.log
const minutes = Number(process.argv[2] ?? 60);
let state = 2026;
const random = () => {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return (state + 0.5) / 2 ** 32;
};
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const start = Date.UTC(2026, 9, 10, 13, 0, 0);
const pad = (n) => String(n).padStart(2, "0");
const stamp = (ms) => {
  const d = new Date(ms);
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
};
const paths = ["/", "/api/items", "/api/items/42", "/static/app.js", "/login"];
const lines = [];
let t = 0;
let crawlerPeriod = 0;
const endMs = minutes * 60_000;
while (t < endMs) {
  // 4 requests a second on average, 12 in the busy middle third.
  const busy = t > endMs / 3 && t < (2 * endMs) / 3;
  t += (-Math.log(random()) / (busy ? 12 : 4)) * 1000;
  const client = `10.0.${Math.floor(random() * 4)}.${1 + Math.floor(random() * 50)}`;
  const path = paths[Math.floor(random() * paths.length)];
  const size = path.startsWith("/static") ? 48_000 + Math.floor(random() * 4000) : 200 + Math.floor(random() * 3000);
  lines.push([t, `${client} - - [${stamp(start + t)}] "GET ${path} HTTP/1.1" 200 ${size} "-" "Mozilla/5.0"`]);
  // A crawler: every five minutes, 60 requests in the same second.
  if (Math.floor(t / 300_000) !== crawlerPeriod && t < endMs) {
    crawlerPeriod = Math.floor(t / 300_000);
    for (let i = 0; i < 60; i++) lines.push([t, `192.0.2.7 - - [${stamp(start + t)}] "GET /page/${i} HTTP/1.1" 200 ${1500 + i} "-" "crawler/1.0"`]);
  }
}
process.stdout.write(lines.map(([, line]) => line).join("\n") + "\n");
