import { readFileSync } from "node:fs";
import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair, parseDocument } from "yaml";
import { parseRoutePattern } from "../../proxy/route-rules.js";
import { RuntimeError, UsageError } from "../errors.js";
import { describeFileError } from "../file-errors.js";
import type { PlacedText } from "../limit-options.js";
import { nearestName } from "../mistyped-command.js";
import type { ProxyFlags } from "./options.js";
import { parseRouteFlag, parseRouteItems, ROUTE_ITEMS, RouteItemError, type RouteRuleConfig } from "./route-options.js";

// `--config tbucket.yaml` (or .json, which is YAML too): the proxy's flags as keys, their names
// without the dashes, values as the flags take them; `routes` a list of rules. Read with the yaml
// package, which gives every node's place, so that each mistake names the file, its line and the key.

/** How a key's value becomes a flag's: one text, a list of texts, or a list keeping its place among the limits. */
type KeyKind = "text" | "list" | "placed" | "cidrs";

/** Every key the file takes, and the flag it stands for. */
const KEYS: Record<string, { flag: keyof ProxyFlags; kind: KeyKind }> = {
  listen: { flag: "listen", kind: "text" },
  to: { flag: "to", kind: "text" },
  per: { flag: "per", kind: "text" },
  rate: { flag: "rate", kind: "placed" },
  burst: { flag: "burst", kind: "list" },
  window: { flag: "window", kind: "placed" },
  concurrency: { flag: "concurrency", kind: "placed" },
  total: { flag: "total", kind: "list" },
  "total-burst": { flag: "totalBurst", kind: "list" },
  class: { flag: "class", kind: "list" },
  "route-class": { flag: "routeClass", kind: "list" },
  "class-from": { flag: "classFrom", kind: "text" },
  "default-class": { flag: "defaultClass", kind: "text" },
  policy: { flag: "policy", kind: "text" },
  "max-wait": { flag: "maxWait", kind: "text" },
  "trust-proxy": { flag: "trustProxy", kind: "cidrs" },
  "ipv6-prefix": { flag: "ipv6Prefix", kind: "text" },
  "body-rate": { flag: "bodyRate", kind: "text" },
  "max-keys": { flag: "maxKeys", kind: "text" },
  "access-log": { flag: "accessLog", kind: "text" },
  drain: { flag: "drain", kind: "text" },
  metrics: { flag: "metrics", kind: "text" },
  key: { flag: "key", kind: "text" },
  store: { flag: "store", kind: "text" },
  "on-store-error": { flag: "onStoreError", kind: "text" },
  up: { flag: "up", kind: "text" },
  down: { flag: "down", kind: "text" },
  "idle-timeout": { flag: "idleTimeout", kind: "text" },
  connections: { flag: "connections", kind: "text" },
};

/** The keys of a rule in `routes`: `match`, then its items. */
const ROUTE_KEYS = ["match", ...ROUTE_ITEMS];

/** Where a value came from in the file: for a mistake found later, when the flags are checked. */
export interface ConfigPlace {
  line: number;
  key: string;
}

export interface ConfigFile {
  path: string;
  flags: ProxyFlags;
  /** Each flag the file gave, by its name as a flag (`--rate`), with its place. */
  places: Map<string, ConfigPlace>;
}

/** Limits of the file are placed after any of the command line's, in the file's order. */
const FILE_POSITIONS = 1_000_000;

/**
 * Reads and checks `path`'s keys and values' types (the values' meaning is
 * checked with the flags'); a file that cannot be read is a RuntimeError, any
 * mistake in it a UsageError `FILE:LINE: KEY: why; what to write`.
 */
export function readProxyConfig(path: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new RuntimeError(`--config ${describeFileError(path, error as NodeJS.ErrnoException)}`);
  }
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines });
  const syntax = document.errors[0];
  if (syntax) {
    const line = syntax.linePos?.[0];
    const why = syntax.message.replace(/ at line \d+, column \d+:?[\s\S]*$/, "").split("\n")[0];
    throw new UsageError(`${path}:${line ? `${line.line}:${line.col}` : "1"}: ${why}; fix the YAML (or JSON) there`);
  }
  const lineOf = (node: Node | Pair | null | undefined): number => {
    const range = node && "range" in node ? node.range : node && "key" in node && isScalar(node.key) ? node.key.range : undefined;
    return range ? lines.linePos(range[0]).line : 1;
  };
  const fail = (node: Node | null | undefined, key: string, why: string): never => {
    throw new UsageError(`${path}:${lineOf(node)}: ${key}: ${why}`);
  };
  const flags: ProxyFlags = {};
  const places = new Map<string, ConfigPlace>();
  const contents = document.contents;
  if (contents === null) return { path, flags, places };
  if (!isMap(contents)) throw new UsageError(`${path}:${lineOf(contents)}: is not a mapping of keys; write one key a line, e.g. "listen: 8080" and "to: http://127.0.0.1:3000"`);
  let position = FILE_POSITIONS;
  for (const pair of contents.items) {
    const keyNode = pair.key as Node;
    const name = isScalar(keyNode) ? String(keyNode.value) : "";
    const line = lineOf(keyNode);
    const value = pair.value as Node | null;
    if (name === "routes") {
      flags.routeRules = readRoutes(value, keyNode, fail);
      places.set("--route", { line, key: "routes" });
      continue;
    }
    const known = KEYS[name];
    if (!known) {
      const nearest = nearestName(name, [...Object.keys(KEYS), "routes"]);
      throw new UsageError(
        `${path}:${line}: ${name}: is not a key of the proxy's config; ${nearest ? `did you mean "${nearest}"? ` : ""}the keys are the flags' names without "--" (listen, to, per, rate, burst, window, concurrency, total, class, routes, …)`,
      );
    }
    const texts = scalarsOf(value, keyNode, name, known.kind !== "text", fail);
    places.set(`--${name}`, { line, key: name });
    const record = flags as Record<string, unknown>;
    if (known.kind === "text") record[known.flag] = texts[0];
    else if (known.kind === "cidrs") record[known.flag] = texts.join(",");
    else if (known.kind === "list") record[known.flag] = texts;
    else record[known.flag] = texts.map((text): PlacedText => ({ text, position: position++ }));
  }
  return { path, flags, places };
}

type Fail = (node: Node | null | undefined, key: string, why: string) => never;

/** A value as the flags' texts: a string or a number, or (where a flag repeats) a list of them. */
function scalarsOf(value: Node | null, keyNode: Node, key: string, list: boolean, fail: Fail): string[] {
  if (list && isSeq(value)) {
    if (value.items.length === 0) fail(value, key, `is an empty list; give at least one value, or leave ${key} out`);
    return value.items.map((item) => scalarText(item as Node, key, fail));
  }
  if (value === null || (isScalar(value) && value.value === null)) return fail(keyNode, key, `has no value; e.g. ${EXAMPLES[key] ?? `"${key}: VALUE"`}`);
  return [scalarText(value, key, fail, list)];
}

function scalarText(node: Node, key: string, fail: Fail, list = true): string {
  if (isScalar(node) && (typeof node.value === "string" || typeof node.value === "number")) return String(node.value);
  const what = isScalar(node) ? `${JSON.stringify(node.value)} (${typeof node.value})` : isSeq(node) ? "a list" : "a mapping";
  return fail(node, key, `is ${what}; give ${list ? "a value or a list of values" : "one value"} as the flag takes it, e.g. ${EXAMPLES[key] ?? `"${key}: VALUE"`}`);
}

const EXAMPLES: Record<string, string> = {
  listen: `"listen: 8080"`,
  to: `"to: http://127.0.0.1:3000"`,
  rate: `"rate: 50/s"`,
  burst: `"burst: 10"`,
  window: `"window: 1000/h"`,
  concurrency: `"concurrency: 20"`,
  total: `"total: 2000/s"`,
  per: `"per: ip"`,
  class: `"class: [interactive=40/s, batch=10/s]"`,
  match: `"match: POST /login"`,
  cost: `"cost: 5"`,
};

/** `routes`: a list of rules, each a mapping (`match`, then limits, cost, class) or the --route flag's text. */
function readRoutes(value: Node | null, keyNode: Node, fail: Fail): RouteRuleConfig[] {
  if (!isSeq(value)) {
    return fail(value ?? keyNode, "routes", `is not a list; write one rule an item: "- match: POST /login" with "rate: 5/m" under it, or "- POST /login=5/m,burst=5"`);
  }
  return value.items.map((item, index) => {
    const where = `routes, rule ${index + 1}`;
    const node = item as Node;
    if (isScalar(node) && typeof node.value === "string") {
      try {
        return parseRouteFlag(node.value);
      } catch (error) {
        return fail(node, where, (error as Error).message.replace(/^--route "[^"]*": /, ""));
      }
    }
    if (!isMap(node)) return fail(node, where, `is not a rule; write "match: [METHOD ]PATH" and its limits under it, or the --route text "POST /login=5/m,burst=5"`);
    let match: { node: Node; text: string } | undefined;
    const items: Array<[string, string]> = [];
    const keyNodes = new Map<string, Node>();
    for (const pair of node.items) {
      const keyNode = pair.key as Node;
      const name = isScalar(keyNode) ? String(keyNode.value) : "";
      if (!ROUTE_KEYS.includes(name)) {
        const nearest = nearestName(name, ROUTE_KEYS);
        fail(keyNode, `${where}: ${name}`, `is not a key of a rule; ${nearest ? `did you mean "${nearest}"? ` : ""}a rule's keys are ${ROUTE_KEYS.join(", ")}`);
      }
      const [text] = scalarsOf(pair.value as Node | null, keyNode, name, false, (at, _key, why) => fail(at, `${where}: ${name}`, why));
      if (name === "match") match = { node: keyNode, text: text! };
      else {
        items.push([name, text!]);
        keyNodes.set(name, keyNode);
      }
    }
    if (!match) return fail(node, where, `has no match; add "match: [METHOD ]PATH", e.g. "match: POST /login" or "match: /api/*"`);
    let pattern;
    try {
      pattern = parseRoutePattern(match.text);
    } catch (error) {
      return fail(match.node, `${where}: match`, (error as Error).message);
    }
    try {
      return parseRouteItems(pattern, items);
    } catch (error) {
      if (!(error instanceof RouteItemError)) throw error;
      const at = error.item === undefined ? node : keyNodes.get(error.item);
      const message = error.item === undefined ? error.message.replace(/write "\[METHOD \]PATH=LIMITS".*$/, `a rule's keys are ${ROUTE_KEYS.join(", ")}`) : error.message;
      return fail(at, error.item === undefined ? where : `${where}: ${error.item}`, message);
    }
  });
}
