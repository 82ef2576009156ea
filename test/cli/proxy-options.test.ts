import { describe, expect, it } from "vitest";
import { parseProxyOptions, type ProxyFlags } from "../../src/cli/proxy/options.js";

/** The flags as written here: --rate and --burst once each, as text (commander hands them over as lists). */
type OneRateFlags = Omit<ProxyFlags, "rate" | "burst"> & { rate?: string; burst?: string };

const parse = ({ rate, burst, ...flags }: OneRateFlags) =>
  parseProxyOptions({
    drain: "10s",
    onStoreError: "fail",
    ...flags,
    rate: rate === undefined ? undefined : [{ text: rate, position: 0 }],
    burst: burst === undefined ? undefined : [burst],
  });

describe("parseProxyOptions", () => {
  it("reads TCP mode: --rate both ways, --up/--down over it, the link by default", () => {
    const config = parse({ listen: "8080", to: "127.0.0.1:5432", rate: "1mb", down: "5mb" });
    expect(config).toMatchObject({
      mode: "tcp",
      listen: { host: "127.0.0.1", port: 8080 },
      to: { host: "127.0.0.1", port: 5432 },
      up: [{ kind: "bucket", unit: "bytes", rate: 1024 * 1024, burst: 104857 }],
      down: [{ kind: "bucket", unit: "bytes", rate: 5 * 1024 * 1024, burst: 524288 }],
      concurrency: undefined,
      per: "link",
      idleTimeoutMs: Infinity,
      drainMs: 10_000,
    });
  });

  it("reads --connections with --max-wait, and --idle-timeout", () => {
    const config = parse({ listen: "0.0.0.0:9000", to: "10.0.0.7:9000", connections: "20/s", maxWait: "2s", idleTimeout: "1m" });
    expect(config).toMatchObject({ mode: "tcp", listen: { host: "0.0.0.0", port: 9000 }, connections: { perSecond: 20, burst: 1, maxWaitMs: 2000 }, idleTimeoutMs: 60_000 });
  });

  it("takes --on-store-error open in HTTP mode", () => {
    expect(parse({ listen: "8080", to: "http://127.0.0.1:3000", rate: "5/s", key: "api", onStoreError: "open" }).shared).toMatchObject({ key: "api", onStoreError: "open" });
  });

  it("reads --total with --total-burst paired in order, the burst 100 ms of the rate by default (at least 1), and --total alone", () => {
    const config = parse({ listen: "8080", to: "http://127.0.0.1:3000", rate: "5/s", total: ["2000/s", "20/s", "5/s", "100/m"], totalBurst: ["50"] });
    expect(config).toMatchObject({ mode: "http", limits: undefined });
    const total = config.mode === "http" ? config.total! : [];
    expect(total.map(({ spec }) => spec)).toEqual([
      { kind: "bucket", unit: "count", rate: 2000, burst: 50 },
      { kind: "bucket", unit: "count", rate: 20, burst: 2 },
      { kind: "bucket", unit: "count", rate: 5, burst: 1 },
      { kind: "bucket", unit: "count", rate: 100 / 60, burst: 1 },
    ]);
    expect(total[0]!.flag).toBe("--total 2000/s --total-burst 50");
    const alone = parse({ listen: "8080", to: "http://127.0.0.1:3000", total: ["20/s"] });
    expect(alone).toMatchObject({ mode: "http", requestsPerSecond: Infinity, total: [{ spec: { rate: 20, burst: 2 } }] });
    expect(parse({ listen: "8080", to: "http://127.0.0.1:3000", rate: "5/s" })).toMatchObject({ total: undefined });
  });

  it("reads HTTP mode", () => {
    const config = parse({
      listen: "8080",
      to: "http://127.0.0.1:3000/",
      rate: "50/s",
      burst: "10",
      per: "header:X-Api-Key",
      trustProxy: "127.0.0.1, 10.0.0.0/8,::1",
      ipv6Prefix: "64",
      policy: "queue",
      maxWait: "2s",
      bodyRate: "1mb",
      maxKeys: "1000",
      accessLog: "-",
      metrics: "9464",
    });
    expect(config).toMatchObject({
      mode: "http",
      to: { host: "127.0.0.1", port: 3000 },
      target: "http://127.0.0.1:3000/",
      requestsPerSecond: 50,
      burst: 10,
      per: { by: "header", name: "x-api-key" },
      trustProxy: ["127.0.0.1", "10.0.0.0/8", "::1"],
      ipv6Prefix: 64,
      policy: "queue",
      maxWaitMs: 2000,
      bodyBytesPerSecond: 1024 * 1024,
      maxKeys: 1000,
      accessLog: "-",
      metrics: { host: "127.0.0.1", port: 9464 },
    });
  });

  it("keys IPv6 clients by /56 unless --ipv6-prefix says otherwise", () => {
    expect(parse({ listen: "1", to: "http://127.0.0.1:2", rate: "5/s" })).toMatchObject({ ipv6Prefix: 56 });
    expect(parse({ listen: "1", to: "http://127.0.0.1:2", rate: "5/s", ipv6Prefix: "128" })).toMatchObject({ ipv6Prefix: 128 });
  });

  it("keeps an HTTP backend's path prefix, and port 80 when none is written", () => {
    expect(parse({ listen: "1", to: "http://localhost/api/v1", rate: "5/s" })).toMatchObject({ to: { host: "localhost", port: 80 }, target: "http://localhost:80/api/v1" });
  });

  it.each<[OneRateFlags, string]>([
    [{ to: "127.0.0.1:1", rate: "1mb" }, `--listen: missing; try "tbucket proxy --listen 5433 --to 127.0.0.1:5432 --down 2mb"`],
    [{ listen: "1", rate: "1mb" }, `--to: missing; try`],
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", burst: "1mb", per: "connection", key: "k" }, `--per connection: a connection's bucket is its own`],
    [{ listen: "1", to: "127.0.0.1:2", burst: "1mb", connections: "5/s" }, `--burst: sizes the byte buckets, and no byte rate is given`],
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", maxWait: "1s" }, `--max-wait: holds connections over --connections or --concurrency, and neither is given; add e.g. "--concurrency 20 --max-wait 2s" or "--connections 10/s --max-wait 2s"`],
    [{ listen: "1", to: "127.0.0.1:2", key: "link" }, `--key: TCP mode sets its keys (link:up, link:down) from --rate, --up, --down or --window, and link:connections from --concurrency; add one, e.g. "--key link --down 1mb"`],
    [{ listen: "1", to: "http://127.0.0.1:2" }, `--rate: missing; HTTP mode limits requests`],
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", key: "k", onStoreError: "open" }, `--on-store-error: "open" lets HTTP requests through while the store is away, and --to 127.0.0.1:2 is TCP; try "fail" or "local"`],
    [{ listen: "0.0.0.0:9000", to: "localhost:9000", rate: "1mb" }, `--to localhost:9000: is where the proxy listens (--listen 0.0.0.0:9000), so it would connect to itself`],
    [{ listen: "1", to: "http://127.0.0.1:2", rate: "1mb" }, `--rate: "1mb" is not a count of requests`],
    [{ listen: "1", to: "http://127.0.0.1:2", rate: "5/s", maxWait: "1s" }, `--max-wait: is how long --policy queue holds a request, and the policy is drop`],
    [{ listen: "1", to: "http://127.0.0.1:2", rate: "5/s", per: "cookie" }, `--per: "cookie" is not an HTTP scope`],
    [{ listen: "1", to: "http://127.0.0.1:2", rate: "5/s", trustProxy: "10.0.0.0/33" }, `--trust-proxy: "10.0.0.0/33" is not an address or CIDR block`],
    ...["0", "129", "56.5", "-1", "x", ""].map((bits): [OneRateFlags, string] => [
      { listen: "1", to: "http://127.0.0.1:2", rate: "5/s", ipv6Prefix: bits },
      `--ipv6-prefix: "${bits}" is not a prefix length; give the bits of an IPv6 address that make one client, 1 to 128 (56, the default, is one customer's network; 128 the whole address)`,
    ]),
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", ipv6Prefix: "64" }, `--ipv6-prefix: is for HTTP mode`],
    [{ listen: "1", to: "http://127.0.0.1:2/api?x=1", rate: "5/s" }, `a backend is http://HOST:PORT[/prefix], without a user, query or fragment`],
    [{ listen: "1", to: "http://127.0.0.1:2", rate: "5/s", idleTimeout: "1s" }, `--idle-timeout: is for TCP mode`],
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", accessLog: "-" }, `--access-log: is for HTTP mode`],
    [{ listen: "1", to: "127.0.0.1:2", rate: "1mb", metrics: "x" }, `--metrics: "x": "x" is not a port`],
  ])("refuses %j", (flags, message) => {
    expect(() => parse(flags)).toThrow(message);
  });
});

describe("parseProxyOptions: a set of limits per client in HTTP mode", () => {
  const placed = (...texts: string[]) => texts.map((text, position) => ({ text, position }));

  it("reads --rate repeated with its --burst, --window and --concurrency, in command-line order", () => {
    const config = parseProxyOptions({
      listen: "8080",
      to: "http://127.0.0.1:3000",
      drain: "10s",
      onStoreError: "fail",
      rate: [{ text: "10/s", position: 0 }, { text: "100/m", position: 3 }],
      burst: ["20"],
      window: [{ text: "1000/h", position: 1 }],
      concurrency: [{ text: "4", position: 2 }],
    });
    expect(config).toMatchObject({ mode: "http", requestsPerSecond: 10, burst: 20 });
    expect(config.mode === "http" && config.limits?.map((limit) => limit.spec)).toEqual([
      { kind: "bucket", unit: "count", rate: 10, burst: 20 },
      { kind: "window", unit: "count", n: 1000, windowMs: 3_600_000 },
      { kind: "concurrency", n: 4 },
      { kind: "bucket", unit: "count", rate: 100 / 60, burst: 1 },
    ]);
  });

  it("takes a window or concurrency alone, and keeps one --rate a plain bucket", () => {
    const base = { listen: "1", to: "http://127.0.0.1:2", drain: "10s", onStoreError: "fail" as const };
    expect(parseProxyOptions({ ...base, window: placed("15/2s") })).toMatchObject({ requestsPerSecond: Infinity, limits: [{ spec: { kind: "window", n: 15, windowMs: 2000 } }] });
    expect(parseProxyOptions({ ...base, rate: placed("5/s") })).toMatchObject({ requestsPerSecond: 5, limits: undefined });
  });

  it.each<[ProxyFlags, string]>([
    [{ window: placed("2mb/1s") }, `; HTTP mode counts requests ("15/2s"), and --body-rate shapes bytes ("1mb")`],
    [{ window: placed("15") }, `--window: "15"`],
    [{ rate: placed("5/s", "1mb") }, `--rate: "1mb" is not a count of requests`],
    [{ rate: placed("5/s"), burst: ["2", "3"] }, `--burst: 2 bursts for 1 rate`],
    [{ concurrency: placed("0.5") }, `--concurrency: "0.5"`],
  ])("refuses %j", (flags, message) => {
    expect(() => parseProxyOptions({ listen: "1", to: "http://127.0.0.1:2", drain: "10s", onStoreError: "fail", ...flags })).toThrow(message);
  });

  const tcp = (flags: Partial<ProxyFlags>) => parseProxyOptions({ listen: "1", to: "127.0.0.1:2", drain: "10s", onStoreError: "fail", ...flags });
  const bucket = (rate: number, burst: number) => ({ kind: "bucket", unit: "bytes", rate, burst });
  const KiB = 1024;
  const MiB = 1024 * 1024;

  it("reads byte windows in TCP mode, each direction its own, with or without a rate", () => {
    const windows = [
      { kind: "window", unit: "bytes", n: 10 * MiB, windowMs: 1000 },
      { kind: "window", unit: "bytes", n: 1024 ** 3, windowMs: 3_600_000 },
    ];
    expect(tcp({ rate: placed("1mb"), window: placed("10mb/1s", "1gb/h") })).toMatchObject({ up: [bucket(MiB, 104857), ...windows], down: [bucket(MiB, 104857), ...windows] });
    expect(tcp({ window: placed("64k/1s") })).toMatchObject({ up: [{ n: 65536, windowMs: 1000 }], down: [{ n: 65536, windowMs: 1000 }] });
  });

  it("reads --rate repeated, the i-th --burst with the i-th rate, in command-line order each way", () => {
    const both = [bucket(MiB, 64 * KiB), bucket(256 * KiB, 256 * KiB), { kind: "window", n: 10 * MiB, windowMs: 60_000 }];
    const config = tcp({ rate: [{ text: "1mb", position: 0 }, { text: "256k", position: 2 }], burst: ["64k", "256k"], window: [{ text: "10mb/1m", position: 1 }] });
    // A window placed between the rates on the command line stands between them in the set.
    expect(config).toMatchObject({ up: [both[0], both[2], both[1]], down: [both[0], both[2], both[1]], concurrency: undefined });
  });

  it("--up and --down replace the first --rate's bucket that way, with its --burst; alone, they take the one --burst", () => {
    expect(tcp({ rate: placed("1mb", "256k"), burst: ["64k"], down: "4mb" })).toMatchObject({
      up: [bucket(MiB, 64 * KiB), bucket(256 * KiB, 26214)],
      down: [bucket(4 * MiB, 64 * KiB), bucket(256 * KiB, 26214)],
    });
    expect(tcp({ rate: placed("1mb"), up: "2mb" })).toMatchObject({ up: [bucket(2 * MiB, 209715)], down: [bucket(MiB, 104857)] });
    expect(tcp({ down: "1mb", burst: ["256k"], window: placed("1gb/d") })).toMatchObject({ up: [{ kind: "window" }], down: [bucket(MiB, 256 * KiB), { kind: "window" }] });
    expect(tcp({ up: "1mb" })).toMatchObject({ up: [bucket(MiB, 104857)], down: undefined });
  });

  it("reads --concurrency with --max-wait, per link or client, with or without a key", () => {
    expect(tcp({ concurrency: placed("20") })).toMatchObject({ concurrency: { n: 20, maxWaitMs: 0 }, up: undefined, down: undefined, per: "link" });
    expect(tcp({ concurrency: placed("2"), maxWait: "1.5s", per: "client", down: "1mb", key: "db" })).toMatchObject({ concurrency: { n: 2, maxWaitMs: 1500 }, per: "client", shared: { key: "db" } });
    // One --max-wait holds both connection limits.
    expect(tcp({ concurrency: placed("2"), connections: "5/s", maxWait: "2s" })).toMatchObject({ concurrency: { maxWaitMs: 2000 }, connections: { maxWaitMs: 2000 } });
  });

  it("keeps a set on a key: --rate repeated, --window", () => {
    expect(tcp({ rate: placed("1mb", "256k"), window: [{ text: "10mb/1m", position: 2 }], key: "k" })).toMatchObject({ shared: { key: "k" }, up: [{ rate: MiB }, { rate: 256 * KiB }, { n: 10 * MiB }] });
  });

  it.each<[Partial<ProxyFlags>, string]>([
    [{ down: "1mb", concurrency: placed("2"), per: "connection" }, `--concurrency: counts the connections open at once per --per scope, and --per connection is one connection each; use --per link (all) or --per client`],
    [{ concurrency: placed("2", "3") }, `--concurrency: given 2 times; give it once, e.g. "--concurrency 4"`],
    [{ concurrency: placed("x") }, `--concurrency: "x"`],
    [{ rate: placed("1mb"), burst: ["1k", "2k"] }, `--burst: 2 bursts for 1 rate; each --burst goes with a --rate (the i-th burst with the i-th rate), so give its --rate too or drop the --burst`],
    [{ down: "1mb", burst: ["1k", "2k"] }, `--burst: given 2 times, and without --rate one --burst sizes --up and --down both; give it once, or add a --rate for each`],
  ])("refuses %j in TCP mode", (flags, message) => {
    expect(() => tcp(flags)).toThrow(message);
  });
});

describe("parseProxyOptions: --route", () => {
  const HTTP = { listen: "8080", to: "http://127.0.0.1:3000" };

  it("keeps the rules in order, and needs no --rate beside them (the default unlimited)", () => {
    const config = parse({ ...HTTP, route: ["POST /login=5/m,burst=5", "/export*=cost=3"] });
    expect(config).toMatchObject({ mode: "http", requestsPerSecond: Infinity, limits: undefined });
    if (config.mode !== "http") throw new Error("not HTTP");
    expect(config.routes.map((rule) => [rule.pattern.method, rule.pattern.path, rule.limits?.map((limit) => limit.spec), rule.cost])).toEqual([
      ["POST", "/login", [{ kind: "bucket", unit: "count", rate: 5 / 60, burst: 5 }], undefined],
      [undefined, "/export", undefined, 3],
    ]);
  });

  it("takes the config file's rules unless --route is given", () => {
    const fromFile = parse({ ...HTTP, rate: "1/s", routeRules: [{ pattern: { method: undefined, path: "/a", prefix: false }, limits: undefined, cost: 2, className: undefined }] });
    expect(fromFile.mode === "http" && fromFile.routes.map((rule) => rule.pattern.path)).toEqual(["/a"]);
    const replaced = parse({ ...HTTP, rate: "1/s", route: ["/b=cost=2"], routeRules: [{ pattern: { method: undefined, path: "/a", prefix: false }, limits: undefined, cost: 2, className: undefined }] });
    expect(replaced.mode === "http" && replaced.routes.map((rule) => rule.pattern.path)).toEqual(["/b"]);
  });

  it("refuses --route in TCP mode, a class no --class defines, and a rule's own limits beside --class", () => {
    expect(() => parse({ listen: "8080", to: "127.0.0.1:3000", rate: "1mb", route: ["/x=5/m"] })).toThrow(
      "--route: is for HTTP mode, and --to 127.0.0.1:3000 is TCP (http://HOST:PORT selects HTTP); drop --route or change --to",
    );
    expect(() => parse({ ...HTTP, rate: "1/s", class: ["a=1/s"], route: ["/x=class=b"] })).toThrow(
      `--route "/x" class=b: no class "b"; the classes are a (define it with --class b=RATE, or name one of them)`,
    );
    expect(() => parse({ ...HTTP, rate: "1/s", class: ["a=1/s"], route: ["/x=1/s,class=a"] })).toThrow(
      `--route "/x": limits of its own beside --class are not built (classes share each key's limits); give the rule only cost= and class=, or drop --class`,
    );
  });
});
