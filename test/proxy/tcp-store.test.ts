import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite-store.js";
import { runCli, sleep } from "../helpers/cli.js";
import { connectTo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";
import { startRedisServer } from "../helpers/redis-server.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { freePort } from "../helpers/free-port.js";

const tempDir = tempDirs("proxy-store");

describe("tbucket proxy (TCP) --key", () => {
  it("keeps the link's buckets in the store as NAME:up and NAME:down", async () => {
    const payload = randomBytes(200 * 1024);
    const backend = await startBackend((socket) => socket.end(payload));
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "4mb", "--up", "1mb", "--key", "link", "--store", store], { env });
    const received = await receiveAll(await connectTo(proxy.port));
    expect(received.data.equals(payload)).toBe(true);
    expect((await stopProxy(proxy)).code).toBe(0);
    const list = await runCli(["key", "list", "--store", store, "--json"], { env });
    const keys = (JSON.parse(list.stdout.toString()) as Array<{ key: string; rate: number }>).map((state) => [state.key, state.rate]);
    expect(keys).toEqual([
      ["link:down", 4 * 1024 * 1024],
      ["link:up", 1024 * 1024],
    ]);
  });

  it("--per client keeps each client's buckets as NAME:down:<address>, and keeps a rate set with tbucket key set", async () => {
    const backend = await startBackend((socket) => socket.end("hello"));
    const dir = tempDir();
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const env = { XDG_STATE_HOME: dir };
    expect((await runCli(["key", "set", "per:down:127.0.0.3", "--rate", "2mb", "--store", store], { env })).code).toBe(0);
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "1mb", "--per", "client", "--key", "per", "--store", store], { env });
    expect((await receiveAll(await connectTo(proxy.port, "127.0.0.2"))).data.toString()).toBe("hello");
    expect((await receiveAll(await connectTo(proxy.port, "127.0.0.3"))).data.toString()).toBe("hello");
    expect((await stopProxy(proxy)).code).toBe(0);
    const list = await runCli(["key", "list", "--store", store, "--json"], { env });
    const keys = (JSON.parse(list.stdout.toString()) as Array<{ key: string; rate: number }>).map((state) => [state.key, state.rate]);
    expect(keys).toEqual([
      ["per:down:127.0.0.2", 1024 * 1024],
      ["per:down:127.0.0.3", 2 * 1024 * 1024],
    ]);
    // The key the proxy made may be forgotten once full again; the one a user set never is.
    const opened = await SqliteStore.open(join(dir, "buckets.db"));
    expect((await opened.list()).map((state) => [state.key, state.expiresWhenFull])).toEqual([
      ["per:down:127.0.0.2", true],
      ["per:down:127.0.0.3", undefined],
    ]);
    await opened.close();
  });

  it("exits 1 with one line when the store cannot be reached, and with --on-store-error local serves with private buckets", async () => {
    const store = `redis://127.0.0.1:${await freePort()}`;
    const backend = await startBackend((socket) => socket.end("hello"));
    const failing = await runCli(["proxy", "--listen", "127.0.0.1:0", "--to", `127.0.0.1:${backend.port}`, "--down", "1mb", "--key", "link", "--store", store]);
    expect(failing.code).toBe(1);
    expect(failing.stderr.split("\n")).toHaveLength(2);
    expect(failing.stderr).toMatch(/^tbucket: .*redis:\/\/127\.0\.0\.1:\d+.*--on-store-error local\n$/);

    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "1mb", "--key", "link", "--store", store, "--on-store-error", "local"]);
    expect(proxy.running.stderr()).toMatch(/^tbucket: warning: .*going on with private buckets\n/);
    expect((await receiveAll(await connectTo(proxy.port))).data.toString()).toBe("hello");
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  // A lost store stopped the proxy (exit 1), and nothing brought it back.
  it.each([
    ["one bucket a way", ["--down", "1mb"]],
    ["a set each way", ["--rate", "1mb", "--window", "10mb/1s"]],
  ])("when the store is lost mid-run the proxy stays up (%s): local serves with private buckets, the default holds transfers until the store is back; each end said once, counted", async (_limits, limits) => {
    const backend = await startBackend((socket) => socket.end("hello"));
    const redis = await startRedisServer();
    try {
      const args = ["--to", `127.0.0.1:${backend.port}`, ...limits, "--per", "client", "--key", "lost", "--store", redis.url, "--metrics", "127.0.0.1:0"];
      const local = await startProxy([...args, "--on-store-error", "local"]);
      const failing = await startProxy(args);
      for (const proxy of [local, failing]) expect((await receiveAll(await connectTo(proxy.port, "127.0.0.2"))).data.toString()).toBe("hello");
      await redis.stop();
      // A new client's bucket is asked of the store, which is gone.
      const served = await receiveAll(await connectTo(local.port, "127.0.0.3"));
      expect(served.data.toString()).toBe("hello");
      expect(local.running.stderr()).toMatch(/\ntbucket: warning: store redis:\/\/.*: lost Redis \(.*\); going on with private buckets of the same settings until it is back\n/);
      const held = receiveAll(await connectTo(failing.port, "127.0.0.3"));
      expect(await Promise.race([held, sleep(1000).then(() => "held")])).toBe("held");
      // A command sent while the client reconnects waits up to three attempts before it fails.
      const deadline = performance.now() + 3000;
      while (!failing.running.stderr().includes("tbucket: warning:") && performance.now() < deadline) await sleep(50);
      expect(failing.running.stderr()).toMatch(/\ntbucket: warning: store redis:\/\/.*: lost Redis \(.*\); transfers wait until it is back\n$/);
      for (const proxy of [local, failing]) {
        const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
        expect(metrics).toMatch(/\ntbucket_proxy_store_errors_total 1\n/);
        expect(metrics).toMatch(/\ntbucket_proxy_store_up 0\n/);
      }
      await redis.start();
      expect((await held).data.toString()).toBe("hello");
      for (const proxy of [local, failing]) {
        const deadline = performance.now() + 3000;
        while (!proxy.running.stderr().includes("back after") && performance.now() < deadline) await sleep(50);
        expect(proxy.running.stderr()).toMatch(/\ntbucket: store redis:\/\/.*: back after (\d+ ms|\d+\.\d s); the buckets are shared again\n$/);
        const metrics = await (await fetch(`http://127.0.0.1:${proxy.metricsPort}/metrics`)).text();
        expect(metrics).toMatch(/\ntbucket_proxy_store_up 1\n/);
        expect((await receiveAll(await connectTo(proxy.port, "127.0.0.4"))).data.toString()).toBe("hello");
        const result = await stopProxy(proxy);
        expect(result.code).toBe(0);
        expect(result.stderr.split("\n").filter((line) => line.startsWith("tbucket: ") && !line.startsWith("tbucket: proxy"))).toHaveLength(2);
      }
    } finally {
      await redis.stop();
    }
  }, 30_000);

  it("a SQLite file deleted mid-transfer is a lost store: said once, and the transfer waits (or with --on-store-error local goes on with private buckets); the proxy stays up", async () => {
    const block = Buffer.alloc(16 * 1024, 0x61);
    const backend = await startBackend((socket) => {
      const feed = () => {
        while (!socket.destroyed && socket.write(block));
      };
      socket.on("drain", feed);
      feed();
    });
    for (const local of [false, true]) {
      const dir = tempDir();
      const path = join(dir, "buckets.db");
      const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "200kb", "--drain", "1s", "--key", "gone", "--store", `sqlite:${path}`, ...(local ? ["--on-store-error", "local"] : [])], {
        env: { XDG_STATE_HOME: dir },
      });
      const client = await connectTo(proxy.port);
      const receiving = receiveAll(client);
      await sleep(500);
      rmSync(path);
      const deadline = performance.now() + 5000;
      while (!proxy.running.stderr().includes("tbucket: warning:") && performance.now() < deadline) await sleep(50);
      const meanwhile = local ? "going on with private buckets of the same settings" : "transfers wait";
      expect(proxy.running.stderr()).toMatch(
        new RegExp(`\\ntbucket: warning: store sqlite:.*: the file was deleted while in use, so its buckets are no longer shared; ${meanwhile} until it is back\\n$`),
      );
      if (!local) {
        // Held: nothing more comes while the store is away.
        const received = client.bytesRead;
        await sleep(500);
        expect(client.bytesRead - received).toBeLessThan(64 * 1024);
      }
      const before = (await Promise.race([receiving, sleep(300).then(() => undefined)])) === undefined;
      expect(before).toBe(true);
      expect((await stopProxy(proxy)).code).toBe(0);
      client.destroy();
      await receiving;
    }
  });
});
