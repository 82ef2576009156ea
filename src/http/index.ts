/**
 * tbucket/http: rate limiting for node:http, Express and Connect, on the same
 * token bucket as the rest of tbucket, with per-client buckets, an honest
 * Retry-After, and shared stores for limits that several servers enforce together.
 */
export {
  ClassFunctionError,
  DEFAULT_MAX_KEYS,
  type GateDecision,
  type GateResult,
  KeyFunctionError,
  type LimitLevel,
  type LimitOptions,
  type MaybePromise,
  rateLimit,
  type RateLimitMiddleware,
  type RateLimitOptions,
  type RefusalMessage,
  RequestFunctionError,
  type RequestLimit,
} from "./rate-limit.js";
export type { StoreBuckets } from "./store-limiters.js";
export type { ClassSpec } from "../core/class-spec.js";
export { clientAddress, TrustedProxies, TrustProxyError } from "./trusted-proxies.js";
export { rateLimitPolicy, rateLimitState, retryAfterSeconds } from "./rate-limit-fields.js";
export { openStore, type RedisClientLike, redisStore } from "./open-store.js";
export { type BucketStore, StoreError } from "../store/bucket-store.js";
export type { LimitSetStore } from "../store/limit-set-store.js";
