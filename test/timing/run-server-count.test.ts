import { describe, it } from "vitest";
import { runCli } from "../helpers/cli.js";

describe("run: the server's remaining count lowers the launch bucket", () => {
  it("told 2 requests remain, a burst of 10 launches 2 more at once and then only at the rate", async ({ expect }) => {
    const report = (remaining: string) => `printf 'HTTP/1.1 200 OK\\r\\nx-ratelimit-remaining-requests: ${remaining}\\r\\nx-ratelimit-reset-requests: 10s\\r\\n' > "$TBUCKET_REPORT"`;
    const timed = async (remaining: string) => {
      const beforeMs = Date.now();
      const result = await runCli(["run", "--rate", "10/s", "--burst", "10", "-j", "1", "--count", "10", "--", "sh", "-c", report(remaining)]);
      expect([result.code, result.stderr]).toEqual([0, ""]);
      return Date.now() - beforeMs;
    };
    // Plenty left: the burst of 10 goes at once (one job at a time, a few ms each). 2 left: 3 at once, then 7 at 10/s (0.7 s).
    const plentyMs = await timed("500");
    const lowMs = await timed("2");
    expect(lowMs).toBeGreaterThan(650);
    expect(lowMs - plentyMs).toBeGreaterThan(450);
  });
});
