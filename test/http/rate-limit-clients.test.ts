import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { describe, expect, it } from "vitest";
import { type GateResult, KeyFunctionError, rateLimit } from "../../src/http/index.js";
import { get, listen } from "./http-helpers.js";

/** The statuses of requests sent one after another with these headers. */
async function statuses(url: string, headers: Array<Record<string, string>>): Promise<number[]> {
  const out = [];
  for (const each of headers) out.push((await get(url, each)).status);
  return out;
}

describe("rateLimit: the key function", () => {
  // Regression: a Promise was taken for the key itself, a fresh bucket for every request.
  it("awaits a key function that returns a promise", async () => {
    const limit = rateLimit({ rate: 0.001, burst: 1, key: async (req) => req.headers["x-api-key"] as string | undefined });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    expect(await statuses(url, [{ "x-api-key": "a" }, { "x-api-key": "a" }, { "x-api-key": "b" }, {}])).toEqual([200, 429, 200, 200]);
  });

  it.each<[string, () => unknown, string]>([
    ["throws", () => { throw new Error("no\nkey"); }, "the `key` function failed: no key"],
    ["rejects", () => Promise.reject(new Error("lookup failed")), "the `key` function failed: lookup failed"],
    ["returns a number", () => 42, "the `key` function gave `42` (number), not a string; return the request's key, or undefined to let it through uncounted"],
    ["returns null", () => null, "the `key` function gave `null` (null), not a string"],
    ["resolves to an object", async () => ({ id: 1 }), "the `key` function gave `[object Object]` (object), not a string"],
  ])("answers 500 with one logged line, never admitting, when the key function %s", async (_what, key, message) => {
    const lines: string[] = [];
    const limit = rateLimit({ rate: 100, burst: 10, key: key as never, log: (line) => lines.push(line) });
    let handled = 0;
    const { url } = await listen(limit.wrap((_req, res) => {
      handled++;
      res.end();
    }));
    expect(await get(`${url}/path`)).toMatchObject({ status: 500, body: "Internal Server Error\n" });
    expect(handled).toBe(0);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`tbucket/http: GET /path: answered 500: ${message}`);
    expect(lines[0]).not.toContain("\n");
  });

  it("hands a framework the KeyFunctionError through next, for its own 500", async () => {
    const limit = rateLimit({ rate: 100, burst: 10, key: () => 7 as never });
    const errors: unknown[] = [];
    const { url } = await listen((req, res) => limit(req, res, (error) => {
      errors.push(error);
      res.statusCode = 500;
      res.end();
    }));
    expect((await get(url)).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(KeyFunctionError);
    expect(errors[0]).toMatchObject({ code: "EKEYFUNCTION" });
  });
});

describe("rateLimit: the client's address", () => {
  // Regression: Express's trust proxy was ignored, so behind a load balancer every client shared one bucket.
  it("takes Express's req.ip, and so its trust proxy setting", async () => {
    const app = express();
    app.set("trust proxy", "loopback");
    app.use(rateLimit({ rate: 0.001, burst: 1 }));
    app.get("/", (_req, res) => {
      res.end("ok");
    });
    const { url } = await listen(app);
    const clients = ["192.0.2.1", "192.0.2.2", "192.0.2.1"].map((client) => ({ "x-forwarded-for": client }));
    expect(await statuses(url, clients)).toEqual([200, 200, 429]);
  });

  it("says once, at the first such request, that requests forwarded by a private address share one bucket without trustProxy", async () => {
    const lines: string[] = [];
    const limit = rateLimit({ rate: 100, burst: 10, log: (line) => lines.push(line) });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    await get(url);
    expect(lines).toEqual([]);
    await statuses(url, [{ "x-forwarded-for": "192.0.2.1" }, { "x-forwarded-for": "192.0.2.2" }]);
    expect(lines).toEqual([
      `tbucket/http: requests come through a proxy at 127.0.0.1 (they carry X-Forwarded-For) and trustProxy is not set, so every client behind it shares one bucket; ` +
        `set trustProxy: ["127.0.0.1"] (or Express's "trust proxy") to key each client by its own address`,
    ]);
  });

  it("says once that Express's trust proxy set to true lets every client choose its bucket", async () => {
    // req.ip is then the first X-Forwarded-For hop, whatever a client writes there: a fresh one is a fresh bucket.
    const lines: string[] = [];
    const app = express();
    app.set("trust proxy", true);
    app.use(rateLimit({ rate: 0.001, burst: 1, log: (line) => lines.push(line) }));
    app.get("/", (_req, res) => {
      res.end("ok");
    });
    const { url } = await listen(app);
    expect(await statuses(url, [{ "x-forwarded-for": "192.0.2.1" }, { "x-forwarded-for": "192.0.2.2" }])).toEqual([200, 200]);
    expect(lines).toEqual([
      `tbucket/http: Express's "trust proxy" is true, so req.ip is whatever X-Forwarded-For a client writes, and each request can choose its own bucket; ` +
        `set it to your proxies' addresses (app.set("trust proxy", "10.0.0.1")) or give trustProxy`,
    ]);
  });

  it("says nothing of forwarded requests when trustProxy or Express's trust proxy is set", async () => {
    const lines: string[] = [];
    const limit = rateLimit({ rate: 100, burst: 10, trustProxy: ["127.0.0.1"], log: (line) => lines.push(line) });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    const app = express();
    app.set("trust proxy", "loopback");
    app.use(rateLimit({ rate: 100, burst: 10, log: (line) => lines.push(line) }));
    app.get("/", (_req, res) => {
      res.end("ok");
    });
    const { url: expressUrl } = await listen(app);
    await get(url, { "x-forwarded-for": "192.0.2.1" });
    await get(expressUrl, { "x-forwarded-for": "192.0.2.1" });
    expect(lines).toEqual([]);
  });

  // Regression: each IPv6 address was a client, so one host with a /64 had 2^64 fresh buckets.
  it("keys IPv6 clients by their /56, or by ipv6Subnet", async () => {
    const keys: string[] = [];
    const onDecision = (_req: unknown, _result: GateResult, key: string) => keys.push(key);
    const by56 = rateLimit({ rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"], onDecision });
    const by128 = rateLimit({ rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"], ipv6Subnet: 128 });
    const { url } = await listen(by56.wrap((_req, res) => res.end()));
    const { url: wholeUrl } = await listen(by128.wrap((_req, res) => res.end()));
    const clients = ["2001:db8:1:100::1", "2001:db8:1:1ff:ffff::2", "2001:db8:1:200::1"].map((client) => ({ "x-forwarded-for": client }));
    expect(await statuses(url, clients)).toEqual([200, 429, 200]);
    expect(keys).toEqual(["2001:db8:1:100::/56", "2001:db8:1:100::/56", "2001:db8:1:200::/56"]);
    expect(await statuses(wholeUrl, clients)).toEqual([200, 200, 200]);
  });

  it("keys a client on ::1 by its /56", async () => {
    const keys: string[] = [];
    const limit = rateLimit({ rate: 100, burst: 10, onDecision: (_req, _result, key) => keys.push(key) });
    const server = createServer(limit.wrap((_req, res) => res.end()));
    await new Promise<void>((resolve) => server.listen(0, "::1", resolve));
    try {
      expect((await get(`http://[::1]:${(server.address() as AddressInfo).port}/`)).status).toBe(200);
      expect(keys).toEqual(["::/56"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("counts a request whose socket closed before its address was read, in a bucket of its own, never letting it through uncounted", () => {
    const keys: string[] = [];
    const limit = rateLimit({ rate: 0.001, burst: 1, onDecision: (_req, _result, key) => keys.push(key) });
    const gone = () => ({ socket: {}, headers: {} }) as unknown as IncomingMessage;
    const res = () => ({ headersSent: false, writableEnded: false, destroyed: false, setHeader() {}, end() {} }) as unknown as ServerResponse;
    let admitted = 0;
    limit(gone(), res(), () => admitted++);
    limit(gone(), res(), () => admitted++);
    expect(keys).toEqual(["-", "-"]);
    expect(admitted).toBe(1);
  });

  // Regression: a trusted proxy that writes Forwarded passed the client's own X-Forwarded-For along, which picked the bucket.
  it("never lets a client's own X-Forwarded-For or Forwarded pick its bucket, whichever of the two its proxy writes", async () => {
    const keys: string[] = [];
    const limit = rateLimit({ rate: 0.001, burst: 1, trustProxy: ["127.0.0.1"], onDecision: (_req, _result, key) => keys.push(key) });
    const { url } = await listen(limit.wrap((_req, res) => res.end()));
    const victim = { forwarded: "for=192.0.2.1" };
    const answers = await statuses(url, [
      // Through a proxy that writes Forwarded: the attacker names the victim in X-Forwarded-For.
      { forwarded: "for=198.51.100.6", "x-forwarded-for": "192.0.2.1" },
      victim,
      // Through one that writes X-Forwarded-For: the attacker names the victim in Forwarded.
      { forwarded: "for=192.0.2.1", "x-forwarded-for": "198.51.100.6" },
      victim,
    ]);
    expect(keys).toEqual(["127.0.0.1", "192.0.2.1", "127.0.0.1", "192.0.2.1"]);
    expect(answers).toEqual([200, 200, 429, 429]);
  });
});

describe("rateLimit: options", () => {
  // Regression: unknown options were ignored, so a misspelled limit was no limit.
  it.each([
    [
      { maxWait: 5 },
      "Unknown option `maxWait` (did you mean `maxWaitMs`?); the options are `rate`, `burst`, `limits`, `total`, `key`, `skip`, `cost`, `classes`, `classOf`, `defaultClass`, `policy`, `maxWaitMs`, `maxKeys`, `headers`, `legacyHeaders`, `retryAfterMs`, `message`, `store`, `onDecision`, `log`, `clock`, `trustProxy`, `ipv6Subnet`, `handler`",
    ],
    [{ legacyHeader: true }, "Unknown option `legacyHeader` (did you mean `legacyHeaders`?)"],
    [{ onLimitReached: () => {} }, "Unknown option `onLimitReached`; the options are `rate`,"],
    [{ skip: true }, "Expected `skip` to be a function, got `true` (boolean)"],
    [{ cost: -1 }, "Expected `cost` to be a finite number of at least 0 or a function of the request, got `-1` (number)"],
    [{ headers: "yes" }, "Expected `headers` to be true or false, got `yes` (string)"],
    [{ message: 429 }, "Expected `message` to be a string, an object (sent as JSON) or a function, got `429` (number)"],
    [{ handler: "stderr" }, "Expected `handler` to be a function, got `stderr` (string)"],
    [{ ipv6Subnet: 0 }, "Expected `ipv6Subnet` to be an integer from 1 to 128 (the bits of an IPv6 address that make a client), got `0` (number)"],
    [{ ipv6Subnet: 129 }, "Expected `ipv6Subnet` to be an integer from 1 to 128"],
    [{ ipv6Subnet: "56" }, "Expected `ipv6Subnet` to be an integer from 1 to 128 (the bits of an IPv6 address that make a client), got `56` (string)"],
    [{ log: "stderr" }, "Expected `log` to be a function, got `stderr` (string)"],
    [{ trustProxy: "127.0.0.1" }, "Expected `trustProxy` to be an array of addresses and CIDRs, got `127.0.0.1` (string)"],
    [{ key: (): string => "k", trustProxy: ["127.0.0.1"] }, "Expected `trustProxy` only without `key`: it shapes the default key, the client's address, and `key` replaces that"],
    [{ key: (): string => "k", ipv6Subnet: 64 }, "Expected `ipv6Subnet` only without `key`"],
  ])("refuses %j at construction, naming the option", (extra, message) => {
    expect(() => rateLimit({ rate: 1, burst: 1, ...extra } as never)).toThrow(message);
  });

  it("takes an option given as undefined as not given", () => {
    expect(() => rateLimit({ rate: 1, burst: 1, maxWaitMs: undefined, skip: undefined } as never)).not.toThrow();
  });
});

describe("rateLimit: a refusal after the response began", () => {
  // Regression: a request refused after its headers were sent was never ended, and its client hung.
  it("cuts the connection, so the client is not left waiting nor told the response is whole", async () => {
    const limit = rateLimit({ rate: 0.001, burst: 1 });
    const { url } = await listen((req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.flushHeaders();
      limit(req, res, () => res.end("ok"));
    });
    expect((await get(url)).body).toBe("ok");
    const outcome = await new Promise<string>((resolve) => {
      const req = request(url, { agent: false }, (res) => {
        res.on("data", () => {});
        res.on("end", () => resolve("ended"));
        res.on("aborted", () => resolve("cut"));
        res.on("error", () => resolve("cut"));
      });
      req.on("error", () => resolve("cut"));
      req.end();
      setTimeout(() => resolve("hung"), 3000).unref();
    });
    expect(outcome).toBe("cut");
  });
});

