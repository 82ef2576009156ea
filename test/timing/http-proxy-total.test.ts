import { readFileSync } from "node:fs";
import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listen } from "../http/http-helpers.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-total");

function ask(url: string, agent: Agent, headers: Record<string, string>): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    request(url, { agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}

/** The most arrivals in any span of the sorted times beyond what `burst` + `rate`·span allows (≤ 0: inside the envelope). */
function worstExcess(timesMs: readonly number[], rate: number, burst: number): number {
  let worst = -Infinity;
  for (let i = 0; i < timesMs.length; i++) {
    for (let j = i; j < timesMs.length; j++) worst = Math.max(worst, j - i + 1 - (burst + (rate * (timesMs[j]! - timesMs[i]!)) / 1000));
  }
  return worst;
}

describe("tbucket proxy --total, in real time", () => {
  it("50 clients rotating a trusted X-Forwarded-For against --per ip --rate 5/s --total 20/s: together within the total's envelope, each within its own", async () => {
    const arrivals: number[] = [];
    const byClient = new Map<string, number[]>();
    const backend = await listen((req, res) => {
      const atMs = performance.now();
      arrivals.push(atMs);
      const client = req.url!.split("/")[1]!;
      byClient.set(client, [...(byClient.get(client) ?? []), atMs]);
      res.end("ok");
    });
    const log = join(tempDir(), "access.log");
    const proxy = await startProxy(["--to", backend.url, "--per", "ip", "--rate", "5/s", "--total", "20/s", "--trust-proxy", "127.0.0.1", "--access-log", log]);
    expect(proxy.running.stderr()).toContain("(HTTP, 5/s, burst 1, per ip, total 20/s, burst 2)");
    const url = `http://127.0.0.1:${proxy.port}`;
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    // 200 requests a second, each from the next of 50 addresses: 4/s per client, under its own 5/s, ten times the total.
    const runMs = 3000;
    const gapMs = 5;
    const startMs = performance.now();
    const answers: Array<Promise<{ status: number; headers: IncomingHttpHeaders }>> = [];
    for (let i = 0; performance.now() - startMs < runMs; i++) {
      const client = `198.51.100.${i % 50}`;
      answers.push(ask(`${url}/${client}/${i}`, agent, { "x-forwarded-for": client }));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, startMs + (i + 1) * gapMs - performance.now())));
    }
    const results = await Promise.all(answers);
    const endMs = performance.now();
    agent.destroy();
    expect((await stopProxy(proxy)).code).toBe(0);

    // The total's envelope, 2 + 20/s over any span, with 3 requests of slack for a loaded machine's
    // jitter between the proxy's decision and the backend's arrival.
    expect(worstExcess(arrivals, 20, 2)).toBeLessThanOrEqual(3);
    // Its tokens were used, not lost to refusals: about 20/s over the run.
    const seconds = (endMs - startMs) / 1000;
    expect(arrivals.length).toBeGreaterThanOrEqual(Math.floor(20 * seconds * 0.85));
    expect(arrivals.length).toBeLessThanOrEqual(2 + 20 * seconds + 3);
    for (const times of byClient.values()) expect(worstExcess(times, 5, 1)).toBeLessThanOrEqual(1);
    // Several identities got through, none beyond its own limit, and together no more than the total.
    expect(byClient.size).toBeGreaterThan(1);

    const refused = results.filter((result) => result.status === 429);
    expect(refused.length + arrivals.length).toBe(results.length);
    for (const { headers } of refused) {
      expect(Number(headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(headers["ratelimit-policy"]).toBe(`"limit-1";q=5;w=1, "total";q=20;w=1`);
    }
    // The total's refusals are spread over the seconds its tokens come: later ones are told later (no stampede).
    const byTotalRetry = refused.filter(({ headers }) => /"total";r=0/.test(String(headers.ratelimit))).map(({ headers }) => Number(headers["retry-after"]));
    expect(byTotalRetry.length).toBeGreaterThan(refused.length / 2);
    expect(Math.max(...byTotalRetry)).toBeGreaterThan(5);
    const admitted = results.find((result) => result.status === 200)!;
    expect(admitted.headers.ratelimit).toMatch(/^"limit-1";r=0;t=1, "total";r=\d;t=\d$/);
    // The access log says which refused: the total (total=1), or the client's own limit (limit=1).
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines).toHaveLength(results.length);
    const byTotal = lines.filter((line) => / 429 \d+ .* refused 0 total=1$/.test(line));
    const byClientLimit = lines.filter((line) => / refused 0 limit=1$/.test(line));
    expect(byTotal.length + byClientLimit.length).toBe(refused.length);
    expect(byTotal.length).toBeGreaterThan(byClientLimit.length);
  });
});
