import type { StoreBackend, StoreLocation } from "./store-backend.js";
import { parseRedisUrl, redactUrl } from "./redis-url.js";
import { StoreUrlError } from "./store-url-error.js";

/** Buckets in Redis, shared by processes on many machines (redis-store.ts). */
export const redisBackend: StoreBackend<StoreLocation & { type: "redis" }> = {
  type: "redis",
  schemes: ["redis://", "rediss://"],
  examples: ["redis://host:6379"],
  help: "redis://host:port[/db]",
  another: "redis://host:6379",
  parse(text) {
    if (/\s/.test(text) || /^rediss?:\/\/$/i.test(text)) throw new StoreUrlError(redactUrl(text));
    parseRedisUrl(text);
    return { type: "redis", url: text };
  },
  async open(location, options) {
    const { RedisStore } = await import("./redis-store.js");
    return RedisStore.open(location.url, { clock: options.clock, connectTimeoutMs: options.connectTimeoutMs });
  },
};
