import { describe, expect, it } from "vitest";
import { describeRoutePattern, findRoute, parseRoutePattern, requestPath } from "../../src/proxy/route-rules.js";

describe("route rules: patterns and the first match", () => {
  it("reads [METHOD ]PATH, a trailing * for a prefix", () => {
    expect(parseRoutePattern("POST /login")).toEqual({ method: "POST", path: "/login", prefix: false });
    expect(parseRoutePattern(" /api/* ")).toEqual({ method: undefined, path: "/api/", prefix: true });
    expect(describeRoutePattern(parseRoutePattern("GET /search*"))).toBe("GET /search*");
  });

  it("says what to write for a pattern it cannot read", () => {
    expect(() => parseRoutePattern("post /login")).toThrow(`"post" is not a method; write "[METHOD ]PATH" with METHOD in capitals, e.g. "POST /login"`);
    expect(() => parseRoutePattern("POST GET /login")).toThrow(`"POST GET" is not a method;`);
    expect(() => parseRoutePattern("login")).toThrow(`the path "login" does not start with "/"; e.g. "/api/*" or "POST /login"`);
  });

  it("finds the first rule that the method and the path (without its query) match", () => {
    const rules = ["POST /login", "/login*", "GET /health", "/*"].map(parseRoutePattern);
    expect(findRoute(rules, "POST", "/login")).toBe(0);
    expect(findRoute(rules, "POST", "/login?next=/")).toBe(0);
    expect(findRoute(rules, "GET", "/login")).toBe(1);
    expect(findRoute(rules, "POST", "/login/again")).toBe(1);
    // GET also matches HEAD, as servers route them; no other method does.
    expect(findRoute(rules, "HEAD", "/health")).toBe(2);
    expect(findRoute(rules, "POST", "/health")).toBe(3);
    expect(findRoute(rules.slice(0, 3), "GET", "/other")).toBe(-1);
    expect(findRoute([], "GET", "/")).toBe(-1);
    expect(requestPath(undefined)).toBe("/");
  });
});
