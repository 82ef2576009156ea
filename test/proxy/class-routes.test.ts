import { describe, expect, it } from "vitest";
import { parseClassRoute, routeClass } from "../../src/proxy/class-routes.js";

describe("--route-class", () => {
  it("matches the first route by method and path (a trailing * for a prefix), ignoring the query", () => {
    const routes = ["POST /upload=bulk", "/search*=interactive", "GET /health=interactive", "/*=batch"].map(parseClassRoute);
    expect(routeClass(routes, "POST", "/upload")).toBe("bulk");
    expect(routeClass(routes, "PUT", "/upload")).toBe("batch");
    expect(routeClass(routes, "GET", "/search?q=a")).toBe("interactive");
    expect(routeClass(routes, "GET", "/searching/more")).toBe("interactive");
    expect(routeClass(routes, "HEAD", "/health")).toBe("interactive");
    expect(routeClass(routes, "POST", "/health")).toBe("batch");
    expect(routeClass(routes.slice(0, 3), "GET", "/other")).toBeUndefined();
    expect(routeClass(routes.slice(0, 1), "POST", "/upload/x")).toBeUndefined();
  });

  it("says what to write for a route it cannot read", () => {
    expect(() => parseClassRoute("/search")).toThrow(`"/search" names no class; write "[METHOD ]PATH=CLASS", e.g. "/search*=interactive" or "POST /upload=bulk"`);
    expect(() => parseClassRoute("post /upload=bulk")).toThrow(`"post /upload=bulk": "post" is not a method; write "[METHOD ]PATH=CLASS" with METHOD in capitals, e.g. "POST /upload=bulk"`);
    expect(() => parseClassRoute("search*=interactive")).toThrow(`"search*=interactive": the path "search*" does not start with "/"; e.g. "/search*=interactive"`);
  });
});
