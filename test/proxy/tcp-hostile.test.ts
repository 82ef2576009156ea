import { randomBytes } from "node:crypto";
import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { startTcpProxy } from "../../src/proxy/tcp-proxy.js";
import { fixture, runCli, sleep, start, TBUCKET } from "../helpers/cli.js";
import { connectTo, echo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";

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
    const { port } = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "100mb", "--metrics", "127.0.0.1:0"]);
    const openFiles = Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${proxy.running.pid}/limits`, "utf8"))?.[1] ?? Infinity);
    const idle = start(process.execPath, [fixture("idle-clients.mjs"), String(proxy.port), "10000"], { stdin: "open", timeoutMs: 110_000 });
    try {
      await idle.waitForOutput(`"failed"`, 1, 100_000);
      expect(JSON.parse(idle.stdout().split("\n")[0]!)).toEqual({ open: 10_000, failed: 0 });
      const input = randomBytes(1024 * 1024 + 3);
      expect((await echoThrough(proxy.port, input)).equals(input)).toBe(true);
      expect((await echoThrough(proxy.port, Buffer.from("and another"))).toString()).toBe("and another");
      // The two descriptors a connection takes fit about 10,000 connections in `ulimit -n` 20,000: the oldest idle ones went.
      const warnings = proxy.running.stderr().split("\n").filter((line) => line.startsWith("tbucket: warning:"));
      if (openFiles < 2 * 10_000 + 64) {
        expect(warnings).toEqual([expect.stringMatching(/^tbucket: warning: \d+ connections open, as many as the open-file limit allows .*ulimit -n$/)]);
        expect(await metric(proxy.metricsPort!, "tbucket_proxy_idle_closed_total")).toBeGreaterThan(0);
      }
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
  it("a signal sent as soon as the listening line appears drains and exits 0, never the signal's default death (TCP and HTTP, 5 times each)", async () => {
    const { port } = await startBackend(echo);
    for (const to of [`127.0.0.1:${port}`, `http://127.0.0.1:${port}`]) {
      for (let i = 0; i < 5; i++) {
        const proxy = await startProxy(["--to", to, "--rate", to.startsWith("http") ? "5/s" : "1mb"]);
        proxy.running.signal("SIGTERM");
        const result = await proxy.running.exited;
        expect([result.signal, result.code], `${to}, round ${i}: ${proxy.running.stderr()}`).toEqual([null, 0]);
      }
    }
  });

  it("drains on SIGHUP (the terminal closed) as on SIGTERM, and exits 0", async () => {
    const { port } = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    proxy.running.signal("SIGHUP");
    const result = await proxy.running.exited;
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  });
});

describe("tbucket proxy (TCP): a backend name that does not resolve", () => {
  it("is refused at the start with one line and exit 2; a resolver that cannot answer now only warns", async () => {
    // Offline, the resolver may not say "no such name" (ENOTFOUND) but "try again" (EAI_AGAIN): then the proxy starts.
    const code = await lookup("no-such-host.invalid").then(
      () => "found",
      (error: NodeJS.ErrnoException) => error.code,
    );
    if (code === "ENOTFOUND") {
      const result = await runCli(["proxy", "--listen", "127.0.0.1:0", "--to", "no-such-host.invalid:5432", "--rate", "1mb"]);
      expect(result.stderr).toBe(`tbucket: --to no-such-host.invalid:5432: the host name "no-such-host.invalid" is not known (ENOTFOUND); check its spelling, or give an address, as in --to 127.0.0.1:5432\n`);
      expect(result.code).toBe(2);
    } else {
      const proxy = await startProxy(["--to", "no-such-host.invalid:5432", "--rate", "1mb"]);
      expect(proxy.running.stderr()).toMatch(/^tbucket: warning: --to no-such-host\.invalid:5432: cannot look "no-such-host\.invalid" up now \(.+\); starting anyway, each connection looks it up again\n/);
      expect((await stopProxy(proxy)).code).toBe(0);
    }
  });
});

describe("tbucket proxy (TCP): a listen address that is not this machine's", () => {
  it("exits 1 with one line (EADDRNOTAVAIL)", async () => {
    const result = await runCli(["proxy", "--listen", "192.0.2.1:0", "--to", "127.0.0.1:9", "--rate", "1mb"]);
    expect(result.stderr).toBe("tbucket: --listen 192.0.2.1:0: the host is not an address of this machine; listen on 127.0.0.1 or one of its addresses\n");
    expect(result.code).toBe(1);
  });
});

/** The value of a metric on the proxy's /metrics page. */
async function metric(port: number, name: string): Promise<number> {
  const page = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = page.split("\n").find((row) => row.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe("tbucket proxy (TCP): a flood of connections", () => {
  it("1,000 connects in about a second with --connections 10/s --max-wait 1s: the excess closed, metrics scraped meanwhile add up, nothing left open", async () => {
    const { port } = await startBackend((socket) => socket.end("hi"));
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--connections", "10/s", "--max-wait", "1s", "--metrics", "127.0.0.1:0"]);
    const startedMs = performance.now();
    let lastCloseMs = startedMs;
    const outcomes: Array<Promise<string>> = [];
    const scrapes: Array<Promise<number>> = [];
    for (let made = 0; made < 1000; made++) {
      outcomes.push(
        new Promise((resolve) => {
          const client = connect({ host: "127.0.0.1", port: proxy.port });
          let data = "";
          client.on("data", (chunk) => (data += chunk));
          client.on("error", () => {});
          client.on("close", () => {
            lastCloseMs = performance.now();
            resolve(data);
          });
          // Half of them go away on their own, some while held.
          if (made % 2 === 1) setTimeout(() => client.destroy(), (made % 7) * 70);
        }),
      );
      if (made % 100 === 99) {
        scrapes.push(metric(proxy.metricsPort!, "tbucket_proxy_open_connections"));
        await sleep(100);
      }
    }
    const answers = await Promise.all(outcomes);
    for (const open of await Promise.all(scrapes)) expect(open).toBeGreaterThanOrEqual(0);
    const served = answers.filter((answer) => answer === "hi").length;
    // Burst 10, then 10 a second for as long as the flood and the wait last (~2 s; longer on a loaded machine).
    expect(served).toBeGreaterThan(5);
    expect(served).toBeLessThanOrEqual(10 + Math.ceil((10 * (lastCloseMs - startedMs)) / 1000) + 5);
    let open = NaN;
    for (let attempt = 0; attempt < 50 && open !== 0; attempt++, await sleep(100)) open = await metric(proxy.metricsPort!, "tbucket_proxy_open_connections");
    expect(open).toBe(0);
    const admitted = await metric(proxy.metricsPort!, "tbucket_proxy_admitted_total");
    const refused = await metric(proxy.metricsPort!, "tbucket_proxy_refused_total");
    // Some leave while held: their turns go on to the next in line. Every connection the proxy took is
    // admitted, refused or cancelled, once. Those that stayed (the even ones) all reach it; of those that
    // left on their own, a loaded machine's full listen backlog may drop some before the proxy sees them.
    const cancelled = await metric(proxy.metricsPort!, "tbucket_proxy_cancelled_total");
    expect(admitted + refused + cancelled).toBeGreaterThanOrEqual(500);
    expect(admitted + refused + cancelled).toBeLessThanOrEqual(1000);
    expect(admitted).toBeGreaterThanOrEqual(served);
    // And the proxy still serves, once the rate allows.
    await sleep(300);
    const client = await connectTo(proxy.port);
    expect((await receiveAll(client)).data.toString()).toBe("hi");
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});

describe("tbucket proxy (TCP): hostile peers", () => {
  it("a backend that never reads holds the client back; the proxy buffers nothing much", async () => {
    const { port } = await startBackend((socket) => socket.pause());
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--up", "1gb"]);
    const client = await connectTo(proxy.port);
    client.on("error", () => {});
    let sent = 0;
    const block = Buffer.alloc(256 * 1024);
    const feed = () => {
      while (!client.destroyed && sent < 512 * 1024 * 1024 && client.write(block)) sent += block.length;
    };
    client.on("drain", feed);
    feed();
    await sleep(1500);
    const rssKib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.running.pid}/status`, "utf8"))?.[1]);
    client.destroy();
    expect(sent).toBeLessThan(64 * 1024 * 1024);
    expect(rssKib).toBeLessThan(150 * 1024);
  });

  it("a backend that accepts then resets: each client's connection is reset, and the proxy goes on", async () => {
    const { port } = await startBackend((socket) => socket.resetAndDestroy());
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    for (let attempt = 0; attempt < 20; attempt++) {
      const outcome = await connectTo(proxy.port).then(
        (client) => {
          client.write("x");
          return receiveAll(client);
        },
        (error: NodeJS.ErrnoException) => ({ data: Buffer.alloc(0), ended: false, error }),
      );
      expect(outcome.data.length).toBe(0);
      expect(outcome.ended).toBe(false);
    }
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
    const warnings = result.stderr.split("\n").filter((line) => line.startsWith("tbucket: warning:"));
    // Told at most once (the reset may also come after the connection was made: then nothing to tell).
    expect(warnings.length).toBeLessThanOrEqual(1);
    for (const warning of warnings) expect(warning).toMatch(/: cannot connect: the backend reset the connection as it was made \(ECONNRESET\); the client's connection was reset, and the proxy goes on$/);
  });

  it("a backend that ends first: the client sees the end and may still send, which the backend receives", async () => {
    let backendGot: Promise<string> | undefined;
    const { port } = await startBackend((socket) => {
      socket.end("server first");
      backendGot = new Promise((resolve) => {
        let text = "";
        socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
        socket.on("end", () => resolve(text));
      });
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    const client = await connectTo(proxy.port);
    let received = "";
    client.on("data", (chunk: Buffer) => (received += chunk.toString()));
    await new Promise((resolve) => client.once("end", resolve));
    client.end("client after");
    expect(received).toBe("server first");
    expect(await backendGot).toBe("client after");
    expect((await stopProxy(proxy)).code).toBe(0);
  });
});

describe("tbucket proxy (TCP): stopping while busy", () => {
  it("SIGTERM drains for --drain with transfers still running, and a SIGINT then closes them at once, exit 0", async () => {
    const block = Buffer.alloc(64 * 1024, 0x61);
    const { port } = await startBackend((socket) => {
      const feed = () => {
        while (!socket.destroyed && socket.write(block));
      };
      socket.on("drain", feed);
      feed();
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "100kb", "--drain", "20s"]);
    const clients = await Promise.all(Array.from({ length: 20 }, () => connectTo(proxy.port)));
    const closed = clients.map((client) => receiveAll(client));
    await sleep(300);
    proxy.running.signal("SIGTERM");
    await sleep(500);
    expect(proxy.running.done()).toBe(false);
    const secondMs = performance.now();
    proxy.running.signal("SIGINT");
    await Promise.all(closed);
    const result = await proxy.running.exited;
    expect(result.code).toBe(0);
    expect(performance.now() - secondMs).toBeLessThan(5000);
  });
});

describe("tbucket proxy (TCP): IPv6 loopback", () => {
  it("listens on [::1] and forwards to [::1]", async () => {
    const server = createServer((socket) => socket.end("over IPv6"));
    const listened = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(0, "::1", () => resolve(true));
    });
    // A machine without IPv6 on its loopback has nothing to test here.
    if (!listened) return;
    try {
      const running = start(TBUCKET, ["proxy", "--listen", "[::1]:0", "--to", `[::1]:${(server.address() as AddressInfo).port}`, "--rate", "1mb"]);
      let port = 0;
      for (let attempt = 0; attempt < 200 && !port; attempt++, await sleep(25)) port = Number(/listening on \[::1\]:(\d+)/.exec(running.stderr())?.[1] ?? 0);
      const client = connect({ host: "::1", port });
      let received = "";
      client.on("data", (chunk: Buffer) => (received += chunk.toString()));
      await new Promise((resolve) => client.on("close", resolve));
      expect(received).toBe("over IPv6");
      running.signal("SIGTERM");
      expect((await running.exited).code).toBe(0);
    } finally {
      server.close();
    }
  });
});

describe("startTcpProxy({ maxConnections })", () => {
  it("closes the connection idle the longest for a new one past the limit", async () => {
    const { port } = await startBackend(echo);
    const proxy = await startTcpProxy({ listen: { host: "127.0.0.1", port: 0 }, to: { host: "127.0.0.1", port }, per: "link", maxConnections: 2 });
    try {
      const first = await connectTo(proxy.address.port);
      const firstClosed = receiveAll(first);
      await sleep(50);
      const second = await connectTo(proxy.address.port);
      const secondReceived = receiveAll(second);
      second.write("still here");
      await sleep(50);
      // The first has been idle the longest: it goes for the third.
      const third = await connectTo(proxy.address.port);
      const thirdReceived = receiveAll(third);
      expect((await firstClosed).data.length).toBe(0);
      third.end("third");
      second.end();
      expect((await thirdReceived).data.toString()).toBe("third");
      expect((await secondReceived).data.toString()).toBe("still here");
      expect(proxy.stats).toMatchObject({ accepted: 3, evicted: 1 });
    } finally {
      await proxy.close(0);
    }
  });
});
