import { findRoute } from "./route-rules.js";

/**
 * The proxy's classes by route (`--route-class "[METHOD ]PATH=CLASS"`): the
 * first route a request matches names its class. PATH is matched against
 * the request's path without its query; a PATH ending in `*` matches every
 * path that starts with what comes before it. METHOD, when given, must be
 * the request's (GET also matching HEAD, as servers route them).
 */
export interface ClassRoute {
  method: string | undefined;
  path: string;
  prefix: boolean;
  className: string;
}

const METHOD = /^[A-Z]+$/;

/** One `--route-class` value as a route; an Error saying what to write for one that is not. */
export function parseClassRoute(text: string): ClassRoute {
  const equals = text.lastIndexOf("=");
  if (equals < 0) throw new Error(`"${text}" names no class; write "[METHOD ]PATH=CLASS", e.g. "/search*=interactive" or "POST /upload=bulk"`);
  const className = text.slice(equals + 1).trim();
  const route = text.slice(0, equals).trim().split(/\s+/);
  const [method, path] = route.length === 2 ? [route[0]!, route[1]!] : [undefined, route[0] ?? ""];
  if (route.length > 2 || (method !== undefined && !METHOD.test(method))) {
    throw new Error(`"${text}": "${route.slice(0, -1).join(" ")}" is not a method; write "[METHOD ]PATH=CLASS" with METHOD in capitals, e.g. "POST /upload=bulk"`);
  }
  if (!path.startsWith("/")) throw new Error(`"${text}": the path "${path}" does not start with "/"; e.g. "/search*=interactive"`);
  const prefix = path.endsWith("*");
  return { method, path: prefix ? path.slice(0, -1) : path, prefix, className };
}

/** The class of the first route that `method` and `url` match; undefined when none does. */
export function routeClass(routes: readonly ClassRoute[], method: string | undefined, url: string | undefined): string | undefined {
  const index = findRoute(routes, method, url);
  return index < 0 ? undefined : routes[index]!.className;
}
