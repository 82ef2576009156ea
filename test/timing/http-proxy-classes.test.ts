import { Agent, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningHttpProxy, startHttpProxy } from "../../src/proxy/http-proxy.js";
import { listen } from "../http/http-helpers.js";

let proxy: RunningHttpProxy | undefined;
afterEach(async () => {
  await proxy?.close(0);
  proxy = undefined;
});

function ask(url: string, agent: Agent, className: string): Promise<{ status: number; atMs: number; retryAfter: string | undefined }> {
  return new Promise((resolve, reject) => {
    request(url, { agent, headers: { "x-class": className } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode!, atMs: performance.now(), retryAfter: res.headers["retry-after"] as string | undefined }));
      res.on("error", reject);
    })
      .on("error", reject)
      .end();
  });
}

describe("HTTP classes in real time", () => {
  it("keeps the guaranteed class at its rate while the other, asking as much, gets the rest and is refused beyond it", async () => {
    const backend = await listen((_req, res) => res.end("ok"));
    // interactive: 60/s and no more; batch: 10/s and the 30/s left of the key's 100/s.
    proxy = await startHttpProxy({
      listen: { host: "127.0.0.1", port: 0 },
      target: backend.url,
      rate: 100,
      burst: 10,
      per: { by: "all" },
      classes: { specs: [{ name: "interactive", rate: 60, ceil: 60 }, { name: "batch", rate: 10, prio: 1 }], header: "X-Class", defaultClass: "batch" },
    });
    const url = `http://127.0.0.1:${proxy.address.port}/`;
    const startMs = performance.now();
    const runMs = 5000;
    const admitted: Record<string, number[]> = { interactive: [], batch: [] };
    const retryAfters: Array<string | undefined> = [];
    const agents: Agent[] = [];
    await Promise.all(
      ["interactive", "batch"].flatMap((className) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 4 });
        agents.push(agent);
        return Array.from({ length: 4 }, async () => {
          while (performance.now() - startMs < runMs) {
            const answer = await ask(url, agent, className);
            if (answer.status === 200) admitted[className]!.push(answer.atMs - startMs);
            else retryAfters.push(answer.retryAfter);
          }
        });
      }),
    );
    for (const agent of agents) agent.destroy();
    // Counted from 1 s on (the first burst and start-up left out), to 100 ms before the end (answers in flight).
    const fromMs = 1000;
    const toMs = runMs - 100;
    const rateOf = (className: string) => admitted[className]!.filter((ms) => ms >= fromMs && ms < toMs).length / ((toMs - fromMs) / 1000);
    // The rule gives 60/s and 40/s; a busy machine shifts an answer's arrival by some ms at each end: 2 % and 5 %.
    expect(rateOf("interactive")).toBeGreaterThanOrEqual(60 * 0.98);
    expect(rateOf("interactive")).toBeLessThanOrEqual(60 * 1.02);
    expect(rateOf("batch")).toBeGreaterThanOrEqual(40 * 0.95);
    expect(rateOf("batch")).toBeLessThanOrEqual(40 * 1.05);
    // Never past the key's envelope: burst + rate × T.
    expect(admitted.interactive!.length + admitted.batch!.length).toBeLessThanOrEqual(10 + 100 * (runMs / 1000) + 2);
    // The first refusal is told the class's instant; each later one counts as one more client told to come back
    // (no stampede: spread by the class's guarantee), so clients that ignore Retry-After are told later and later.
    expect(retryAfters[0]).toBe("1");
    expect(retryAfters.every((retryAfter) => Number(retryAfter) >= 1)).toBe(true);
  }, 20_000);
});
