import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli, sleep } from "../helpers/cli.js";
import { connectTo, echo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";
import { freePort } from "../helpers/free-port.js";

describe("tbucket proxy (TCP): bytes", () => {
  it("passes bytes unchanged both ways, and ends with exit 0 on SIGTERM", async () => {
    const { port } = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "50mb"]);
    const input = randomBytes(3 * 1024 * 1024 + 17);
    const client = await connectTo(proxy.port);
    const receiving = receiveAll(client);
    client.end(input);
    const received = await receiving;
    expect(received.error).toBeUndefined();
    expect(received.ended).toBe(true);
    expect(received.data.equals(input)).toBe(true);
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
  });

  it("passes a half-close through: the backend sees the client's end and still answers", async () => {
    const { port } = await startBackend((socket) => {
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      // Answers only once the client has ended its side.
      socket.on("end", () => setTimeout(() => socket.end(`got ${Buffer.concat(chunks).length} bytes`), 100));
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "1mb"]);
    const client = await connectTo(proxy.port);
    const receiving = receiveAll(client);
    client.end("hello, half-closed");
    const received = await receiving;
    expect(received.data.toString()).toBe("got 18 bytes");
    expect(received.ended).toBe(true);
    expect(received.error).toBeUndefined();
  });

  it("resets the client's connection when the backend resets its own", async () => {
    const { port } = await startBackend((socket) => {
      socket.once("data", () => socket.resetAndDestroy());
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    const client = await connectTo(proxy.port);
    const receiving = receiveAll(client);
    client.write("boom");
    const received = await receiving;
    expect(received.error?.code).toBe("ECONNRESET");
    expect(received.ended).toBe(false);
  });

  it("resets the backend's connection when the client resets its own", async () => {
    let backendSaw: Promise<NodeJS.ErrnoException | undefined> | undefined;
    const { port } = await startBackend((socket) => {
      backendSaw = new Promise((resolve) => {
        let error: NodeJS.ErrnoException | undefined;
        socket.on("error", (failure) => (error = failure));
        socket.on("close", () => resolve(error));
      });
      socket.on("data", () => {});
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb"]);
    const client = await connectTo(proxy.port);
    client.write("hello");
    while (!backendSaw) await sleep(10);
    await sleep(100);
    client.resetAndDestroy();
    expect((await backendSaw)?.code).toBe("ECONNRESET");
  });

  it("closes a connection idle for --idle-timeout, and not one that keeps moving", async () => {
    const { port } = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--idle-timeout", "400ms"]);
    const idle = await connectTo(proxy.port);
    const idleStartedMs = performance.now();
    const idleClosed = receiveAll(idle);
    const busy = await connectTo(proxy.port);
    const busyReceived = receiveAll(busy);
    const ticker = setInterval(() => busy.write("x"), 100);
    await idleClosed;
    const idleMs = performance.now() - idleStartedMs;
    expect(idleMs).toBeGreaterThanOrEqual(350);
    expect(idleMs).toBeLessThan(5000);
    await sleep(300);
    expect(busy.destroyed).toBe(false);
    clearInterval(ticker);
    busy.end();
    expect((await busyReceived).data.length).toBeGreaterThan(0);
  });

  it("closes the client's connection when the backend is down, and stays up for the next", async () => {
    const deadPort = await freePort();
    const proxy = await startProxy(["--to", `127.0.0.1:${deadPort}`, "--rate", "1mb"]);
    for (let attempt = 0; attempt < 3; attempt++) {
      // The reset may come before the client saw its connection complete.
      const outcome = await connectTo(proxy.port).then(
        async (client) => receiveAll(client),
        (error: NodeJS.ErrnoException) => ({ data: Buffer.alloc(0), error }),
      );
      expect(outcome.data.length).toBe(0);
      expect(outcome.error?.code).toBe("ECONNRESET");
    }
    expect(proxy.running.done()).toBe(false);
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
    // Told once, not once a connection.
    const warnings = result.stderr.split("\n").filter((line) => line.startsWith("tbucket: warning:"));
    expect(warnings).toEqual([
      `tbucket: warning: --to 127.0.0.1:${deadPort}: cannot connect: nothing listens there (ECONNREFUSED); the client's connection was reset, and the proxy goes on`,
    ]);
  });
});

describe("tbucket proxy (TCP): backpressure", () => {
  it("holds back a client that sends as fast as it can, through TCP flow control, without buffering in the proxy", async () => {
    let received = 0;
    const { port } = await startBackend((socket) => socket.on("data", (chunk: Buffer) => (received += chunk.length)));
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--up", "100k"]);
    const client = await connectTo(proxy.port);
    client.on("error", () => {});
    const block = Buffer.alloc(256 * 1024, 0x61);
    let accepted = 0;
    const feed = () => {
      while (!client.destroyed && client.write(block)) accepted += block.length;
    };
    client.on("drain", feed);
    feed();
    await sleep(1500);
    const rssKib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.running.pid}/status`, "utf8"))?.[1]);
    client.destroy();
    // Unshaped, loopback takes gigabytes in that time; shaped, the kernel's socket buffers fill and writes wait.
    expect(accepted).toBeLessThan(64 * 1024 * 1024);
    expect(received).toBeLessThanOrEqual(100 * 1024 * 1.6 + 10 * 1024);
    expect(rssKib).toBeLessThan(150 * 1024);
  });
});

describe("tbucket proxy (TCP): a client that does not read", () => {
  it("holds the backend back instead of buffering what the client does not take", async () => {
    let offered = 0;
    const block = Buffer.alloc(256 * 1024, 0x62);
    const { port } = await startBackend((socket) => {
      const feed = () => {
        while (!socket.destroyed && socket.write(block)) offered += block.length;
      };
      socket.on("drain", feed);
      feed();
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "1gb"]);
    const client = await connectTo(proxy.port);
    client.pause();
    await sleep(1500);
    const rssKib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${proxy.running.pid}/status`, "utf8"))?.[1]);
    client.destroy();
    expect(offered).toBeLessThan(64 * 1024 * 1024);
    expect(rssKib).toBeLessThan(150 * 1024);
  });
});

describe("tbucket proxy (TCP): stopping", () => {
  it("on a second signal stops draining and closes what is left at once", async () => {
    const { port } = await startBackend(() => {});
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--drain", "30s"]);
    const client = await connectTo(proxy.port);
    const closed = receiveAll(client);
    await sleep(200);
    proxy.running.signal("SIGTERM");
    await sleep(300);
    expect(proxy.running.done()).toBe(false);
    const secondMs = performance.now();
    proxy.running.signal("SIGTERM");
    await closed;
    expect((await proxy.running.exited).code).toBe(0);
    expect(performance.now() - secondMs).toBeLessThan(5000);
  });

  it("--stats sums up connections and bytes at the end, as text or JSON", async () => {
    const { port } = await startBackend((socket) => {
      socket.on("data", () => {});
      socket.on("end", () => socket.end("hello"));
    });
    const text = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--stats"]);
    const client = await connectTo(text.port);
    const receiving = receiveAll(client);
    client.end("abc");
    await receiving;
    const textResult = await stopProxy(text);
    expect(textResult.stderr).toMatch(/\ntbucket proxy: 1 connection, up 3 B, down 5 B in .+\n$/);

    const json = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--stats-format", "json"]);
    const jsonResult = await stopProxy(json);
    const summary = JSON.parse(jsonResult.stderr.trim().split("\n").at(-1)!);
    expect(summary).toMatchObject({ mode: "tcp", connections: 0, refused: 0, bytesUp: 0, bytesDown: 0 });
    expect(jsonResult.code).toBe(0);
  });

  it("with --progress writes a line a second: connections and bytes each way", async () => {
    const { port } = await startBackend((socket) => socket.end("x".repeat(1000)));
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--progress", "-N", "db"]);
    await receiveAll(await connectTo(proxy.port));
    await sleep(1300);
    const result = await stopProxy(proxy);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/\ndb: 0 open, 1 accepted {2}up 0 B \(.+\) {2}down 1000 B \(.+\) {2}.+\n/);
  });

  it("on SIGTERM stops accepting, lets an open transfer finish, and exits 0", async () => {
    const payload = randomBytes(300 * 1024);
    const { port } = await startBackend((socket) => socket.end(payload));
    // 300 KiB at 200 KiB/s: about 1.5 s, well inside the drain.
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--down", "200k", "--drain", "20s"]);
    const client = await connectTo(proxy.port);
    const receiving = receiveAll(client);
    await sleep(300);
    proxy.running.signal("SIGTERM");
    await sleep(200);
    await expect(connectTo(proxy.port)).rejects.toMatchObject({ code: "ECONNREFUSED" });
    const received = await receiving;
    expect(received.data.equals(payload)).toBe(true);
    const result = await proxy.running.exited;
    expect(result.code).toBe(0);
  });

  it("closes what is still open when --drain runs out", async () => {
    const { port } = await startBackend(() => {});
    const proxy = await startProxy(["--to", `127.0.0.1:${port}`, "--rate", "1mb", "--drain", "300ms"]);
    const client = await connectTo(proxy.port);
    const closed = receiveAll(client);
    await sleep(200);
    const signalledMs = performance.now();
    proxy.running.signal("SIGINT");
    await closed;
    const result = await proxy.running.exited;
    expect(result.code).toBe(0);
    expect(performance.now() - signalledMs).toBeGreaterThanOrEqual(250);
    expect(performance.now() - signalledMs).toBeLessThan(5000);
  });
});

describe("tbucket proxy (TCP): a transfer cut at the end of --drain", () => {
  // Regression (issue 19): it ended with a clean FIN, so the client took a truncated transfer for a whole one.
  it("is reset both ways, and the summary says so", async () => {
    const backendErrors: string[] = [];
    // Half a transfer, then nothing more: still open when the drain time runs out.
    const backend = await startBackend((socket) => {
      socket.on("error", (error: NodeJS.ErrnoException) => backendErrors.push(error.code ?? ""));
      socket.on("data", () => {});
      socket.write("first half");
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "1mb", "--drain", "300ms", "--stats"]);
    const client = await connectTo(proxy.port);
    const receiving = receiveAll(client);
    // Read it all before the reset: a reset that finds unread data is reported as an end by libuv.
    await new Promise((resolve) => client.once("data", resolve));
    proxy.running.signal("SIGTERM");
    const received = await receiving;
    expect(received.data.toString()).toBe("first half");
    expect(received.ended).toBe(false);
    expect(received.error?.code).toBe("ECONNRESET");
    const result = await proxy.running.exited;
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/\ntbucket proxy: 1 connection \(1 reset at the end of --drain\), up 0 B, down 10 B in .+\n$/);
    for (let wait = 0; wait < 20 && backendErrors.length === 0; wait++) await sleep(50);
    expect(backendErrors).toEqual(["ECONNRESET"]);
  });
});

describe("tbucket proxy (TCP): --connections", () => {
  // Regression (issue 19): a client that gave up while held kept its turn, and still got a backend connection.
  it("a client that leaves while held gives its turn up at once and never reaches the backend", async () => {
    const backend = await startBackend((socket) => {
      socket.write("hi:");
      echo(socket);
    });
    // One connection every 2 s: the first at once, the next held 2 s, the one after 4 s.
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--connections", "1/2s", "--max-wait", "10s", "--stats-format", "json"]);
    const startedMs = performance.now();
    const first = await connectTo(proxy.port);
    const firstReceived = receiveAll(first);
    first.end();
    expect((await firstReceived).data.toString()).toBe("hi:");
    const leaving = await connectTo(proxy.port);
    const staying = await connectTo(proxy.port);
    // What a held client sends is kept, and forwarded once it is let through.
    staying.write("held");
    await sleep(200);
    leaving.destroy();
    const received = await new Promise<{ text: string; atMs: number }>((resolve) => {
      let text = "";
      staying.on("data", (chunk: Buffer) => {
        text += chunk.toString();
        if (text.length >= "hi:held".length) resolve({ text, atMs: performance.now() });
      });
    });
    expect(received.text).toBe("hi:held");
    // The leaver's turn, about 2 s after the first: not the 4 s of the turn behind it.
    expect(received.atMs - startedMs).toBeGreaterThanOrEqual(1500);
    expect(received.atMs - startedMs).toBeLessThan(3500);
    staying.end();
    await sleep(300);
    // The backend saw the first and the one that stayed: the leaver never got a connection.
    expect(backend.sockets).toHaveLength(2);
    const result = await stopProxy(proxy);
    expect(JSON.parse(result.stderr.trim().split("\n").at(-1)!)).toMatchObject({ connections: 2, refused: 0 });
  });

  // Regression: the last in line took a leaver's turn, so the client right behind it waited as long as before, overtaken.
  it("a client that leaves while held moves the ones behind it up a turn each, first come first served", async () => {
    const backend = await startBackend((socket) => socket.end("hi"));
    // One connection a second: the first at once, then turns at 1 s, 2 s and 3 s.
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--connections", "1/s", "--max-wait", "10s"]);
    const startedMs = performance.now();
    expect((await receiveAll(await connectTo(proxy.port))).data.toString()).toBe("hi");
    const held = [];
    for (let i = 0; i < 3; i++) {
      held.push(await connectTo(proxy.port));
      // Accepted in this order by the proxy, so the turns are theirs in this order.
      await sleep(50);
    }
    const [leaving, next, last] = held;
    const arrival = (socket: typeof next) => receiveAll(socket!).then((received) => ({ text: received.data.toString(), atMs: received.arrivals[0]?.atMs ?? Infinity }));
    const nextIn = arrival(next);
    const lastIn = arrival(last);
    leaving!.destroy();
    const [nextReceived, lastReceived] = await Promise.all([nextIn, lastIn]);
    expect([nextReceived.text, lastReceived.text]).toEqual(["hi", "hi"]);
    // The next takes the leaver's turn at 1 s (not its own at 2 s), the last the next's at 2 s.
    expect(nextReceived.atMs - startedMs).toBeGreaterThanOrEqual(800);
    expect(nextReceived.atMs - startedMs).toBeLessThan(1700);
    expect(lastReceived.atMs - startedMs).toBeGreaterThanOrEqual(1800);
    expect(lastReceived.atMs - startedMs).toBeLessThan(2700);
    expect(backend.sockets).toHaveLength(3);
    await stopProxy(proxy);
  });

  it("closes connections over the rate at once, and holds them up to --max-wait", async () => {
    const { port } = await startBackend((socket) => socket.end("hi"));
    const dropping = await startProxy(["--to", `127.0.0.1:${port}`, "--connections", "1/10s"]);
    const results = await Promise.all([0, 1, 2].map(async () => receiveAll(await connectTo(dropping.port))));
    expect(results.filter((received) => received.data.toString() === "hi")).toHaveLength(1);

    const holding = await startProxy(["--to", `127.0.0.1:${port}`, "--connections", "4/s", "--max-wait", "3s"]);
    const startedMs = performance.now();
    const held = await Promise.all([0, 1, 2].map(async () => receiveAll(await connectTo(holding.port))));
    expect(held.map((received) => received.data.toString())).toEqual(["hi", "hi", "hi"]);
    // The third waits two intervals of 250 ms.
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(450);
  });
});

describe("tbucket proxy: failures to start", () => {
  it("exits 1 with one line when the port is in use", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const { port } = taken.address() as { port: number };
    try {
      const result = await runCli(["proxy", "--listen", `127.0.0.1:${port}`, "--to", "127.0.0.1:9", "--rate", "1mb"]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`tbucket: --listen 127.0.0.1:${port}: the address is in use; stop what listens there, or choose another port\n`);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  it("exits 1 with one line when --metrics cannot listen, having closed the proxy", async () => {
    const port = await freePort();
    const result = await runCli(["proxy", "--listen", `127.0.0.1:${port}`, "--to", "127.0.0.1:9", "--rate", "1mb", "--metrics", `127.0.0.1:${port}`]);
    expect(result.stderr).toBe(`tbucket: --metrics 127.0.0.1:${port}: the address is in use; stop what listens there, or choose another port\n`);
    expect(result.code).toBe(1);
  });

  it.each([
    [["--listen", "0", "--to", "nowhere", "--rate", "1mb"], `tbucket: --to: "nowhere" has no host; try "--to 127.0.0.1:5432" (TCP) or "--to http://127.0.0.1:3000" (HTTP)\n`],
    [["--listen", "0", "--to", "https://127.0.0.1:443", "--rate", "5/s"], `tbucket: --to: "https://127.0.0.1:443": tbucket proxy speaks plain http:// to its backend, not https://; try "--to 127.0.0.1:5432" (TCP) or "--to http://127.0.0.1:3000" (HTTP)\n`],
    [["--listen", "99999", "--to", "127.0.0.1:9", "--rate", "1mb"], `tbucket: --listen: "99999": "99999" is not a port (0 to 65535); try "--listen 8080" or "--listen 127.0.0.1:8080"\n`],
    [["--listen", "0", "--to", "http://127.0.0.1:3000", "--rate", "5/s", "--down", "1mb"], `tbucket: --down: is for TCP mode, and --to http://127.0.0.1:3000 is HTTP (HOST:PORT selects TCP); drop --down or change --to\n`],
    [["--listen", "0", "--to", "127.0.0.1:9", "--rate", "1mb", "--policy", "queue"], `tbucket: --policy: is for HTTP mode, and --to 127.0.0.1:9 is TCP (http://HOST:PORT selects HTTP); drop --policy or change --to\n`],
    [["--listen", "0", "--to", "127.0.0.1:9"], `tbucket: no limit given: add --rate (both ways), --up or --down, --window, --concurrency or --connections; try "tbucket proxy --listen 5433 --to 127.0.0.1:5432 --down 2mb"\n`],
    [["--listen", "0", "--to", "127.0.0.1:9", "--rate", "fast"], `tbucket: --rate: "fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"\n`],
    [["--listen", "0", "--to", "127.0.0.1:9", "--rate", "1mb", "--idle-timeout", "0"], `tbucket: --idle-timeout: "0" must be more than zero; try "30s" or "5m", or leave it out for no timeout\n`],
    [["--listen", "8080", "--to", "localhost:8080", "--rate", "1mb"], `tbucket: --to localhost:8080: is where the proxy listens (--listen 127.0.0.1:8080), so it would connect to itself; give the backend's address\n`],
    [["--listen", "0", "--to", "127.0.0.1:9", "--rate", "1mb", "--per", "ip"], `tbucket: --per: "ip" is not a TCP scope; try "--per link" (one bucket for all, the default), "--per connection" or "--per client"\n`],
  ])("exits 2 with one line for bad options: %j", async (args, message) => {
    const result = await runCli(["proxy", ...args]);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });
});
