import type { RequestLimit } from "../http/request-limiter.js";

/**
 * The proxy's rules per route (`--route "[METHOD ]PATH=LIMITS"`, or `routes`
 * in a config file): the first rule a request matches gives it its limits,
 * its cost and its class; a request matching none has the proxy's own. The
 * pattern is that of --route-class: PATH is matched against the path without
 * its query, a trailing `*` matching every path that starts with what comes
 * before it; METHOD, when given, must be the request's (GET also HEAD).
 */
export interface RoutePattern {
  method: string | undefined;
  path: string;
  prefix: boolean;
}

export interface RouteRule extends RoutePattern {
  /** Its own limits, counted apart from the default's and every other rule's; undefined: the proxy's own limits, in the same keys. */
  limits?: readonly RequestLimit[];
  /** What a request costs of each rate and window (default 1). */
  cost?: number;
  /** The class its requests are of (with classes). */
  className?: string;
}

const METHOD = /^[A-Z]+$/;

/** `[METHOD ]PATH` as a pattern; an Error saying what to write for one that is not. */
export function parseRoutePattern(text: string): RoutePattern {
  const words = text.trim().split(/\s+/);
  const [method, path] = words.length === 2 ? [words[0]!, words[1]!] : [undefined, words[0] ?? ""];
  if (words.length > 2 || (method !== undefined && !METHOD.test(method))) {
    throw new Error(`"${words.slice(0, -1).join(" ")}" is not a method; write "[METHOD ]PATH" with METHOD in capitals, e.g. "POST /login"`);
  }
  if (!path.startsWith("/")) throw new Error(`the path "${path}" does not start with "/"; e.g. "/api/*" or "POST /login"`);
  const prefix = path.endsWith("*");
  return { method, path: prefix ? path.slice(0, -1) : path, prefix };
}

/** `POST /login`, `/api/*`: a pattern as it is written. */
export function describeRoutePattern(pattern: RoutePattern): string {
  return `${pattern.method === undefined ? "" : `${pattern.method} `}${pattern.path}${pattern.prefix ? "*" : ""}`;
}

/** The path of a request target, without its query. */
export function requestPath(url: string | undefined): string {
  if (url === undefined) return "/";
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

/** Whether a request of `method` to `path` (no query) matches `pattern`. */
export function matchesRoute(pattern: RoutePattern, method: string | undefined, path: string): boolean {
  if (pattern.method !== undefined && pattern.method !== method && !(pattern.method === "GET" && method === "HEAD")) return false;
  return pattern.prefix ? path.startsWith(pattern.path) : path === pattern.path;
}

/** The index of the first of `rules` that `method` and `url` match; -1 when none does. */
export function findRoute(rules: readonly RoutePattern[], method: string | undefined, url: string | undefined): number {
  const path = requestPath(url);
  for (let i = 0; i < rules.length; i++) if (matchesRoute(rules[i]!, method, path)) return i;
  return -1;
}
