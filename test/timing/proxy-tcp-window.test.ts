import { describe, expect, it } from "vitest";
import { sleep } from "../helpers/cli.js";
import { connectTo, receiveAll, startBackend, startProxy, stopProxy } from "../helpers/proxy.js";

describe("tbucket proxy in TCP mode with a byte window, in real time", () => {
  it("--down 10mb --window 64k/500ms never gives the reader more than 64 KiB in any 500 ms, and keeps up with the window", async () => {
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
    expect(proxy.running.stderr()).toContain("(TCP, up at most 64.00 KiB (65536 B) in any 500 ms, down 10.00 MiB/s (10485760 B/s), burst 1.00 MiB (1048576 B), at most 64.00 KiB (65536 B) in any 500 ms, per link)");
    const socket = await connectTo(proxy.port);
    const receiving = receiveAll(socket);
    await sleep(2600);
    socket.destroy();
    const { arrivals } = await receiving;
    await stopProxy(proxy);
    await backend.close();
    // A reader that wakes late sees a window's bytes and the next one's together: 30 ms covers that.
    const toleranceMs = 30;
    const windowBytes = 64 * 1024;
    for (let from = 0; from < arrivals.length; from++) {
      const before = from === 0 ? 0 : arrivals[from - 1]!.total;
      for (let to = from; to < arrivals.length && arrivals[to]!.atMs - arrivals[from]!.atMs < 500 - toleranceMs; to++) {
        expect(arrivals[to]!.total - before).toBeLessThanOrEqual(windowBytes);
      }
    }
    // 2.6 s is 6 windows' worth (at 0, 0.5, ..., 2.5 s): at least 5 of them arrived.
    const total = arrivals.at(-1)?.total ?? 0;
    expect(total).toBeGreaterThanOrEqual(5 * windowBytes);
    expect(total).toBeLessThanOrEqual(6 * windowBytes);
  });
});
