import type { IncomingMessage, ServerResponse } from "node:http";
import type { Clock } from "../core/clock.js";
import type { Limiter } from "../core/limiter.js";

export interface RateLimitOptions {
  /** Requests per second per key; Infinity for no limit. */
  rate: number;
  /** Requests a key may make at once after being idle. */
  burst: number;
  /** The key of a request; default its client address (with `trustProxy`). Return undefined to let it through unlimited. */
  key?: (req: IncomingMessage) => string | undefined;
  /** CIDRs whose X-Forwarded-For / Forwarded are believed for the default key. */
  trustProxy?: readonly string[];
  /** `drop` (default): 429 at once; `queue`: wait up to `maxWaitMs`. */
  policy?: "drop" | "queue";
  maxWaitMs?: number;
  /** The most keys held; least recently used evicted; default 100,000. */
  maxKeys?: number;
  /** Send RateLimit-Policy / RateLimit on every response (default true); 429s always carry Retry-After. */
  headers?: boolean;
  /** Buckets from elsewhere (a shared store): called once per key while the key is held. */
  limiter?: (key: string) => Limiter | Promise<Limiter>;
  clock?: Clock;
}

export type RateLimitMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** The middleware; see RateLimitOptions. */
export function rateLimit(options: RateLimitOptions): RateLimitMiddleware {
  void options;
  throw new Error("rateLimit: not yet");
}
