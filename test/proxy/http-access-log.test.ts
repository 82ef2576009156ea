import { once } from "node:events";
import { connect } from "node:net";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { clfTime } from "../../src/proxy/access-log.js";
import { type RunningHttpProxy, startHttpProxy } from "../../src/proxy/http-proxy.js";
import { runCli } from "../helpers/cli.js";
import { get, listen } from "../http/http-helpers.js";

let proxy: RunningHttpProxy | undefined;

afterEach(async () => {
  await proxy?.close(0);
  proxy = undefined;
});

describe("the HTTP proxy's access log", () => {
  it("is read as it is by the built tbucket simulate --trace, per client, with the proxy's own decisions", async () => {
    const backend = await listen((_req, res) => res.end("hello\n"));
    const log = new PassThrough();
    let recorded = "";
    log.on("data", (chunk: Buffer) => (recorded += chunk));
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: 0.001, burst: 2, trustProxy: ["127.0.0.1"], accessLog: log });
    const url = `http://127.0.0.1:${proxy.address.port}/`;
    for (const client of ["10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2"]) await get(url, { "x-forwarded-for": client });
    await proxy.close(1000);
    proxy = undefined;
    const lines = recorded.trimEnd().split("\n");
    expect(lines.map((line) => line.split(" ").slice(-2).join(" "))).toEqual(["admitted 0", "admitted 0", "refused 0", "admitted 0"]);
    expect(lines.map((line) => line.split(" ")[0])).toEqual(["10.0.0.1", "10.0.0.1", "10.0.0.1", "10.0.0.2"]);

    // The same limit replayed over the recording refuses the same request.
    const result = await runCli(["simulate", "--trace", "-", "--rate", "1/m", "--burst", "2", "--per-key", "--format", "jsonl"], { input: recorded });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const events = result.stdout.toString().trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.map((event) => [event.key, event.admitted])).toEqual([
      ["10.0.0.1", true],
      ["10.0.0.1", true],
      ["10.0.0.1", false],
      ["10.0.0.2", true],
    ]);
  });
});

describe("the HTTP proxy's access log of requests it cannot read", () => {
  it("has a line for each request node's parser refuses (a smuggling attempt, a byte no URL holds), as for the 400s the proxy finds", async () => {
    const backend = await listen((_req, res) => res.end("hello\n"));
    const log = new PassThrough();
    let recorded = "";
    log.on("data", (chunk: Buffer) => (recorded += chunk));
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: Infinity, burst: 1, accessLog: log });
    for (const attempt of [
      "POST /cl-te HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "GET /caf\xe9 HTTP/1.1\r\nHost: x\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    ]) {
      const socket = connect(proxy.address.port, "127.0.0.1");
      socket.on("error", () => {});
      socket.resume();
      socket.end(Buffer.from(attempt, "latin1"));
      await once(socket, "close");
    }
    await proxy.close(1000);
    proxy = undefined;
    const fields = recorded
      .trimEnd()
      .split("\n")
      .map((line) => line.replace(/ \[[^\]]+\] /, " [time] "));
    expect(fields).toEqual([
      '127.0.0.1 - - [time] "POST /cl-te HTTP/1.1" 400 - "-" "-" invalid 0',
      '127.0.0.1 - - [time] "GET /caf\\xe9 HTTP/1.1" 400 - "-" "-" invalid 0',
      '127.0.0.1 - - [time] "GET / HTTP/1.1" 400 38 "-" "-" invalid 0',
    ]);
    const result = await runCli(["simulate", "--trace", "-", "--rate", "1/s", "--burst", "1", "--format", "jsonl"], { input: recorded });
    expect([result.code, result.stderr]).toEqual([0, ""]);
  });
});

describe("the record-then-tune loop", () => {
  it("simulate --trace on the proxy's own log, under the same limit, makes the proxy's decisions, requests a few ms apart", async () => {
    const backend = await listen((_req, res) => res.end("hello\n"));
    const log = new PassThrough();
    let recorded = "";
    log.on("data", (chunk: Buffer) => (recorded += chunk));
    const clock = new FakeClock(5_000.25);
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: 10, burst: 3, trustProxy: ["127.0.0.1"], accessLog: log, clock });
    const url = `http://127.0.0.1:${proxy.address.port}/`;
    // Ms between requests: bursts, and gaps around the 100 ms a token takes, all within two seconds.
    const gaps = [0, 0, 0, 0, 40, 60, 99, 1, 100, 30, 30, 30, 250, 0, 0, 0, 0, 101, 99, 500];
    for (const [i, gap] of gaps.entries()) {
      clock.set(clock.now() + gap);
      await get(url, { "x-forwarded-for": i % 4 === 3 ? "10.0.0.2" : "10.0.0.1" });
    }
    await proxy.close(1000);
    proxy = undefined;
    const lines = recorded.trimEnd().split("\n");
    expect(lines).toHaveLength(gaps.length);
    const decisions = lines.map((line) => [line.split(" ")[0], line.split(" ").at(-2) !== "refused"]);
    // Both kinds of decision, within one second of the log: whole seconds could not tell them apart.
    expect(decisions.filter(([, admitted]) => !admitted).length).toBeGreaterThan(2);
    expect(decisions.filter(([, admitted]) => admitted).length).toBeGreaterThan(8);

    const result = await runCli(["simulate", "--trace", "-", "--rate", "10/s", "--burst", "3", "--per-key", "--format", "jsonl"], { input: recorded });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const events = result.stdout.toString().trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.map((event) => [event.key, event.admitted])).toEqual(decisions);
  });

  it("simulate --trace on the proxy's own log skips the requests refused before the limit (two Host fields: 400), and still makes the proxy's decisions", async () => {
    const backend = await listen((_req, res) => res.end("hello\n"));
    const log = new PassThrough();
    let recorded = "";
    log.on("data", (chunk: Buffer) => (recorded += chunk));
    const clock = new FakeClock(7_000.5);
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: 10, burst: 3, trustProxy: ["127.0.0.1"], accessLog: log, clock });
    const port = proxy.address.port;
    const invalid = async (client: string) => {
      const socket = connect(port, "127.0.0.1");
      socket.on("error", () => {});
      socket.resume();
      socket.end(`GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nX-Forwarded-For: ${client}\r\n\r\n`);
      await once(socket, "close");
    };
    // Ms between requests; the client's malformed requests come among its valid ones, a burst of them first.
    const gaps = [0, 0, 0, 0, 40, 60, 99, 1, 100, 30, 30, 30, 250, 0, 0, 0, 0, 101, 99, 500];
    for (const [i, gap] of gaps.entries()) {
      clock.set(clock.now() + gap);
      const client = i % 4 === 3 ? "10.0.0.2" : "10.0.0.1";
      if (i % 3 === 0) await invalid(client);
      await get(`http://127.0.0.1:${port}/`, { "x-forwarded-for": client });
    }
    await proxy.close(1000);
    proxy = undefined;
    const lines = recorded.trimEnd().split("\n");
    const invalidLines = lines.filter((line) => line.endsWith(" invalid 0"));
    expect(invalidLines).toHaveLength(7);
    for (const line of invalidLines) expect(line).toMatch(/" 400 \d+ "-" "-" invalid 0$/);
    const decisions = lines.filter((line) => !line.endsWith(" invalid 0")).map((line) => [line.split(" ")[0], line.split(" ").at(-2) !== "refused"]);
    expect(decisions).toHaveLength(gaps.length);
    expect(decisions.filter(([, admitted]) => !admitted).length).toBeGreaterThan(2);

    const result = await runCli(["simulate", "--trace", "-", "--rate", "10/s", "--burst", "3", "--per-key", "--format", "jsonl"], { input: recorded });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const events = result.stdout.toString().trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.map((event) => [event.key, event.admitted])).toEqual(decisions);
  });
});

describe("the record-then-tune loop, IPv6", () => {
  it("simulate --per-key on the proxy's log keys IPv6 clients by the proxy's /56, so two addresses of one network share a bucket in both", async () => {
    const backend = await listen((_req, res) => res.end("hello\n"));
    const log = new PassThrough();
    let recorded = "";
    log.on("data", (chunk: Buffer) => (recorded += chunk));
    const clock = new FakeClock(1_000);
    proxy = await startHttpProxy({ listen: { host: "127.0.0.1", port: 0 }, target: backend.url, rate: 10, burst: 3, trustProxy: ["127.0.0.1"], accessLog: log, clock });
    const url = `http://127.0.0.1:${proxy.address.port}/`;
    // Two hosts of 2001:db8:1:200::/56, and one of the next /56.
    const clients = ["2001:db8:1:200::1", "2001:db8:1:2ff::2", "2001:db8:1:300::1"];
    const gaps = [0, 0, 0, 0, 40, 60, 99, 1, 100, 30, 30, 30, 250, 0, 0, 0];
    for (const [i, gap] of gaps.entries()) {
      clock.set(clock.now() + gap);
      await get(url, { "x-forwarded-for": clients[i % 5 === 4 ? 2 : i % 2]! });
    }
    await proxy.close(1000);
    proxy = undefined;
    const lines = recorded.trimEnd().split("\n");
    expect(new Set(lines.map((line) => line.split(" ")[0]))).toEqual(new Set(clients));
    const decisions = lines.map((line) => line.split(" ").at(-2) !== "refused");
    expect(decisions.filter((admitted) => !admitted).length).toBeGreaterThan(2);

    const result = await runCli(["simulate", "--trace", "-", "--rate", "10/s", "--burst", "3", "--per-key", "--format", "jsonl"], { input: recorded });
    expect([result.code, result.stderr]).toEqual([0, ""]);
    const events = result.stdout.toString().trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(events.map((event) => event.admitted)).toEqual(decisions);
    expect(new Set(events.map((event) => event.key))).toEqual(new Set(["2001:db8:1:200::/56", "2001:db8:1:300::/56"]));
  });
});

describe("the access log's time", () => {
  it("is the millisecond of each instant, whatever second came before (the second's text is kept from one line to the next)", () => {
    expect(clfTime(Date.UTC(2026, 11, 1, 2, 49, 13, 999) + 0.9)).toBe("01/Dec/2026:02:49:13.999 +0000");
    expect(clfTime(Date.UTC(2026, 11, 1, 2, 49, 13, 0))).toBe("01/Dec/2026:02:49:13.000 +0000");
    expect(clfTime(Date.UTC(2026, 11, 1, 2, 49, 14, 42))).toBe("01/Dec/2026:02:49:14.042 +0000");
    expect(clfTime(Date.UTC(1999, 0, 9, 23, 5, 0, 500))).toBe("09/Jan/1999:23:05:00.500 +0000");
  });
});
