import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { startHttpProxy } from "../../src/proxy/http-proxy.js";
import { listen } from "../http/http-helpers.js";

/** `curl -sf --retry 20 URL`: its exit status when it ends. */
function curl(url: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn("curl", ["-sf", "--retry", "20", "-o", "/dev/null", url], { stdio: "ignore" });
    child.once("close", (code) => resolve(code ?? 1));
  });
}

describe("no stampede: refused clients come back when there is room", () => {
  it("serves a batch of 30 curl --retry clients behind 5/s, burst 5, within the ideal time + 1.5 s and about one retry each", async () => {
    let requests = 0;
    const backend = await listen((_req, res) => res.end("ok\n"));
    const proxy = await startHttpProxy({
      listen: { host: "127.0.0.1", port: 0 },
      target: backend.url,
      rate: 5,
      burst: 5,
      per: { by: "all" },
      observer: { decision: () => requests++, bytes: () => {}, storeError: () => {} },
    });
    try {
      const startMs = performance.now();
      const codes = await Promise.all(Array.from({ length: 30 }, (_, i) => curl(`http://127.0.0.1:${proxy.address.port}/${i}`)));
      const seconds = (performance.now() - startMs) / 1000;
      expect(codes).toEqual(Array(30).fill(0));
      // Ideal: 5 at once, then 25 at 5 a second: 5 s. Told apart, each refused client comes back about once.
      expect(seconds).toBeLessThanOrEqual(5 + 1.5);
      expect(requests / 30).toBeLessThanOrEqual(2.2);
    } finally {
      await proxy.close(0);
    }
  }, 30_000);
});
