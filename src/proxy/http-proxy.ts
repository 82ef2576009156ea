import { HttpProxy } from "./http-proxy-server.js";
import type { HttpProxyOptions, RunningHttpProxy } from "./http-proxy-options.js";

export type { HttpKeyRule, HttpProxyObserver, HttpProxyOptions, RequestDecision, RunningHttpProxy, SharedHttpBuckets } from "./http-proxy-options.js";
export { parseHttpTarget } from "./http-target.js";

/**
 * Starts the HTTP reverse proxy: every request goes through the rate-limit
 * middleware (tbucket/http) and, when let through, to the backend, bodies
 * streamed both ways. Rejects with node's listen error (its `code` is
 * EADDRINUSE, EACCES, EADDRNOTAVAIL...) when the address cannot be taken,
 * and with a TypeError or RangeError naming the option for bad options.
 */
export async function startHttpProxy(options: HttpProxyOptions): Promise<RunningHttpProxy> {
  const proxy = new HttpProxy(options);
  await proxy.listen();
  return proxy;
}
