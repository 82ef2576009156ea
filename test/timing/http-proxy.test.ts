import { Agent, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningHttpProxy, startHttpProxy } from "../../src/proxy/http-proxy.js";
import { listen } from "../http/http-helpers.js";

let proxy: RunningHttpProxy | undefined;

afterEach(async () => {
  await proxy?.close(0);
  proxy = undefined;
});

/** One request on `agent`: its status, Retry-After and body size. */
function ask(url: string, agent: Agent, headers: Record<string, string> = {}): Promise<{ status: number; retryAfter: string | undefined; bytes: number }> {
  return new Promise((resolve, reject) => {
    request(url, { agent, headers }, (res) => {
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () => resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"] as string | undefined, bytes }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}

async function start(options: { rate: number; burst: number; bodyRate?: { bytesPerSecond: number; burstBytes: number } }, body = "ok"): Promise<string> {
  const backend = await listen((_req, res) => res.end(body));
  proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, trustProxy: ["127.0.0.1"], ...options });
  return `http://127.0.0.1:${proxy.address.port}/`;
}

describe("the HTTP proxy in real time", () => {
  it("holds each of 5 clients, each as fast as it can, within burst + rate x T and at no less than 99 % of rate x T less a tolerance", async () => {
    const rate = 50;
    const burst = 10;
    const url = await start({ rate, burst });
    const runMs = 3000;
    const clients = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"];
    const firstMs = performance.now();
    const results = await Promise.all(
      clients.map(async (client) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        let admitted = 0;
        while (performance.now() - firstMs < runMs) {
          if ((await ask(url, agent, { "x-forwarded-for": client })).status === 200) admitted++;
        }
        agent.destroy();
        return admitted;
      }),
    );
    const elapsedMs = performance.now() - firstMs;
    for (const admitted of results) {
      expect(admitted).toBeLessThanOrEqual(burst + (rate * elapsedMs) / 1000);
      // The last requests of a run may wait on a loaded machine: 10 % of the run's worth of tolerance.
      expect(admitted).toBeGreaterThanOrEqual(0.99 * ((rate * runMs) / 1000) - 0.1 * rate * (runMs / 1000));
    }
  });

  it("a client that waits exactly Retry-After after a 429 is let through", async () => {
    const url = await start({ rate: 2, burst: 1 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let retried = 0;
    for (let round = 0; round < 4; round++) {
      let answer = await ask(url, agent);
      while (answer.status === 200) answer = await ask(url, agent);
      expect(answer.status).toBe(429);
      await new Promise((resolve) => setTimeout(resolve, Number(answer.retryAfter) * 1000));
      expect((await ask(url, agent)).status).toBe(200);
      retried++;
    }
    agent.destroy();
    expect(retried).toBe(4);
  });

  it("shapes response bodies per key: no faster than the body-rate envelope", async () => {
    const bytesPerSecond = 256 * 1024;
    const burstBytes = 32 * 1024;
    const size = 512 * 1024;
    const url = await start({ rate: Infinity, burst: 1, bodyRate: { bytesPerSecond, burstBytes } }, "x".repeat(size));
    const agent = new Agent({ keepAlive: false });
    const startedMs = performance.now();
    const answer = await ask(url, agent);
    const elapsedMs = performance.now() - startedMs;
    expect(answer.bytes).toBe(size);
    const envelopeMs = ((size - burstBytes) / bytesPerSecond) * 1000;
    expect(elapsedMs).toBeGreaterThanOrEqual(envelopeMs - 20);
    expect(elapsedMs).toBeLessThan(envelopeMs + 1500);
  });
});

describe("the HTTP proxy's queue policy in real time", () => {
  it("lets queued requests go on the bucket's schedule, never early, and refuses those that would wait past the limit", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    const rate = 20;
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate, burst: 1, policy: "queue", maxWaitMs: 1000 });
    const url = `http://127.0.0.1:${proxy.address.port}/`;
    const agent = new Agent({ keepAlive: true, maxSockets: 30 });
    // Connections first, so that their setup is not in the schedule; then the bucket refills.
    await Promise.all(Array.from({ length: 30 }, () => ask(url, agent, { "x-forwarded-for": "10.9.9.9" })));
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const startedMs = performance.now();
    const answers = await Promise.all(Array.from({ length: 30 }, () => ask(url, agent).then((answer) => ({ ...answer, atMs: performance.now() - startedMs }))));
    agent.destroy();
    const admitted = answers.filter((a) => a.status === 200).map((a) => a.atMs).sort((a, b) => a - b);
    // The first goes at once, then one every 50 ms for up to 1 s: 21 in all, give or take the one due at the limit.
    expect(admitted.length).toBeGreaterThanOrEqual(20);
    expect(admitted.length).toBeLessThanOrEqual(22);
    // Never early: in every window between two answers, no more than the burst plus the rate over it.
    // Measured at the client, an answer a loaded machine delivered late makes the next look early by as
    // much, so the envelope gets one token (50 ms) of slack, never more.
    for (let i = 0; i < admitted.length; i++) {
      for (let j = i + 1; j < admitted.length; j++) expect(j - i + 1, `answers ${i} to ${j}`).toBeLessThanOrEqual(1 + (rate * (admitted[j]! - admitted[i]!)) / 1000 + 1);
    }
    const deviations = admitted.map((atMs, k) => atMs - admitted[0]! - (k * 1000) / rate);
    expect(deviations.sort((a, b) => a - b)[Math.floor(deviations.length / 2)]).toBeLessThan(50);
  });
});
