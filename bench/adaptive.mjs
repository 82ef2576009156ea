#!/usr/bin/env node
// Deterministic simulation of `run --adaptive` (run `npm run build` first).
// A client that always has work launches through a token bucket (burst 1) whose rate
// AdaptiveRate sets; a simulated server admits by its own token bucket (hidden limit,
// small burst) and throttles the rest; each outcome reaches the client after a fixed
// latency. The hidden limit goes 50 -> 20 -> 90 requests/s, each phase 30 s of fake time
// (1 ms steps). Per phase it prints: the admitted rate over the 10th second after the
// change and over the rest of the phase, as % of the new limit; the allowed rate at 10 s;
// the % of requests throttled in the first 10 s and from then to the phase's end.
// Target: >= 90 % of the new limit within 10 s, <= 2 % refused.
// With --pause, a throttle's answer also pauses every launch for a second, as a 429 with
// `retry-after: 1` pauses `run` (the mock API's whole-second Retry-After; bench/adaptive-run.mjs).
// Usage: node bench/adaptive.mjs [--ceiling 100] [--latency-ms 100] [--server-burst 5 | --server-burst-s 1] [--pause]
import { FakeClock } from "../dist/core/clock.js";
import { TokenBucket } from "../dist/core/token-bucket.js";
import { AdaptiveRate } from "../dist/run/adaptive-rate.js";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const ceiling = option("ceiling", 100);
const latencyMs = option("latency-ms", 100);
const serverBurst = option("server-burst", 5);
const pauseMs = args.includes("--pause") ? 1000 : 0;
// --server-burst-s S: the server's burst is S seconds of its limit (the mock API's is 1), following each change.
const serverBurstS = option("server-burst-s", 0);
const phases = [50, 20, 90];
const phaseMs = 30_000;
const stepMs = 1;

function simulate(label, options) {
  const clock = new FakeClock(0);
  const client = new TokenBucket({ rate: ceiling, burst: 1, clock });
  const adaptive = new AdaptiveRate(ceiling, clock, { ...options, onRate: (r) => client.setRateAt(clock.now(), r) });
  const burstOf = (limit) => (serverBurstS > 0 ? limit * serverBurstS : serverBurst);
  const server = new TokenBucket({ rate: phases[0], burst: burstOf(phases[0]), clock });
  const inFlight = []; // [arrivalMs, throttled, sentMs], in order of arrival (fixed latency)
  let pausedUntilMs = 0;
  const stats = phases.map(() => ({ sent: 0, throttled: 0, sentEarly: 0, throttledEarly: 0, ok10th: 0, okRest: 0, rateAt10: 0, sentRest: 0, throttledRest: 0 }));
  for (let t = 0; t < phaseMs * phases.length; t += stepMs) {
    clock.set(t);
    const phase = Math.floor(t / phaseMs);
    const intoPhase = t - phase * phaseMs;
    if (intoPhase === 0 && phase > 0) {
      server.setRateAt(t, phases[phase]);
      if (serverBurstS > 0) server.setBurstAt(t, burstOf(phases[phase]));
    }
    if (intoPhase === 10_000) stats[phase].rateAt10 = adaptive.rate;
    while (inFlight.length > 0 && inFlight[0][0] <= t) {
      const [, throttled, sentAtMs] = inFlight.shift();
      adaptive.record(throttled, sentAtMs);
      if (throttled && pauseMs > 0) pausedUntilMs = Math.max(pausedUntilMs, t + pauseMs);
    }
    if (t < pausedUntilMs) {
      // Paused: the launch bucket stays empty, as run holds it.
      client.allowAt(t);
      continue;
    }
    while (client.allowAt(t)) {
      const throttled = !server.allowAt(t);
      const s = stats[phase];
      s.sent++;
      if (throttled) s.throttled++;
      if (intoPhase < 10_000) {
        s.sentEarly++;
        if (throttled) s.throttledEarly++;
      }
      if (!throttled && intoPhase >= 9_000 && intoPhase < 10_000) s.ok10th++;
      if (!throttled && intoPhase >= 10_000) s.okRest++;
      if (intoPhase >= 10_000) {
        s.sentRest++;
        if (throttled) s.throttledRest++;
      }
      inFlight.push([t + latencyMs, throttled, t]);
    }
  }
  const pct = (x) => `${(100 * x).toFixed(1)}%`;
  console.log(`${label} (ceiling ${ceiling}/s, latency ${latencyMs} ms, server burst ${serverBurstS > 0 ? `${serverBurstS} s of the limit` : serverBurst}${pauseMs ? ", a 1 s pause at each throttle" : ""})`);
  stats.forEach((s, i) => {
    const limit = phases[i];
    console.log(
      `  limit ${String(limit).padStart(2)}/s: admitted in 10th s ${pct(s.ok10th / limit).padStart(6)}, s 10-30 ${pct(s.okRest / (20 * limit)).padStart(6)},` +
        ` allowed at 10 s ${pct(s.rateAt10 / limit).padStart(6)}; throttled first 10 s ${pct(s.throttledEarly / s.sentEarly).padStart(5)}, s 10-30 ${pct(s.throttledRest / s.sentRest).padStart(5)}`,
    );
  });
}

simulate("AWS adaptive (beta 0.7, C 0.4, a cut at every throttle, Wmax the measured rate)", { cutOncePerRoundTrip: false, maxFromSendRate: false, maxFromAdmitted: false });
simulate("Wmax the rate the throttled request was sent at (maxFromSendRate), one cut per round trip", { maxFromAdmitted: false });
simulate("tbucket's default: that, and Wmax three quarters of the way down to the rate admitted over the last second (maxFromAdmitted)", {});
