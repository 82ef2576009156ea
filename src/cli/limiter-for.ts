import type { Limiter } from "../core/limiter.js";
import { TokenBucket } from "../core/token-bucket.js";
import type { RateKind } from "../core/units.js";
import type { SharedBucketOptions } from "./shared-options.js";

export interface LimiterRequest {
  /** What one token is: a byte or a count (a line, a launch). */
  kind: RateKind;
  /** Tokens per second, when given on the command line. */
  rate?: number;
  /** Capacity, when given on the command line. */
  burst?: number;
  /** The default burst for a rate, when none is given. */
  defaultBurst(rate: number): number;
  shared: SharedBucketOptions;
  /** Who asks: what stops when a shared store is lost, for the message (a stream, or launches). */
  command: "pipe" | "run";
}

export interface OpenLimiter {
  limiter: Limiter;
  /** Releases what the limiter holds (store connections, timers). */
  close(): Promise<void>;
}

/** A private bucket, or with --key the shared one from the store (loaded only then). */
export async function openLimiter(request: LimiterRequest): Promise<OpenLimiter> {
  if (request.shared.key !== undefined) {
    const { openSharedLimiter } = await import("./shared-limiter.js");
    return openSharedLimiter(request);
  }
  if (request.rate === undefined) throw new Error("openLimiter: a private bucket needs a rate");
  const burst = request.burst ?? request.defaultBurst(request.rate);
  return { limiter: new TokenBucket({ rate: request.rate, burst }), close: async () => {} };
}
