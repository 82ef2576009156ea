import { describe, expect, it } from "vitest";
import { connectTo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";

/** One metric's value in Prometheus's text format. */
function metric(text: string, name: string): number {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} in:\n${text}`);
  return Number(line.slice(name.length + 1));
}

describe("tbucket proxy --metrics", () => {
  it("serves what the TCP proxy admitted, refused and shaped at /metrics", async () => {
    const backend = await startBackend((socket) => {
      socket.on("data", () => {});
      socket.on("end", () => socket.end(Buffer.alloc(5000, 0x61)));
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--rate", "1mb", "--per", "client", "--connections", "1/10s", "--metrics", "127.0.0.1:0"]);
    expect(proxy.metricsPort).toBeGreaterThan(0);
    const admitted = await connectTo(proxy.port);
    const receiving = receiveAll(admitted);
    admitted.end("x".repeat(300));
    expect((await receiving).data.length).toBe(5000);
    await receiveAll(await connectTo(proxy.port));

    const response = await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(metric(text, "tbucket_proxy_admitted_total")).toBe(1);
    expect(metric(text, "tbucket_proxy_refused_total")).toBe(1);
    expect(metric(text, 'tbucket_proxy_bytes_total{direction="up"}')).toBe(300);
    expect(metric(text, 'tbucket_proxy_bytes_total{direction="down"}')).toBe(5000);
    expect(metric(text, "tbucket_proxy_wait_seconds_count")).toBe(1);
    expect(metric(text, "tbucket_proxy_store_errors_total")).toBe(0);
    expect(text).toContain("tbucket_proxy_live_keys ");
    expect(text).toContain("tbucket_proxy_queued_total 0");

    const elsewhere = await fetch(`http://127.0.0.1:${proxy.metricsPort}/`);
    expect(elsewhere.status).toBe(404);
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});
