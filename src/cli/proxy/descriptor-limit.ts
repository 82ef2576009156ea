import { readFileSync } from "node:fs";

/** Descriptors kept aside for the listener, the store, metrics, logs and Node itself. */
const RESERVED_DESCRIPTORS = 64;

/**
 * How many TCP connections this process can hold: each takes two descriptors
 * (the client's and the backend's), out of the soft "Max open files" limit
 * (`ulimit -n`), less a reserve. Infinity where the limit cannot be read
 * (not Linux): the proxy then takes connections until the system refuses.
 */
export function connectionsWithinDescriptorLimit(limitsText = readLimits()): number {
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(limitsText ?? "");
  if (!match || match[1] === "unlimited") return Infinity;
  return Math.max(1, Math.floor((Number(match[1]) - RESERVED_DESCRIPTORS) / 2));
}

function readLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}
