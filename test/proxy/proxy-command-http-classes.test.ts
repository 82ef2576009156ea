import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { startProxy, stopProxy } from "../helpers/proxy.js";
import { tempDirs } from "../helpers/temp-dir.js";
import { listen } from "../http/http-helpers.js";

const tempDir = tempDirs("proxy-http-classes");

/** A backend answering `ok <path>`, closed after the test (http-helpers' listen). */
async function httpBackend(): Promise<number> {
  return (await listen((request, response) => response.end(`ok ${request.url}\n`))).port;
}

describe("tbucket proxy --to http://... --class: classes share each key's limit", () => {
  it("takes each request as the class its header names, tells each refused class its own Retry-After, and answers 400 for a class not defined", async () => {
    const backendPort = await httpBackend();
    const log = join(tempDir(), "access.log");
    // paid is guaranteed the whole 1/s; free only borrows what paid leaves (prio 1), and is the default.
    const proxy = await startProxy([
      "--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/s", "--burst", "1", "--per", "all",
      "--class", "paid=1/s", "--class", "free=0/s,prio=1", "--class-from", "header:X-Tier", "--default-class", "free", "--access-log", log,
    ]);
    expect(proxy.running.stderr()).toContain("(HTTP, 1/s, burst 1, classes paid, free by X-Tier, default free, per all)");
    const url = `http://127.0.0.1:${proxy.port}/`;
    const paid = await fetch(url, { headers: { "x-tier": "paid" } });
    expect(paid.status).toBe(200);
    expect(await paid.text()).toBe("ok /\n");
    const free = await fetch(url, { headers: { "x-tier": "free" } });
    expect(free.status).toBe(429);
    // free may borrow once paid has not asked for 2 s (its guarantee is held for it till then); paid's own refills in 1 s.
    expect(free.headers.get("retry-after")).toBe("2");
    const paidAgain = await fetch(url, { headers: { "x-tier": "paid" } });
    expect(paidAgain.status).toBe(429);
    expect(paidAgain.headers.get("retry-after")).toBe("1");
    const unnamed = await fetch(url);
    expect(unnamed.status).toBe(429);
    const wrong = await fetch(url, { headers: { "x-tier": "gold" } });
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toBe(`Bad Request: X-Tier: "gold" names no class; the classes are paid, free\n`);
    expect((await stopProxy(proxy)).code).toBe(0);
    const decisions = readFileSync(log, "utf8").trim().split("\n").map((line) => / (\d{3}) .* (\w+) \d+(?: limit=\S+)?$/.exec(line)?.slice(1, 3).join(" "));
    expect(decisions).toEqual(["200 admitted", "429 refused", "429 refused", "429 refused", "400 failed"]);
  });

  it("takes a request's class from the first route it matches, before its header", async () => {
    const backendPort = await httpBackend();
    const proxy = await startProxy([
      "--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/s", "--burst", "1", "--per", "all",
      "--class", "paid=1/s", "--class", "free=0/s,prio=1", "--route-class", "/free/*=free", "--class-from", "header:X-Tier",
    ]);
    expect(proxy.running.stderr()).toContain("classes paid, free by route, X-Tier, default paid");
    const url = `http://127.0.0.1:${proxy.port}`;
    expect((await fetch(`${url}/other`)).status).toBe(200);
    // The route wins over the header: /free/... is free, which borrows only once paid has not asked for 2 s
    // (a request of paid's would be told 1 s).
    const routed = await fetch(`${url}/free/a`, { headers: { "x-tier": "paid" } });
    expect(routed.status).toBe(429);
    expect(routed.headers.get("retry-after")).toBe("2");
    expect((await stopProxy(proxy)).code).toBe(0);
  });

  it("two proxies on one --key share each client's key between its classes (one listener each, its own --default-class)", async () => {
    const backendPort = await httpBackend();
    const store = `sqlite:${join(tempDir(), "k.db")}`;
    const common = ["--to", `http://127.0.0.1:${backendPort}`, "--rate", "1/s", "--burst", "1", "--per", "all", "--class", "paid=1/s", "--class", "free=0/s,prio=1", "--key", "api", "--store", store];
    const paid = await startProxy([...common, "--default-class", "paid"]);
    const free = await startProxy([...common, "--default-class", "free"]);
    expect((await fetch(`http://127.0.0.1:${paid.port}/`)).status).toBe(200);
    const refused = await fetch(`http://127.0.0.1:${free.port}/`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect((await fetch(`http://127.0.0.1:${paid.port}/`)).status).toBe(429);
    const show = await runCli(["key", "show", "api:all", "--store", store, "--json"]);
    expect(JSON.parse(show.stdout.toString()).classes.map((c: { name: string }) => c.name)).toEqual(["paid", "free"]);
    expect((await stopProxy(paid)).code).toBe(0);
    expect((await stopProxy(free)).code).toBe(0);
  });

  it("refuses class options that cannot work, naming what to write (exit 2)", async () => {
    const to = ["--listen", "0", "--to", "http://127.0.0.1:9"];
    const cases: Array<[string[], string]> = [
      [["--listen", "0", "--to", "127.0.0.1:9", "--rate", "1mb", "--class", "a=1mb"], "tbucket: --class: is for HTTP mode, and --to 127.0.0.1:9 is TCP (http://HOST:PORT selects HTTP); drop --class or change --to\n"],
      [[...to, "--rate", "10/s", "--class-from", "header:X-Tier"], `tbucket: --class-from: names a class, and no --class defines any; add e.g. "--class interactive=40/s --class batch=10/s,prio=1"\n`],
      [[...to, "--rate", "10/s", "--class", "a=5/s", "--class-from", "cookie:tier"], `tbucket: --class-from: "cookie:tier" is not a header; try "--class-from header:X-Priority" (the header's value names the class)\n`],
      [[...to, "--rate", "10/s", "--class", "a=5/s", "--default-class", "b"], `tbucket: --default-class: no class "b"; the classes are a (define it with --class b=RATE, or name one of them)\n`],
      [[...to, "--rate", "10/s", "--concurrency", "5", "--class", "a=5/s"], "tbucket: --class: classes share rates and windows, not --concurrency; drop --concurrency, or run it in a proxy of its own in front\n"],
      [[...to, "--rate", "10/s", "--class", "a=5/s", "--route-class", "/x=b"], `tbucket: --route-class /x=b: no class "b"; the classes are a (define it with --class b=RATE, or name one of them)\n`],
      [[...to, "--rate", "10/s", "--class", "a=5/s", "--route-class", "x=a"], `tbucket: --route-class: "x=a": the path "x" does not start with "/"; e.g. "/search*=interactive"\n`],
      [[...to, "--rate", "10/s", "--class", "a=8/s", "--class", "b=5/s"], "tbucket: --class: the guarantees add up to 13/s, more than the rate of 10/s; lower them, or raise --rate (what is left of the rate is lent)\n"],
    ];
    for (const [args, stderr] of cases) {
      const result = await runCli(["proxy", ...args]);
      expect({ args, stderr: result.stderr, code: result.code }).toEqual({ args, stderr, code: 2 });
    }
  });
});
