import { describe, expect, it } from "vitest";
import { sleep } from "../helpers/cli.js";
import { connectTo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";

describe("tbucket proxy in TCP mode with a byte window, in real time", () => {
  it("--down 10mb --window 64k/500ms keeps what the reader gets inside 64 KiB a 500 ms window, and keeps up with the window", async () => {
    const block = Buffer.alloc(64 * 1024, 0x62);
    const backend = await startBackend((socket) => {
      const feed = () => {
        while (!socket.destroyed && socket.write(block));
      };
      socket.on("drain", feed);
      socket.on("data", () => {});
      feed();
    });
    const proxy = await startProxy(["--to", `127.0.0.1:${backend.port}`, "--down", "10mb", "--window", "64k/500ms"]);
    expect(proxy.running.stderr()).toContain("(TCP, up at most 64.00 KiB (65536 B) in any 500 ms, down 10.00 MiB/s (10485760 B/s), burst 1.00 MiB (1048576 B) and at most 64.00 KiB (65536 B) in any 500 ms, per link)");
    const originMs = performance.now();
    const socket = await connectTo(proxy.port);
    const receiving = receiveAll(socket);
    await sleep(2600);
    socket.destroy();
    const { arrivals } = await receiving;
    await stopProxy(proxy);
    await backend.close();
    // A reader that wakes late sees bytes sent in two windows at once, so what the reader can check without a
    // tolerance is the envelope: the proxy sent its first byte after originMs, and a window a W bytes in any
    // 500 ms allows at most W·(⌊t / 500 ms⌋ + 1) in the first t. What it received is no more than what was sent.
    const windowBytes = 64 * 1024;
    for (const { atMs, total } of arrivals) expect(total).toBeLessThanOrEqual(windowBytes * (Math.floor((atMs - originMs) / 500) + 1));
    // 2.6 s is 6 windows' worth (at 0, 0.5, ..., 2.5 s): at least 5 of them arrived.
    const total = arrivals.at(-1)?.total ?? 0;
    expect(total).toBeGreaterThanOrEqual(5 * windowBytes);
    expect(total).toBeLessThanOrEqual(6 * windowBytes);
  });
});
