/** The summary for people; ../summary.ts builds it as data, which JSON prints as is. */

import { alignColumns, describeRate, describeSize, describeThroughput, exactSeconds, humanWait, percent, plural } from "../../core/format.js";
import type { LimitSummary, Summary } from "../summary.js";

/** The policy in words, with the x/time/rate call it mirrors. */
export function describePolicy(summary: Pick<Summary, "policy" | "maxWait">): string {
  if (summary.policy === "drop") return "drop (Allow)";
  return summary.maxWait === null ? "queue (Reserve)" : `queue (Reserve), max wait ${humanWait(summary.maxWait * 1000)}`;
}

export interface SummaryTextOptions {
  /** Why bad lines were skipped, shown after their count: the caller's name for `skipBad`. */
  skippedBecause?: string;
}

/** One limit of a set, and how often it bound: "rate 5/s, burst 10: refused 12, set 3 waits". */
export function describeLimitBound(limit: LimitSummary, unit: Summary["cost"], queue: boolean): string {
  let what: string;
  if (limit.kind === "bucket") what = `rate ${describeRate(unit, limit.rate)}, burst ${describeSize(unit, limit.burst)}`;
  else if (limit.kind === "window") what = `at most ${describeSize(unit, limit.n)} in any ${humanWait(limit.window * 1000)}`;
  else what = `at most ${limit.n} at once`;
  return `${what}: refused ${limit.refused}${queue ? `, set ${plural(limit.delayed, "wait")}` : ""}`;
}

/** The summary for people: one aligned line per figure. */
export function renderSummaryText(summary: Summary, options: SummaryTextOptions = {}): string {
  const unit = summary.cost;
  const lines: Array<[string, string]> = [];
  const share = (n: number) => (summary.events === 0 ? "" : `  (${percent(n / summary.events)})`);
  if (summary.limits.length > 1) {
    const sets = summary.perKey
      ? `one set per key${summary.maxKeys === null ? "" : `, at most ${summary.maxKeys}`}`
      : summary.classes
        ? `one set shared by ${summary.classes.length} classes`
        : "one set";
    lines.push(["limits", `${summary.limits.length}, admitted as one, ${describePolicy(summary)}, ${sets}`]);
    for (const limit of summary.limits) lines.push([`limit ${limit.limit}`, describeLimitBound(limit, unit, summary.policy === "queue")]);
  } else {
    const bucket = summary.perKey
      ? `one bucket per key${summary.maxKeys === null ? "" : `, at most ${summary.maxKeys}`}`
      : summary.classes
        ? `one bucket shared by ${summary.classes.length} classes`
        : "one bucket";
    lines.push(["bucket", `rate ${describeRate(unit, summary.rate)}, burst ${describeSize(unit, summary.burst)}, ${describePolicy(summary)}, ${bucket}`]);
  }
  const pace = summary.duration > 0 ? ` (${describeThroughput("count", summary.events / summary.duration)})` : "";
  lines.push(["arrivals", `${summary.events} over ${exactSeconds(summary.duration * 1000)}${pace}${summary.seed === null ? "" : `, seed ${summary.seed}`}`]);
  lines.push(["admitted", `${summary.admitted}${share(summary.admitted)}${unit === "bytes" ? `, ${describeSize("bytes", summary.admittedCost)}` : ""}`]);
  const first = summary.firstRefusedAt === null ? "" : `, the first at ${exactSeconds(summary.firstRefusedAt * 1000)}`;
  lines.push(["refused", `${summary.refused}${share(summary.refused)}${first}`]);
  if (summary.overBurst > 0) {
    lines.push(["over burst", `${summary.overBurst} arrivals cost more than the burst and can never be admitted`]);
  }
  if (summary.throughputOver > 0) {
    const until = summary.throughputOver > summary.duration ? `, until the last admitted one was served` : "";
    // Above the rate only by what the burst let through at once: say so, lest it read as a leak.
    const burst = summary.throughput > summary.rate && !summary.perKey ? ` (the burst included)` : "";
    lines.push(["throughput", `${describeThroughput(unit, summary.throughput)} admitted over ${exactSeconds(summary.throughputOver * 1000)}${until}${burst}`]);
  }
  if (summary.wait) {
    const w = summary.wait;
    const ms = (s: number) => humanWait(s * 1000);
    lines.push(["wait", `p50 ${ms(w.p50)}, p90 ${ms(w.p90)}, p99 ${ms(w.p99)}, max ${ms(w.max)}${w.exact ? "" : " (percentiles within 0.1%)"}`]);
    lines.push(["longest queue", `${summary.longestQueue} waiting at once`]);
  }
  if (summary.emptyShare !== null) lines.push(["bucket empty", `${percent(summary.emptyShare)} of the time`]);
  if (summary.keys) {
    const k = summary.keys;
    lines.push(["keys", `${k.seenExact ? "" : "about "}${k.seen} seen${summary.maxKeys === null ? "" : `, ${k.evicted} evictions`}`]);
    k.mostRefused.forEach((tally, index) => {
      lines.push([index === 0 ? "most refused" : "", `${tally.key}: ${tally.refused} of ${tally.arrived} refused`]);
    });
  }
  if (summary.classes) {
    summary.classes.forEach((c, index) => {
      const ceil = c.ceil === summary.rate ? "" : `, ceil ${describeRate(unit, c.ceil)}`;
      const weight = c.weight === c.rate ? "" : `, weight ${c.weight}`;
      const refused = summary.policy === "drop" || c.refused > 0 ? `, refused ${c.refused}` : "";
      const wait = c.wait === null ? "" : `, wait p50 ${humanWait(c.wait.p50 * 1000)}, max ${humanWait(c.wait.max * 1000)}`;
      lines.push([
        index === 0 ? "classes" : "",
        `${c.name} (${describeRate(unit, c.rate)}${ceil}, prio ${c.prio}${weight}): admitted ${c.admitted} of ${c.events}, ${percent(c.share)} of what was admitted, ${describeThroughput(unit, c.throughput)}${refused}${wait}`,
      ]);
    });
  }
  if (summary.trace) {
    const t = summary.trace;
    if (t.skipped > 0) {
      const because = options.skippedBecause === undefined ? "" : ` (${options.skippedBecause})`;
      lines.push(["skipped", `${plural(t.skipped, "bad line")}${because}`]);
      for (const example of t.skippedExamples) lines.push(["", example]);
    }
    if (t.outOfOrder > 0) lines.push(["out of order", `${t.outOfOrder} events earlier than the one before, taken at its time`]);
  }
  // A continuation line has no label, and a figure may be empty: no line ends in spaces.
  return alignColumns(lines).map((line) => line.trimEnd()).join("\n") + "\n";
}
