import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { connectionsWithinDescriptorLimit } from "../../src/cli/proxy/descriptor-limit.js";
import { sleep, start, TBUCKET } from "../helpers/cli.js";
import { stopProxy } from "../helpers/proxy.js";
import { get, listen } from "../http/http-helpers.js";

const limits = (openFiles: string) =>
  `Limit                     Soft Limit           Hard Limit           Units\nMax processes             63704                63704                processes\nMax open files            ${openFiles}                20000                files\n`;

describe("the connections a proxy can hold within its open-file limit", () => {
  it("two descriptors a connection, less a reserve for the rest", () => {
    expect(connectionsWithinDescriptorLimit(limits("20000"))).toBe(9968);
    expect(connectionsWithinDescriptorLimit(limits("1024"))).toBe(480);
  });

  it("at least one, and no limit where it cannot be read or there is none", () => {
    expect(connectionsWithinDescriptorLimit(limits("10"))).toBe(1);
    expect(connectionsWithinDescriptorLimit(limits("unlimited"))).toBe(Infinity);
    expect(connectionsWithinDescriptorLimit("")).toBe(Infinity);
  });
});

const holders: Socket[] = [];
afterEach(() => {
  for (const socket of holders.splice(0)) socket.destroy();
});

async function metric(port: number, name: string): Promise<number> {
  const { body } = await get(`http://127.0.0.1:${port}/metrics`);
  const line = body.split("\n").find((text) => text.startsWith(`${name} `));
  return Number(line?.split(" ")[1]);
}

describe("tbucket proxy (HTTP) at its open-file limit", () => {
  it("clients holding unfinished headers by the open-file limit's worth do not shut others out: the idlest connection goes, said once", async () => {
    const backend = await listen((_req, res) => res.end("ok\n"));
    // ulimit -n 100: (100 - 64) / 2 = 18 connections.
    const running = start("bash", [
      "-c",
      `ulimit -n 100 && exec "${process.execPath}" "${TBUCKET}" proxy --listen 127.0.0.1:0 --to ${backend.url} --rate 1000/s --metrics 127.0.0.1:0`,
    ]);
    let port = 0;
    let metricsPort = 0;
    while (port === 0) {
      const match = /listening on 127\.0\.0\.1:(\d+),.*metrics on http:\/\/127\.0\.0\.1:(\d+)/.exec(running.stderr());
      if (match) [port, metricsPort] = [Number(match[1]), Number(match[2])];
      else if (running.done()) throw new Error(`the proxy did not start: ${running.stderr()}`);
      else await sleep(20);
    }
    // More than the process has descriptors for: without room made, the last ones would find none.
    for (let i = 0; i < 120; i++) {
      const socket = connect(port, "127.0.0.1");
      holders.push(socket);
      socket.on("error", () => {});
      await once(socket, "connect");
      socket.write("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    }
    for (let i = 0; i < 3; i++) expect(await get(`http://127.0.0.1:${port}/`)).toMatchObject({ status: 200, body: "ok\n" });
    const warnings = running.stderr().split("\n").filter((line) => line.startsWith("tbucket: warning:"));
    expect(warnings).toEqual([
      "tbucket: warning: 18 connections open, as many as the open-file limit allows (two descriptors each); each new connection closes the one idle the longest (or is closed when none is idle); raise it with ulimit -n",
    ]);
    expect(await metric(metricsPort, "tbucket_proxy_idle_closed_total")).toBeGreaterThanOrEqual(100);
    expect(await metric(metricsPort, "tbucket_proxy_open_connections")).toBeLessThanOrEqual(18);
    const result = await stopProxy({ running, port, metricsPort });
    expect(result.code).toBe(0);
  });
});
