import { describe, expect, it } from "vitest";
import type { HttpProxyObserver } from "../../src/proxy/http-proxy.js";
import { get, listen, until } from "../http/http-helpers.js";
import { useHttpProxies } from "./http-proxy-harness.js";

// The HTTP proxy at its most connections (the open-file limit): idle clients cannot lock new ones out.

const { proxyTo, raw } = useHttpProxies();

function fullObserver(): { observer: HttpProxyObserver; full: boolean[] } {
  const full: boolean[] = [];
  return { observer: { decision() {}, bytes() {}, storeError() {}, full: (evicted) => full.push(evicted) }, full };
}

describe("the HTTP proxy at maxConnections", () => {
  it("closes the connection idle the longest for a new one: clients holding unfinished headers do not shut others out", async () => {
    const backend = await listen((_req, res) => res.end("ok\n"));
    const { observer, full } = fullObserver();
    const { proxy, port, url } = await proxyTo(backend.url, { maxConnections: 4, observer });
    const holders = [];
    for (let i = 0; i < 4; i++) {
      const holder = await raw(port);
      holder.write("GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ");
      holders.push(holder);
    }
    await until(() => proxy.openConnections() === 4, "four connections held");
    for (let i = 0; i < 3; i++) expect(await get(url)).toMatchObject({ status: 200, body: "ok\n" });
    // The oldest holder went, and got nothing (it never finished a request); each answered request's connection made room for the next.
    await holders[0]!.closed;
    expect(holders[0]!.text()).toBe("");
    expect(holders.slice(1).map((holder) => holder.socket.destroyed)).toEqual([false, false, false]);
    expect(full).toEqual([true]);
  });

  it("keeps a connection whose request is under way, and closes the new one when every connection is busy", async () => {
    let held = 0;
    const backend = await listen((req, res) => {
      if (req.url === "/hold") return void held++;
      res.end("ok\n");
    });
    const { observer, full } = fullObserver();
    const { proxy, port, url } = await proxyTo(backend.url, { maxConnections: 2, observer });
    const busy = [await raw(port), await raw(port)];
    for (const client of busy) client.write("GET /hold HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => held === 2, "two requests under way");
    expect(proxy.openConnections()).toBe(2);
    await expect(get(url)).rejects.toThrow();
    expect(full).toEqual([false]);
    expect(busy.map((client) => client.socket.destroyed)).toEqual([false, false]);
  });
});
