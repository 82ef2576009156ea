import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readProxyConfig } from "../../src/cli/proxy/config-file.js";
import { parseRouteFlag } from "../../src/cli/proxy/route-options.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("proxy-config");

function file(name: string, text: string): string {
  const path = join(tempDir(), name);
  writeFileSync(path, text);
  return path;
}

describe("--route", () => {
  it("reads a rate with its items, cost and class, in the order written", () => {
    expect(parseRouteFlag("POST /login=5/m,burst=5")).toEqual({
      pattern: { method: "POST", path: "/login", prefix: false },
      limits: [{ spec: { kind: "bucket", unit: "count", rate: 5 / 60, burst: 5 }, flag: "rate 5/m, burst 5", burstGiven: true }],
      cost: undefined,
      className: undefined,
    });
    const api = parseRouteFlag("/api/*=window=1000/h, rate=10/s ,concurrency=4");
    expect(api.limits?.map((limit) => limit.spec)).toEqual([
      { kind: "window", unit: "count", n: 1000, windowMs: 3_600_000 },
      { kind: "bucket", unit: "count", rate: 10, burst: 1 },
      { kind: "concurrency", n: 4 },
    ]);
    // No limits of its own: the default's, with its cost and class.
    expect(parseRouteFlag("/export*=cost=2.5,class=batch")).toEqual({ pattern: { method: undefined, path: "/export", prefix: true }, limits: undefined, cost: 2.5, className: "batch" });
  });

  it("says what to write for a rule it cannot read", () => {
    const form = `write "[METHOD ]PATH=LIMITS", LIMITS a RATE then any of burst=N, window=N/D, concurrency=N, cost=N, class=NAME, e.g. "POST /login=5/m,burst=5"`;
    expect(() => parseRouteFlag("/login")).toThrow(`--route "/login": gives no limits; ${form}`);
    expect(() => parseRouteFlag("post /login=5/m")).toThrow(`--route "post /login=5/m": "post" is not a method;`);
    expect(() => parseRouteFlag("/login=5/m,brust=5")).toThrow(`--route "/login=5/m,brust=5": "brust" is not an item of a rule; ${form}`);
    expect(() => parseRouteFlag("/login=5/m,rate=6/m")).toThrow(`--route "/login=5/m,rate=6/m": rate: given twice; give it once`);
    expect(() => parseRouteFlag("/login=burst=5")).toThrow(`--route "/login=burst=5": burst: sizes the rule's rate, and it has none; add one, e.g. "/login=5/m,burst=5"`);
    expect(() => parseRouteFlag("/login=5mb")).toThrow(`--route "/login=5mb": rate: "5mb" is a byte rate; a rule counts requests ("5/m", "10/s")`);
    expect(() => parseRouteFlag("/login=cost=")).toThrow(`--route "/login=cost=": cost: has no value; e.g. cost=5`);
    expect(() => parseRouteFlag("/login=cost=x")).toThrow(`--route "/login=cost=x": cost: "x" is not a number of requests; e.g. cost=5 (each request takes 5 of every rate and window)`);
    expect(() => parseRouteFlag("/login=class=a b")).toThrow(`--route "/login=class=a b": class: "a b" is not a class name; give one of the --class names, e.g. class=interactive`);
  });
});

describe("--config", () => {
  it("gives the flags from the file's keys, limits in the file's order, and rules parsed", () => {
    const path = file(
      "tbucket.yaml",
      `# a comment
listen: 8080
to: http://127.0.0.1:3000
window: 1000/h
rate: [10/s, 100/m]
burst: [20, 50]
trust-proxy: [127.0.0.1, 10.0.0.0/8]
max-keys: 5000
routes:
  - match: POST /login
    rate: 5/m
  - /export*=cost=3
`,
    );
    const { flags, places } = readProxyConfig(path);
    expect(flags).toMatchObject({
      listen: "8080",
      to: "http://127.0.0.1:3000",
      window: [{ text: "1000/h", position: 1_000_000 }],
      rate: [
        { text: "10/s", position: 1_000_001 },
        { text: "100/m", position: 1_000_002 },
      ],
      burst: ["20", "50"],
      trustProxy: "127.0.0.1,10.0.0.0/8",
      maxKeys: "5000",
    });
    expect(flags.routeRules?.map((rule) => [rule.pattern, rule.limits?.length, rule.cost])).toEqual([
      [{ method: "POST", path: "/login", prefix: false }, 1, undefined],
      [{ method: undefined, path: "/export", prefix: true }, undefined, 3],
    ]);
    expect(places.get("--rate")).toEqual({ line: 5, key: "rate" });
    expect(places.get("--route")).toEqual({ line: 9, key: "routes" });
  });

  it("reads JSON as YAML, with its lines; an empty file gives nothing", () => {
    const path = file("tbucket.json", `{\n  "listen": 8080,\n  "bogus": 1\n}\n`);
    expect(() => readProxyConfig(path)).toThrow(`${path}:3: bogus: is not a key of the proxy's config;`);
    expect(readProxyConfig(file("empty.yaml", "")).flags).toEqual({});
  });

  it("names the file, the line and the key of each mistake, with what to write", () => {
    const bad = (text: string) => () => readProxyConfig(file("c.yaml", text));
    expect(bad("listen: 8080\nroute: []\n")).toThrow(/c\.yaml:2: route: is not a key of the proxy's config; did you mean "routes"\?/);
    expect(bad("listen:\n")).toThrow(/c\.yaml:1: listen: has no value; e.g. "listen: 8080"$/);
    expect(bad("rate: []\n")).toThrow(/c\.yaml:1: rate: is an empty list; give at least one value, or leave rate out$/);
    expect(bad("rate: {a: 1}\n")).toThrow(/c\.yaml:1: rate: is a mapping; give a value or a list of values as the flag takes it, e.g. "rate: 50\/s"$/);
    expect(bad("routes:\n  - 5\n")).toThrow(/c\.yaml:2: routes, rule 1: is not a rule; write "match: \[METHOD \]PATH" and its limits under it, or the --route text "POST \/login=5\/m,burst=5"$/);
    expect(bad("routes:\n  - match: /a\n    cost: [1]\n")).toThrow(/c\.yaml:3: routes, rule 1: cost: is a list; give one value as the flag takes it, e.g. "cost: 5"$/);
    expect(bad("routes:\n  - match: /a\n")).toThrow(/c\.yaml:2: routes, rule 1: gives nothing; a rule's keys are match, rate, burst, window, concurrency, cost, class$/);
    expect(() => readProxyConfig(join(tempDir(), "none.yaml"))).toThrow(/^--config .*none\.yaml: no such file or directory; check the path$/);
  });
});
