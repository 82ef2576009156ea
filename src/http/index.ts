/**
 * tbucket/http: a rate-limiting middleware for node:http, Express and Connect,
 * on the same token bucket as the rest of tbucket.
 */
export { rateLimit, type RateLimitOptions, type RateLimitMiddleware } from "./rate-limit.js";
