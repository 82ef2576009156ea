import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runCli, TBUCKET } from "../helpers/cli.js";

describe("tbucket pipe: timing from outside", () => {
  it("what a reader receives stays inside burst + rate × t, and the rate is met", async () => {
    const rate = 256 * 1024;
    const burst = 16 * 1024;
    const input = randomBytes(512 * 1024);
    const child = spawn(process.execPath, [TBUCKET, "--rate", "256k", "--burst", "16k"]);
    const arrivals: Array<{ atMs: number; total: number }> = [];
    let total = 0;
    let firstMs: number | undefined;
    const received: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => {
      const now = performance.now();
      firstMs ??= now;
      total += chunk.length;
      received.push(chunk);
      arrivals.push({ atMs: now - firstMs, total });
    });
    child.stdin.end(input);
    const code = await new Promise((resolve) => child.on("close", resolve));
    expect(code).toBe(0);
    expect(Buffer.concat(received).equals(input)).toBe(true);
    // Timers and the scheduler may bunch deliveries a little: allow 30 ms of the rate.
    const toleranceBytes = rate * 0.03;
    for (const { atMs, total: bytes } of arrivals) {
      expect(bytes).toBeLessThanOrEqual(burst + (rate * atMs) / 1000 + toleranceBytes);
    }
    const elapsedMs = arrivals.at(-1)!.atMs;
    const idealMs = ((input.length - burst) / rate) * 1000;
    expect(elapsedMs).toBeGreaterThanOrEqual(idealMs - 30);
    expect(elapsedMs).toBeLessThanOrEqual(idealMs * 1.25 + 200);
  });

  it("--lines --rate 20/s sends 20 lines a second, each line whole", async () => {
    const input = Array.from({ length: 21 }, (_, i) => `line ${i}\n`).join("");
    const started = performance.now();
    const result = await runCli(["--lines", "--rate", "20/s", "--stats-format", "json"], { input });
    const elapsedMs = performance.now() - started;
    expect(result.stdout.toString()).toBe(input);
    const stats = JSON.parse(result.stderr);
    expect(stats).toMatchObject({ bytes: input.length, lines: 21, rate: 20, rateUnit: "lines/s", burst: 1 });
    // 20 lines after the first take a second.
    expect(elapsedMs).toBeGreaterThanOrEqual(980);
    expect(stats.seconds).toBeGreaterThanOrEqual(0.98);
  });
});
