import { describeRate, humanDuration } from "../../core/format.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import { formatHostPort } from "../../proxy/host-port.js";
import { describeHttpScope } from "../../proxy/key-scopes.js";
import { describeRoutePattern } from "../../proxy/route-rules.js";
import type { ParsedLimit } from "../limit-options.js";
import type { ProxyConfig } from "./options.js";

/**
 * What `--check-config` prints: where the proxy would listen and forward, the
 * default limits, the total, and what each rule resolves to, in the order
 * they are tried (the first match wins), limits in requests per second.
 */
export function describeCheckedConfig(config: ProxyConfig, file: string | undefined): string {
  const lines = [`${file === undefined ? "flags" : file}: ok`];
  if (config.mode === "tcp") {
    lines.push(`listen ${formatHostPort(config.listen)}, to ${formatHostPort(config.to)} (TCP, per ${config.per})`);
    return `${lines.join("\n")}\n`;
  }
  lines.push(`listen ${formatHostPort(config.listen)}, to ${config.target} (HTTP, per ${describeHttpScope(config.per)}${config.policy === "queue" ? `, queue up to ${humanDuration(config.maxWaitMs ?? 0)}` : ""})`);
  const ownLimits: ParsedLimit[] =
    config.limits ?? (config.requestsPerSecond === Infinity ? [] : [{ spec: { kind: "bucket", unit: "count", rate: config.requestsPerSecond, burst: config.burst ?? 1 }, flag: "", burstGiven: false }]);
  lines.push(`default: ${describeLimits(ownLimits)}${config.classes ? `; classes ${config.classes.specs.map((spec) => spec.name).join(", ")}, default ${config.classes.defaultClass}` : ""}`);
  if (config.total) lines.push(`total: ${describeLimits(config.total)} (every request together, rules' too)`);
  config.routes.forEach((rule, index) => {
    const method = rule.pattern.method === undefined ? "any method" : rule.pattern.method === "GET" ? "GET and HEAD" : rule.pattern.method;
    const path = rule.pattern.prefix ? `paths starting ${rule.pattern.path}` : `path ${rule.pattern.path}`;
    const limits = rule.limits ? `${describeLimits(rule.limits)} (keys apart: route${index + 1}:<client>)` : "the default's limits (in its keys)";
    const parts = [limits, `cost ${rule.cost ?? 1}`, ...(rule.className === undefined ? [] : [`class ${rule.className}`])];
    lines.push(`rule ${index + 1}: ${describeRoutePattern(rule.pattern)} (${method}, ${path}): ${parts.join("; ")}`);
  });
  if (config.routes.length > 0) lines.push(`other requests: the default`);
  return `${lines.join("\n")}\n`;
}

/** `5/s, burst 5 and 1000 in 1h00m00s and 4 at once`: a set in resolved units. */
function describeLimits(limits: readonly ParsedLimit[]): string {
  if (limits.length === 0) return "unlimited";
  return limits.map(({ spec }) => describeLimit(spec)).join(" and ");
}

function describeLimit(spec: LimitSpec): string {
  if (spec.kind === "bucket") return spec.rate === Infinity ? "unlimited" : `${describeRate("count", spec.rate)}, burst ${spec.burst}`;
  if (spec.kind === "window") return `${spec.n} in any ${humanDuration(spec.windowMs)}`;
  return `${spec.n} at once`;
}
