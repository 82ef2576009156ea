/**
 * tbucket as a library: the token bucket the CLI is built on, sets of limits
 * admitted as one, a Node stream that throttles bytes or lines through a
 * bucket, clocks, and the unit grammar.
 */
/** The injected clock: the system's, or a FakeClock whose time moves only when told. */
export { type Clock, FakeClock, systemClock, MAX_TIMER_MS } from "./core/clock.js";
/** What a stream or a runner waits on: a TokenBucket, a LimitSetLimiter, or a shared bucket. */
export type { Limiter } from "./core/limiter.js";
/** One token bucket with golang.org/x/time/rate's semantics, and its reservations. */
export {
  every,
  ExceedsBurstError,
  ExceedsDeadlineError,
  Reservation,
  type ReservationRecord,
  TokenBucket,
  type TokenBucketOptions,
} from "./core/token-bucket.js";
/**
 * A set of limits on one key admitted as one (LimitSet, with explicit time),
 * and what a reservation on it holds (LimitReservation: when to act, which
 * limits bound, to cancel, settle or release).
 */
export { LimitReservation, LimitSet } from "./core/limit-set.js";
/** A private LimitSet behind the Limiter interface, so a ThrottleStream or a runner waits on a set as on one bucket. */
export { LimitSetLimiter } from "./core/limit-set-limiter.js";
/** Classes under a key's set (DESIGN section 12): a guarantee and a ceiling each, the rest lent by prio, then weight; explicit time. */
export { ClassScheduler, type ClassSchedulerOptions } from "./core/class-scheduler.js";
export { type ClassSpec, ClassDefinitionError, UnknownClassError } from "./core/class-spec.js";
/** The limits of a set as data (bucket, window, concurrency), and an item's cost in each unit. */
export type { BucketSpec, ConcurrencySpec, CostUnit, Costs, LimitSpec, WindowSpec } from "./core/limit-spec.js";
/** At most n units in any interval of a given length, sliding and exact: the window limit on its own. */
export { SlidingWindow } from "./core/sliding-window.js";
/** The unit grammar: rates, sizes, durations and windows parsed from text, and formatted back. */
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
/** A Node Transform that passes bytes or lines through a Limiter no faster than it allows. */
export { type CostMode, ThrottleStream, type ThrottleStats, type ThrottleStreamOptions } from "./stream/throttle-stream.js";
