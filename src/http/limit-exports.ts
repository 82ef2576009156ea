/** What every binding of the limit exports beside its own `rateLimit` (tbucket/fetch, tbucket/fastify): its types, errors and stores. */
export type { GateDecision, GateResult } from "./request-gate.js";
export type { LimitLevel } from "./key-set.js";
export type { StoreBuckets } from "./store-limiters.js";
export { openStore, type RedisClientLike, redisStore } from "./open-store.js";
export type { ClassSpec } from "../core/class-spec.js";
export {
  ClassFunctionError,
  DEFAULT_MAX_KEYS,
  KeyFunctionError,
  type LimitOptions,
  type MaybePromise,
  type RefusalMessage,
  RequestFunctionError,
  type RequestLimit,
} from "./request-limiter.js";
