import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { fixture, runCli, start } from "../helpers/cli.js";
import { type Backend, connectTo, echo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";

const backends: Backend[] = [];
afterEach(async () => {
  await Promise.all(backends.splice(0).map((backend) => backend.close()));
});

async function backend(handle: Parameters<typeof startBackend>[0]): Promise<Backend> {
  const started = await startBackend(handle);
  backends.push(started);
  return started;
}

/** Sends `input` through the proxy to an echo backend and returns what came back. */
async function echoThrough(port: number, input: Buffer): Promise<Buffer> {
  const client = await connectTo(port);
  const receiving = receiveAll(client);
  client.end(input);
  const received = await receiving;
  expect(received.error).toBeUndefined();
  return received.data;
}

describe("tbucket proxy (TCP): idle clients by the thousand", () => {
  it("10,000 idle connections from another process do not lock out a new transfer: the one idle longest makes room", { timeout: 120_000 }, async () => {
    const { port } = await backend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "100mb"]);
    const idle = start(process.execPath, [fixture("idle-clients.mjs"), String(proxy.port), "10000"], { stdin: "open", timeoutMs: 110_000 });
    try {
      await idle.waitForOutput(`"failed"`, 1, 100_000);
      expect(JSON.parse(idle.stdout().split("\n")[0]!)).toEqual({ open: 10_000, failed: 0 });
      const input = randomBytes(1024 * 1024 + 3);
      expect((await echoThrough(proxy.port, input)).equals(input)).toBe(true);
      expect((await echoThrough(proxy.port, Buffer.from("and another"))).toString()).toBe("and another");
      // The two descriptors a connection takes fit about 10,000 connections in `ulimit -n` 20,000: the oldest idle ones went.
      const warnings = proxy.running.stderr().split("\n").filter((line) => line.startsWith("tbucket: warning:"));
      if (warnings.length > 0) expect(warnings).toEqual([expect.stringMatching(/^tbucket: warning: \d+ connections open, as many as the open-file limit allows .*ulimit -n$/)]);
      expect(proxy.running.done()).toBe(false);
    } finally {
      idle.child.stdin?.end();
      await idle.exited;
    }
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
  });
});

describe("tbucket proxy (TCP): signals", () => {
  it("drains on SIGHUP (the terminal closed) as on SIGTERM, and exits 0", async () => {
    const { port } = await backend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    proxy.running.signal("SIGHUP");
    const result = await proxy.running.exited;
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  });
});

describe("tbucket proxy (TCP): a backend name that does not resolve", () => {
  it("is refused at the start with one line and exit 2", async () => {
    const result = await runCli(["proxy", "--listen", "127.0.0.1:0", "--to", "no-such-host.invalid:5432", "--rate", "1mb"]);
    expect(result.stderr).toBe(`tbucket: --to no-such-host.invalid:5432: the host name "no-such-host.invalid" is not known (ENOTFOUND); check its spelling, or give an address, as in --to 127.0.0.1:5432\n`);
    expect(result.code).toBe(2);
  });
});

describe("tbucket proxy (TCP): a listen address that is not this machine's", () => {
  it("exits 1 with one line (EADDRNOTAVAIL)", async () => {
    const result = await runCli(["proxy", "--listen", "192.0.2.1:0", "--to", "127.0.0.1:9", "--rate", "1mb"]);
    expect(result.stderr).toBe("tbucket: --listen 192.0.2.1:0: the host is not an address of this machine; listen on 127.0.0.1 or one of its addresses\n");
    expect(result.code).toBe(1);
  });
});

