/**
 * tbucket as a library: the token bucket the CLI is built on, sets of limits
 * admitted as one, a Node stream that throttles bytes or lines through a
 * bucket, clocks, and the unit grammar.
 */
export { type Clock, FakeClock, systemClock, MAX_TIMER_MS } from "./core/clock.js";
export type { Limiter } from "./core/limiter.js";
export {
  every,
  ExceedsBurstError,
  ExceedsDeadlineError,
  Reservation,
  type ReservationRecord,
  TokenBucket,
  type TokenBucketOptions,
} from "./core/token-bucket.js";
export { LimitReservation, LimitSet } from "./core/limit-set.js";
export type { BucketSpec, ConcurrencySpec, CostUnit, Costs, LimitSpec, WindowSpec } from "./core/limit-spec.js";
export { SlidingWindow } from "./core/sliding-window.js";
export {
  formatByteRate,
  formatByteSize,
  formatCountRate,
  formatDuration,
  parseAnyRate,
  parseAnyWindow,
  parseByteRate,
  parseByteSize,
  parseCount,
  parseCountRate,
  parseDuration,
  type ParsedRate,
  type ParsedWindow,
  parseWindowOfKind,
  type RateKind,
  UnitError,
} from "./core/units.js";
export { type CostMode, ThrottleStream, type ThrottleStats, type ThrottleStreamOptions } from "./stream/throttle-stream.js";
