import { Agent, request } from "node:http";
import { describe, expect, it } from "vitest";
import { listen } from "../http/http-helpers.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";

function ask(url: string, agent: Agent): Promise<{ status: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, retryAfter: res.headers["retry-after"] as string | undefined }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}

describe("tbucket proxy with a set of limits, in real time", () => {
  it("--rate 10/s --window 15/2s: a client asking every 40 ms gets at most 15 in any 2 s, and as many as the window allows", async () => {
    // When each admitted request reached the backend, and when the client sent it (its number in the path).
    const arrivals: number[] = [];
    const sentOfArrival: number[] = [];
    const sentMs: number[] = [];
    const backend = await listen((req, res) => {
      arrivals.push(performance.now());
      sentOfArrival.push(sentMs[Number(req.url!.slice(1))]!);
      res.end("ok");
    });
    const proxy = await startProxy(["--to", backend.url, "--rate", "10/s", "--window", "15/2s"]);
    const url = `http://127.0.0.1:${proxy.port}/`;
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const runMs = 5000;
    const startMs = performance.now();
    const answers: Array<Promise<{ status: number; retryAfter: string | undefined }>> = [];
    for (let i = 0; performance.now() - startMs < runMs; i++) {
      sentMs.push(performance.now());
      answers.push(ask(`${url}${i}`, agent));
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, startMs + (i + 1) * 40 - performance.now())));
    }
    const results = await Promise.all(answers);
    agent.destroy();
    expect((await stopProxy(proxy)).code).toBe(0);
    // The proxy admits a request after the client sent it and before the backend sees it, so however late the
    // backend wakes, the 16th admission from any one comes at least 2 s after the client sent that one.
    for (let i = 0; i + 15 < arrivals.length; i++) expect(arrivals[i + 15]! - sentOfArrival[i]!).toBeGreaterThanOrEqual(2000);
    // 15 in the first 2 s, then 15 a window: about 15 + 7.5/s over the 3 s left.
    expect(arrivals.length).toBeGreaterThanOrEqual(34);
    expect(arrivals.length).toBeLessThanOrEqual(45);
    const refused = results.filter((result) => result.status === 429);
    expect(refused.length + arrivals.length).toBe(results.length);
    // The first refusal is told the window's instant; each later one counts as one more client told to come back
    // (no stampede: RetrySpread), so a client that ignores Retry-After is told later and later, in whole seconds.
    expect(["1", "2"]).toContain(refused[0]!.retryAfter);
    for (const { retryAfter } of refused) expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  });
});
