import { join } from "node:path";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli, sleep } from "../helpers/cli.js";
import { connectTo, echo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-tcp-sets");

/** Sends `text` and resolves to what comes back as soon as it has all come (an echo backend). */
function roundTrip(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = "";
    const onData = (chunk: Buffer) => {
      got += chunk.toString();
      if (got.length >= text.length) {
        socket.off("data", onData);
        resolve(got);
      }
    };
    socket.on("data", onData);
    socket.on("error", () => {});
    // A FIN from the proxy (a refused connection): end ours too, as the test's sockets allow half-open ones.
    socket.on("end", () => socket.end());
    socket.once("close", () => reject(new Error(`closed having received "${got}"`)));
    socket.write(text);
  });
}

/** Resolves when the socket closes: whether it got a byte first. */
function closed(socket: Socket): Promise<{ bytes: number }> {
  let bytes = 0;
  socket.on("data", (chunk: Buffer) => (bytes += chunk.length));
  socket.on("error", () => {});
  // The proxy's FIN: end ours too (the test's sockets allow half-open ones).
  socket.on("end", () => socket.end());
  return new Promise((resolve) => socket.once("close", () => resolve({ bytes })));
}

describe("tbucket proxy (TCP): limit sets and --concurrency, the built binary on real sockets", () => {
  it.each([
    [["--rate", "1mb", "--concurrency", "2", "--per", "connection"], `tbucket: --concurrency: counts the connections open at once per --per scope, and --per connection is one connection each; use --per link (all) or --per client\n`],
    [["--rate", "1mb", "--burst", "1k", "--burst", "2k"], `tbucket: --burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst\n`],
    [["--down", "1mb", "--burst", "1k", "--burst", "2k"], `tbucket: --burst: given 2 times, and without --rate one --burst sizes --up and --down both; give it once, or add a --rate for each\n`],
    [["--rate", "1mb", "--max-wait", "1s"], `tbucket: --max-wait: holds connections over --connections or --concurrency, and neither is given; add e.g. "--concurrency 20 --max-wait 2s" or "--connections 10/s --max-wait 2s"\n`],
    [["--concurrency", "2", "--concurrency", "3"], `tbucket: --concurrency: given 2 times; give it once, e.g. "--concurrency 4"\n`],
    [["--burst", "1k"], `tbucket: --burst: sizes the byte buckets, and no byte rate is given; add --rate, --up or --down (e.g. "--down 1mb --burst 256k")\n`],
  ])("exits 2 with one line for %j", async (args, message) => {
    const result = await runCli(["proxy", "--listen", "0", "--to", "127.0.0.1:9", ...args]);
    expect(result.stderr).toBe(message);
    expect(result.code).toBe(2);
  });

  it("says every limit each way, in command-line order, and the connections at once", async () => {
    const backend = await startBackend(echo);
    const proxy = await startProxy([
      "--to", `127.0.0.1:${backend.port}`,
      "--rate", "1mb", "--burst", "64k", "--window", "1gb/d", "--rate", "256k", "--burst", "256k", "--down", "4mb",
      "--concurrency", "20", "--per", "client", "--max-wait", "2s",
    ]);
    expect(proxy.running.stderr()).toContain(
      "(TCP, up 1.00 MiB/s (1048576 B/s), burst 64.00 KiB (65536 B) and at most 1.00 GiB (1073741824 B) in any 24h00m00s and 256.00 KiB/s (262144 B/s), burst 256.00 KiB (262144 B), " +
        "down 4.00 MiB/s (4194304 B/s), burst 64.00 KiB (65536 B) and at most 1.00 GiB (1073741824 B) in any 24h00m00s and 256.00 KiB/s (262144 B/s), burst 256.00 KiB (262144 B), " +
        "at most 20 connections at once (each client), waiting up to 2.0 s, per client)",
    );
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it("--stats with a set each way: each limit's waits and the ones that bound (limitedBy), as pipe and run give them", async () => {
    const payload = Buffer.alloc(48 * 1024, 0x61);
    const backend = await startBackend((socket) => socket.end(payload));
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--rate", "10mb", "--burst", "16k", "--rate", "64k", "--burst", "16k", "--stats-format", "json"]);
    expect((await receiveAll(await connectTo(proxy.port))).data.length).toBe(payload.length);
    const exit = await stopProxy(proxy);
    const stats = JSON.parse(exit.stderr.trim().split("\n").at(-1)!) as {
      bytesDown: number;
      limits: { up: Array<{ limit: number; rate: number; waitedSeconds: number }>; down: Array<{ limit: number; rate: number; waitedSeconds: number }> };
      limitedBy: { up: number[]; down: number[] };
    };
    expect(stats.bytesDown).toBe(payload.length);
    expect(stats.limits.down.map(({ limit, rate }) => [limit, rate])).toEqual([
      [1, 10 * 1024 * 1024],
      [2, 64 * 1024],
    ]);
    // 32 KiB past the bursts at 64 KiB/s: the second limit waited (up to half a second; less when a slow
    // reader's backpressure let it refill meanwhile), the first never needed to.
    expect(stats.limits.down[1]!.waitedSeconds).toBeGreaterThan(0);
    expect(stats.limits.down[1]!.waitedSeconds).toBeGreaterThan(stats.limits.down[0]!.waitedSeconds);
    expect(stats.limitedBy.down[0]).toBe(2);
    expect(stats.limitedBy.up).toEqual([]);
  });

  it("--concurrency 2 without --max-wait: a third client is closed at once and counted as refused; once one leaves, a new one gets in", async () => {
    const backend = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--concurrency", "2", "--stats-format", "json"]);
    const first = await connectTo(proxy.port);
    const second = await connectTo(proxy.port);
    expect(await roundTrip(first, "one")).toBe("one");
    expect(await roundTrip(second, "two")).toBe("two");
    const third = await connectTo(proxy.port);
    expect(await closed(third)).toEqual({ bytes: 0 });
    first.destroy();
    // The slot comes back when the proxy sees the first connection close.
    let fourth: Socket | undefined;
    for (let attempt = 0; attempt < 50 && !fourth; attempt++) {
      const socket = await connectTo(proxy.port);
      const answer = await roundTrip(socket, "four").catch(() => undefined);
      if (answer === "four") fourth = socket;
      else await sleep(20);
    }
    expect(fourth).toBeDefined();
    second.destroy();
    fourth!.destroy();
    const exit = await stopProxy(proxy);
    expect(exit.code).toBe(0);
    const stats = JSON.parse(exit.stderr.trim().split("\n").at(-1)!) as { connections: number; refused: number; refusedBy: { concurrency: number } };
    expect(stats.connections).toBe(3);
    expect(stats.refused).toBeGreaterThanOrEqual(1);
    expect(stats.refusedBy.concurrency).toBe(stats.refused);
  });

  it("--concurrency 2 --max-wait 10s: a third client waits, its bytes held, until one of the two closes; then it is served", async () => {
    const backend = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--concurrency", "2", "--max-wait", "10s"]);
    const first = await connectTo(proxy.port);
    const second = await connectTo(proxy.port);
    expect(await roundTrip(first, "one")).toBe("one");
    expect(await roundTrip(second, "two")).toBe("two");
    const third = await connectTo(proxy.port);
    let answered = false;
    const answer = roundTrip(third, "three").then((text) => {
      answered = true;
      return text;
    });
    await sleep(500);
    expect(answered).toBe(false);
    expect(backend.sockets).toHaveLength(2);
    const closedAtMs = performance.now();
    second.end();
    expect(await answer).toBe("three");
    expect(performance.now() - closedAtMs).toBeLessThan(5000);
    expect(backend.sockets).toHaveLength(3);
    first.destroy();
    third.destroy();
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it("--max-wait: a waiting client that is not served in time is closed, having reached no backend", async () => {
    const backend = await startBackend(echo);
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--concurrency", "1", "--max-wait", "300ms"]);
    const first = await connectTo(proxy.port);
    expect(await roundTrip(first, "one")).toBe("one");
    const startedMs = performance.now();
    const late = await connectTo(proxy.port);
    expect(await closed(late)).toEqual({ bytes: 0 });
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(250);
    expect(backend.sockets).toHaveLength(1);
    first.destroy();
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it("--key keeps each way's set on NAME:up and NAME:down, and the slots on NAME:connections, in the store", async () => {
    const backend = await startBackend((socket) => socket.end("hello"));
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    const proxy = await startProxy(
      ["--to", `127.0.0.1:${backend.port}`, "--rate", "1mb", "--burst", "64k", "--rate", "256k", "--burst", "256k", "--window", "1gb/d", "--concurrency", "3", "--key", "db", "--store", store],
      { env },
    );
    expect((await receiveAll(await connectTo(proxy.port))).data.toString()).toBe("hello");
    expect((await stopProxy(proxy)).code).toBe(0);
    const shown = await runCli(["key", "show", "db:down", "--store", store, "--json"], { env });
    const down = JSON.parse(shown.stdout.toString()) as { limits: Array<{ kind: string; rate?: number; burst?: number; n?: number }> };
    expect(down.limits.map(({ kind, rate, burst, n }) => ({ kind, rate, burst, n }))).toEqual([
      { kind: "bucket", rate: 1024 * 1024, burst: 64 * 1024, n: undefined },
      { kind: "bucket", rate: 256 * 1024, burst: 256 * 1024, n: undefined },
      { kind: "window", rate: undefined, burst: undefined, n: 1024 ** 3 },
    ]);
    const slots = JSON.parse((await runCli(["key", "show", "db:connections", "--store", store, "--json"], { env })).stdout.toString()) as { limits: Array<{ kind: string; n: number; level: number }> };
    expect(slots.limits).toMatchObject([{ kind: "concurrency", n: 3, level: 3 }]);
  });

  it("--per client --concurrency 1 --key: each client address has its slot, NAME:connections:<address> in the store", async () => {
    const backend = await startBackend(echo);
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--concurrency", "1", "--per", "client", "--key", "pc", "--store", store], { env });
    const two = await connectTo(proxy.port, "127.0.0.2");
    const three = await connectTo(proxy.port, "127.0.0.3");
    expect(await roundTrip(two, "2")).toBe("2");
    expect(await roundTrip(three, "3")).toBe("3");
    expect(await closed(await connectTo(proxy.port, "127.0.0.2"))).toEqual({ bytes: 0 });
    const shown = JSON.parse((await runCli(["key", "show", "pc:connections:127.0.0.2", "--store", store, "--json"], { env })).stdout.toString()) as { limits: unknown[] };
    expect(shown.limits).toMatchObject([{ kind: "concurrency", n: 1, level: 0 }]);
    two.destroy();
    three.destroy();
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it.each(["sqlite", "redis"])("--key --concurrency 1 on %s: two proxies share the slot; the second's client is closed while the first's is open", async (kind) => {
    const backend = await startBackend(echo);
    const dir = tempDir();
    const redis = kind === "redis" ? await startRedisServer() : undefined;
    const store = redis?.url ?? `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    try {
      const args = ["--to", `127.0.0.1:${backend.port}`, "--concurrency", "1", "--key", "one", "--store", store];
      const a = await startProxy(args, { env });
      const b = await startProxy(args, { env });
      const holder = await connectTo(a.port);
      expect(await roundTrip(holder, "a")).toBe("a");
      expect(await closed(await connectTo(b.port))).toEqual({ bytes: 0 });
      holder.destroy();
      let served = false;
      for (let attempt = 0; attempt < 50 && !served; attempt++) {
        const socket = await connectTo(b.port);
        served = (await roundTrip(socket, "b").catch(() => undefined)) === "b";
        socket.destroy();
        if (!served) await sleep(20);
      }
      expect(served).toBe(true);
      expect((await stopProxy(a)).code).toBe(0);
      expect((await stopProxy(b)).code).toBe(0);
    } finally {
      await redis?.stop();
    }
  });
});
