import { RuntimeError } from "./errors.js";
import type { LimiterRequest, OpenLimiter } from "./limiter-for.js";

/** A limiter backed by a shared bucket in a store. */
export async function openSharedLimiter(_request: LimiterRequest): Promise<OpenLimiter> {
  throw new RuntimeError("--key: shared buckets are not built yet");
}
