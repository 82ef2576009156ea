import { defaultBurst } from "../../core/default-burst.js";
import { parseCount, parseCountRate, parseSizeOfKind, parseWindowOfKind, rateKindOf } from "../../core/units.js";
import { describeRoutePattern, parseRoutePattern, type RoutePattern } from "../../proxy/route-rules.js";
import { UsageError } from "../errors.js";
import type { ParsedLimit } from "../limit-options.js";

/** One rule per route as the command line or a config file gives it (see src/proxy/route-rules.ts). */
export interface RouteRuleConfig {
  pattern: RoutePattern;
  /** Its own limits, in the order written; undefined: the proxy's own, in the same keys. */
  limits: ParsedLimit[] | undefined;
  cost: number | undefined;
  className: string | undefined;
}

/** A rule's items by name; a bare first item of the flag form is its rate. */
export const ROUTE_ITEMS = ["rate", "burst", "window", "concurrency", "cost", "class"] as const;
export type RouteItemName = (typeof ROUTE_ITEMS)[number];

export const ROUTE_FORM = `"[METHOD ]PATH=LIMITS", LIMITS a RATE then any of burst=N, window=N/D, concurrency=N, cost=N, class=NAME, e.g. "POST /login=5/m,burst=5"`;

/** A mistake in one item of a rule: which, and why (with what to write). */
export class RouteItemError extends Error {
  constructor(
    readonly item: string | undefined,
    message: string,
  ) {
    super(message);
    this.name = "RouteItemError";
  }
}

/** `--route "[METHOD ]PATH=LIMITS"`; every mistake a UsageError naming the flag's value and the item. */
export function parseRouteFlag(text: string): RouteRuleConfig {
  const where = `--route "${text}"`;
  const equals = text.indexOf("=");
  if (equals < 0) throw new UsageError(`${where}: gives no limits; write ${ROUTE_FORM}`);
  let pattern: RoutePattern;
  try {
    pattern = parseRoutePattern(text.slice(0, equals));
  } catch (error) {
    throw new UsageError(`${where}: ${(error as Error).message}`);
  }
  const items: Array<[string, string]> = text
    .slice(equals + 1)
    .split(",")
    .map((part, index) => {
      const item = part.trim();
      const at = item.indexOf("=");
      // A bare first item is the rate ("5/m"); `cost=2` alone is a rule of the default's limits.
      if (at < 0) return index === 0 ? ["rate", item] : [item, ""];
      return [item.slice(0, at).trim(), item.slice(at + 1).trim()];
    });
  try {
    return parseRouteItems(pattern, items);
  } catch (error) {
    if (!(error instanceof RouteItemError)) throw error;
    throw new UsageError(`${where}: ${error.item === undefined ? "" : `${error.item}: `}${error.message}`);
  }
}

/** A rule from its pattern and items (name, value) in order; a RouteItemError for a mistake. */
export function parseRouteItems(pattern: RoutePattern, items: ReadonlyArray<readonly [string, string]>): RouteRuleConfig {
  const seen = new Map<string, string>();
  for (const [name, value] of items) {
    if (!(ROUTE_ITEMS as readonly string[]).includes(name)) {
      throw new RouteItemError(undefined, `"${name}" is not an item of a rule; write ${ROUTE_FORM}`);
    }
    if (seen.has(name)) throw new RouteItemError(name, `given twice; give it once`);
    if (value === "") throw new RouteItemError(name, `has no value; e.g. ${ITEM_EXAMPLES[name as RouteItemName]}`);
    seen.set(name, value);
  }
  if (seen.size === 0) throw new RouteItemError(undefined, `gives nothing; write ${ROUTE_FORM}`);
  const limits: ParsedLimit[] = [];
  for (const [name, value] of seen) {
    const parse = <T>(read: (text: string) => T): T => {
      try {
        return read(value);
      } catch (error) {
        throw new RouteItemError(name, (error as Error).message);
      }
    };
    if (name === "rate") {
      const rate = parse((text) => {
        if (rateKindOf(text) === "bytes") throw new Error(`"${text}" is a byte rate; a rule counts requests ("5/m", "10/s")`);
        return parseCountRate(text);
      });
      const burstText = seen.get("burst");
      const burst = burstText === undefined ? defaultBurst("count", rate) : parseItem("burst", burstText, (text) => parseSizeOfKind("count", text));
      limits.push({ spec: { kind: "bucket", unit: "count", rate, burst }, flag: `rate ${value}${burstText === undefined ? "" : `, burst ${burstText}`}`, burstGiven: burstText !== undefined });
    } else if (name === "window") {
      const { n, windowMs } = parse((text) => {
        if (rateKindOf(text) === "bytes") throw new Error(`"${text}" is a window of bytes; a rule counts requests ("1000/h")`);
        return parseWindowOfKind("count", text);
      });
      limits.push({ spec: { kind: "window", unit: "count", n, windowMs }, flag: `window ${value}`, burstGiven: false });
    } else if (name === "concurrency") {
      limits.push({ spec: { kind: "concurrency", n: parse((text) => parseCount(text)) }, flag: `concurrency ${value}`, burstGiven: false });
    }
  }
  if (seen.has("burst") && !seen.has("rate")) throw new RouteItemError("burst", `sizes the rule's rate, and it has none; add one, e.g. "${describeRoutePattern(pattern)}=5/m,burst=${seen.get("burst")}"`);
  const costText = seen.get("cost");
  const cost =
    costText === undefined
      ? undefined
      : parseItem("cost", costText, (text) => {
          const n = Number(text);
          if (!/^\d+(\.\d+)?$/.test(text) || !Number.isFinite(n)) throw new Error(`"${text}" is not a number of requests; e.g. cost=5 (each request takes 5 of every rate and window)`);
          return n;
        });
  const className = seen.get("class");
  if (className !== undefined && !/^[A-Za-z0-9_.-]+$/.test(className)) throw new RouteItemError("class", `"${className}" is not a class name; give one of the --class names, e.g. class=interactive`);
  return { pattern, limits: limits.length > 0 ? limits : undefined, cost, className };
}

const ITEM_EXAMPLES: Record<RouteItemName, string> = {
  rate: "rate=5/m",
  burst: "burst=5",
  window: "window=1000/h",
  concurrency: "concurrency=4",
  cost: "cost=5",
  class: "class=interactive",
};

function parseItem<T>(name: string, value: string, read: (text: string) => T): T {
  try {
    return read(value);
  } catch (error) {
    throw new RouteItemError(name, (error as Error).message);
  }
}
