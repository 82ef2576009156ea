/**
 * tbucket/http: rate limiting for node:http, Express and Connect, on the same
 * token bucket as the rest of tbucket, with per-client buckets, an honest
 * Retry-After, and shared stores for limits that several servers enforce together.
 */
export * from "./limit-exports.js";
export { rateLimit, type RateLimitMiddleware, type RateLimitOptions } from "./rate-limit.js";
export { clientAddress, TrustedProxies, TrustProxyError } from "./trusted-proxies.js";
export { rateLimitPolicy, rateLimitState, retryAfterSeconds } from "./rate-limit-fields.js";
export { type BucketStore, StoreError } from "../store/bucket-store.js";
export type { LimitSetStore } from "../store/limit-set-store.js";
