import type { Clock } from "../core/clock.js";
import { TokenBucket } from "../core/token-bucket.js";
import type { BucketConfig, StoreReservation, TakeOptions, TakeResult } from "./bucket-store.js";

/**
 * A bucket as a store keeps it: the settings, the level and when the level
 * was last brought up to date (ms on the store's clock). The memory and SQLite
 * stores run the core TokenBucket over this record, so their answers are the
 * core's answers; the Redis script re-expresses the same formulas in Lua.
 */
export interface StoredBucket extends BucketConfig {
  tokens: number;
  lastMs: number;
}

/** A TokenBucket standing at the stored record; it is only ever asked with explicit times. */
function bucketOf(stored: StoredBucket): TokenBucket {
  const clock: Clock = { now: () => stored.lastMs, sleep: () => Promise.resolve() };
  return new TokenBucket({ rate: stored.rate, burst: stored.burst, tokens: Math.min(stored.tokens, stored.burst), clock });
}

/** The record after the bucket moved to `nowMs` (clamped: never before `lastMs`). */
function recordOf(stored: StoredBucket, bucket: TokenBucket, nowMs: number): StoredBucket {
  const lastMs = Math.max(nowMs, stored.lastMs);
  return { rate: bucket.rate, burst: bucket.burst, kind: stored.kind, tokens: bucket.tokensAt(lastMs), lastMs };
}

/** The level at `nowMs`, without changing anything. */
export function levelAt(stored: StoredBucket, nowMs: number): number {
  return bucketOf(stored).tokensAt(nowMs);
}

/** Reserve `n` at `nowMs`: the answer, and the record to store (undefined: unchanged). */
export function takeAt(
  stored: StoredBucket,
  nowMs: number,
  n: number,
  options: TakeOptions = {},
): { result: TakeResult; next: StoredBucket | undefined } {
  const bucket = bucketOf(stored);
  const settings = { rate: stored.rate, burst: stored.burst, kind: stored.kind };
  if (options.overBurst && n > stored.burst) {
    // A lease larger than the burst: back-to-back reservations of at most the burst each.
    let waitMs = 0;
    for (let left = n; left > 0; left -= stored.burst) waitMs = bucket.reserveAt(nowMs, Math.min(left, stored.burst)).waitMs;
    const next = recordOf(stored, bucket, nowMs);
    return { result: { ok: true, waitMs, timeToActMs: next.lastMs + waitMs, tokens: next.tokens, ...settings }, next };
  }
  const reservation = bucket.reserveAt(nowMs, n, options.maxWaitMs ?? Infinity);
  if (!reservation.ok) {
    return { result: { ok: false, waitMs: Infinity, timeToActMs: Infinity, tokens: bucket.tokensAt(nowMs), ...settings }, next: undefined };
  }
  const next = recordOf(stored, bucket, nowMs);
  return { result: { ok: true, waitMs: reservation.waitMs, timeToActMs: next.lastMs + reservation.waitMs, tokens: next.tokens, ...settings }, next };
}

/**
 * Cancels a reservation at `nowMs`, as TokenBucket's cancelAt does: the
 * stored debt stands for the reservations due until it is repaid, so those
 * made after this one keep their tokens. The tokens given back, and the
 * record to store (undefined: unchanged).
 */
export function cancelAt(stored: StoredBucket, nowMs: number, reservation: StoreReservation): { restored: number; next: StoredBucket | undefined } {
  const bucket = bucketOf(stored);
  const before = bucket.tokensAt(nowMs);
  // Reservations are given back at the rate the debt is repaid at now.
  bucket.cancelAt(nowMs, { ok: true, tokens: reservation.n, timeToActMs: reservation.timeToActMs, rate: stored.rate });
  const next = recordOf(stored, bucket, nowMs);
  const restored = next.tokens - before;
  return restored > 0 ? { restored, next } : { restored: 0, next: undefined };
}

/**
 * Applies a configuration at `nowMs`, as TokenBucket's setRateAt and
 * setBurstAt do; a new bucket, or one whose kind changes, starts full.
 */
export function configureAt(stored: StoredBucket | undefined, nowMs: number, config: BucketConfig): StoredBucket {
  if (!stored || stored.kind !== config.kind) return { ...config, tokens: config.burst, lastMs: nowMs };
  const bucket = bucketOf(stored);
  bucket.setRateAt(nowMs, config.rate);
  bucket.setBurstAt(nowMs, config.burst);
  return recordOf(stored, bucket, nowMs);
}
