import type { RateKind } from "./units.js";

/** What a byte bucket at an unlimited rate holds: enough for large writes, not a size anyone chose. */
const UNLIMITED_BYTE_BURST = 1024 * 1024;

/**
 * The burst a bucket gets when none is given: 100 ms of a byte rate (at least
 * one byte), so output stays smooth; one token for a count rate, so launches
 * and lines are evenly spaced.
 */
export function defaultBurst(kind: RateKind, rate: number): number {
  if (kind === "count") return 1;
  if (rate === Infinity) return UNLIMITED_BYTE_BURST;
  return Math.max(1, Math.floor(rate / 10));
}
