import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rateLimitSetPolicy, rateLimitSetState } from "../../src/http/rate-limit-fields.js";
import { MAX_REPORT_BYTES, parseServerReport, readServerReport, settledCosts, throttleWaitMs } from "../../src/run/server-report.js";
import { tempDirs } from "../helpers/temp-dir.js";

const tempDir = tempDirs("server-report");

/** The wall clock of every test: 2025-12-02 13:00:00 UTC. */
const NOW = Date.UTC(2025, 11, 2, 13, 0, 0);

/** Header lines as curl -D writes them: CRLF after each, a blank line after the headers. */
const crlf = (...lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;

const only = (text: string) => {
  const report = parseServerReport(text, NOW);
  expect(report.responses).toHaveLength(1);
  return { ...report.responses[0]!, problems: report.problems };
};

describe("parseServerReport: OpenAI", () => {
  it("reads a 429 with its limits, resets in Go durations, and both retry fields", () => {
    const response = only(
      crlf(
        "HTTP/2 429 ",
        "date: Tue, 02 Dec 2025 13:00:00 GMT",
        "content-type: application/json; charset=utf-8",
        "x-ratelimit-limit-requests: 500",
        "x-ratelimit-limit-tokens: 90000",
        "x-ratelimit-remaining-requests: 499",
        "x-ratelimit-remaining-tokens: 0",
        "x-ratelimit-reset-requests: 120ms",
        "x-ratelimit-reset-tokens: 6m0s",
        "retry-after: 20",
        "retry-after-ms: 19876",
        "x-request-id: req_abc",
      ),
    );
    expect(response).toEqual({
      status: 429,
      throttled: true,
      retryAfterMs: 20_000,
      limits: [
        { name: "requests", limit: 500, remaining: 499, resetMs: 120 },
        { name: "tokens", limit: 90_000, remaining: 0, resetMs: 360_000 },
      ],
      costs: [],
      problems: [],
    });
  });

  it.each([
    ["1s", 1000],
    ["20ms", 20],
    ["6m0s", 360_000],
    ["1h2m3.5s", 3_723_500],
    ["59.992s", 59_992],
    ["0s", 0],
    ["1.5", 1500],
    ["250us", 0.25],
    ["7", 7000],
  ])("reads the reset %s as %d ms", (value, ms) => {
    expect(only(`HTTP/1.1 200 OK\nx-ratelimit-reset-tokens: ${value}\n`).limits).toEqual([{ name: "tokens", resetMs: ms }]);
  });

  it("takes a plain reset of a billion seconds or more as a Unix instant (GitHub's unnamed fields)", () => {
    const response = only(crlf("HTTP/1.1 403 Forbidden", "x-ratelimit-limit: 5000", "x-ratelimit-remaining: 0", `x-ratelimit-reset: ${NOW / 1000 + 42}`, "x-ratelimit-used: 5000"));
    expect(response.limits).toEqual([{ name: "default", limit: 5000, remaining: 0, resetMs: 42_000 }]);
    expect(response.throttled).toBe(false);
  });
});

describe("parseServerReport: Anthropic", () => {
  it("reads each limit's RFC 3339 reset against now", () => {
    const response = only(
      crlf(
        "HTTP/1.1 429 Too Many Requests",
        "Retry-After: 17",
        "anthropic-ratelimit-requests-limit: 50",
        "anthropic-ratelimit-requests-remaining: 0",
        "anthropic-ratelimit-requests-reset: 2025-12-02T13:00:17Z",
        "anthropic-ratelimit-input-tokens-limit: 40000",
        "anthropic-ratelimit-input-tokens-remaining: 39000",
        "anthropic-ratelimit-input-tokens-reset: 2025-12-02T13:00:01.500Z",
        "anthropic-ratelimit-output-tokens-limit: 8000",
        "anthropic-ratelimit-output-tokens-remaining: 8000",
        "anthropic-ratelimit-output-tokens-reset: 2025-12-02T14:00:00+01:00",
        "anthropic-ratelimit-tokens-reset: 2025-12-02T12:59:00Z",
        "anthropic-ratelimit-unified-status: allowed",
        "request-id: req_018",
      ),
    );
    expect(response.retryAfterMs).toBe(17_000);
    expect(response.limits).toEqual([
      { name: "requests", limit: 50, remaining: 0, resetMs: 17_000 },
      { name: "input-tokens", limit: 40_000, remaining: 39_000, resetMs: 1500 },
      { name: "output-tokens", limit: 8000, remaining: 8000, resetMs: 0 },
      // A reset in the past is now.
      { name: "tokens", resetMs: 0 },
    ]);
    expect(response.problems).toEqual([]);
  });

  it("says a reset that is not an instant", () => {
    const response = only("HTTP/1.1 200 OK\nanthropic-ratelimit-requests-reset: tomorrow\n");
    expect(response.limits).toEqual([]);
    expect(response.problems).toEqual(['anthropic-ratelimit-requests-reset: "tomorrow" is not an RFC 3339 instant']);
  });
});

describe("parseServerReport: IETF RateLimit fields", () => {
  it("reads a list of several policies and their states, by name", () => {
    const response = only(
      crlf("HTTP/1.1 429 Too Many Requests", 'RateLimit-Policy: "burst";q=100;w=1, "daily";q=1000;w=86400', 'RateLimit: "burst";r=0;t=1, "daily";r=900;t=40000', "Retry-After: 1"),
    );
    expect(response.limits).toEqual([
      { name: "burst", limit: 100, windowMs: 1000, remaining: 0, resetMs: 1000 },
      { name: "daily", limit: 1000, windowMs: 86_400_000, remaining: 900, resetMs: 40_000_000 },
    ]);
  });

  it("joins a list split over several field lines", () => {
    const response = only('HTTP/1.1 200 OK\nratelimit: "a";r=1;t=2\nRATELIMIT: "b";r=3\n');
    expect(response.limits).toEqual([
      { name: "a", remaining: 1, resetMs: 2000 },
      { name: "b", remaining: 3 },
    ]);
  });

  it("reads express-rate-limit's drafts 6, 7 and 8", () => {
    expect(only("HTTP/1.1 200 OK\nRateLimit-Policy: 100;w=60\nRateLimit-Limit: 100\nRateLimit-Remaining: 25\nRateLimit-Reset: 5\n").limits).toEqual([
      { name: "default", limit: 100, remaining: 25, resetMs: 5000, windowMs: 60_000 },
    ]);
    expect(only("HTTP/1.1 200 OK\nRateLimit-Policy: 100;w=60\nRateLimit: limit=100, remaining=25, reset=5\n").limits).toEqual([
      { name: "default", limit: 100, windowMs: 60_000, remaining: 25, resetMs: 5000 },
    ]);
    expect(only('HTTP/1.1 200 OK\nRateLimit-Policy: "100-in-1min"; q=100; w=60; pk=:ZDY1NTc3YmEzN2Ni:\nRateLimit: "100-in-1min"; r=25; t=5\n').limits).toEqual([
      { name: "100-in-1min", limit: 100, windowMs: 60_000, remaining: 25, resetMs: 5000 },
    ]);
  });

  it("reads what tbucket's own rate-limit middleware sends", () => {
    const specs = [
      { kind: "bucket", unit: "count", rate: 50, burst: 50 },
      { kind: "window", unit: "count", n: 1000, windowMs: 60_000 },
    ] as const;
    const policy = rateLimitSetPolicy(specs)!;
    const state = rateLimitSetState([
      { ...specs[0], level: 9 },
      { ...specs[1], level: 400 },
    ])!;
    expect(only(`HTTP/1.1 200 OK\nRateLimit-Policy: ${policy}\nRateLimit: ${state}\n`).limits).toEqual([
      { name: "limit-1", limit: 50, windowMs: 1000, remaining: 9, resetMs: 1000 },
      { name: "limit-2", limit: 1000, windowMs: 60_000, remaining: 400, resetMs: 60_000 },
    ]);
  });

  it.each([
    ['"default";r=abc', 'ratelimit: "\\"default\\";r=abc" has an r or t that is not a number 0 or more'],
    ['"default";r=1,', 'ratelimit: "\\"default\\";r=1," is not a list like "default";r=9;t=1'],
    ["r=1", 'ratelimit: "r=1" is not a list like "default";r=9;t=1'],
    ['"default";t=-1', 'ratelimit: "\\"default\\";t=-1" has an r or t that is not a number 0 or more'],
  ])("says a malformed RateLimit %s", (value, problem) => {
    const response = only(`HTTP/1.1 200 OK\nRateLimit: ${value}\n`);
    expect(response.problems).toEqual([problem]);
    expect(response.limits).toEqual([]);
  });

  it("says a malformed RateLimit-Policy", () => {
    expect(only('HTTP/1.1 200 OK\nRateLimit-Policy: "x";q=many\n').problems).toEqual(['ratelimit-policy: "\\"x\\";q=many" has a q or w that is not a number 0 or more']);
    expect(only('HTTP/1.1 200 OK\nRateLimit-Policy: "x" q=1\n').problems).toEqual(['ratelimit-policy: "\\"x\\" q=1" is not a list like "default";q=100;w=60']);
  });
});

describe("parseServerReport: Retry-After", () => {
  it.each([
    ["Wed, 21 Oct 2015 07:28:00 GMT", 10_000],
    ["Wednesday, 21-Oct-15 07:28:00 GMT", 10_000],
    ["Wed Oct 21 07:28:00 2015", 10_000],
    ["Wed Oct  1 07:28:00 2015", 0],
    ["Wed, 21 Oct 2015 07:27:00 GMT", 0],
    ["120", 120_000],
    ["0", 0],
  ])("reads %s as a wait of %d ms", (value, ms) => {
    const now = Date.UTC(2015, 9, 21, 7, 27, 50);
    expect(parseServerReport(`HTTP/1.1 503 Service Unavailable\r\nRetry-After: ${value}\r\n`, now).responses[0]!.retryAfterMs).toBe(ms);
  });

  it("takes the latest instant when Retry-After and retry-after-ms disagree", () => {
    expect(only("HTTP/1.1 429 x\nretry-after: 2\nretry-after-ms: 2500\n").retryAfterMs).toBe(2500);
    expect(only("HTTP/1.1 429 x\nretry-after-ms: 2500\nretry-after: 3\n").retryAfterMs).toBe(3000);
    expect(only("HTTP/1.1 429 x\nretry-after: 3\nretry-after: Tue, 02 Dec 2025 13:00:04 GMT\n").retryAfterMs).toBe(4000);
  });

  it.each([
    ["retry-after: -1", 'retry-after: "-1" is neither seconds nor an HTTP date'],
    ["retry-after: Wed, 32 Oct 2015 07:28:00 GMT", 'retry-after: "Wed, 32 Oct 2015 07:28:00 GMT" is neither seconds nor an HTTP date'],
    ["retry-after: soon", 'retry-after: "soon" is neither seconds nor an HTTP date'],
    ["retry-after-ms: 1e3", 'retry-after-ms: "1e3" is not a number of milliseconds'],
  ])("says %s is malformed, and keeps the rest", (line, problem) => {
    const response = only(`HTTP/1.1 429 x\n${line}\nretry-after-ms: 700\n`);
    expect(response.problems).toEqual([problem]);
    expect(response.retryAfterMs).toBe(700);
  });

  it("a throttled response's wait is its Retry-After, or the latest reset of a limit used up", () => {
    const wait = (text: string) => throttleWaitMs(only(text));
    expect(wait("HTTP/1.1 429 x\nretry-after: 2\nx-ratelimit-remaining-tokens: 0\nx-ratelimit-reset-tokens: 5s\n")).toBe(5000);
    expect(wait("HTTP/1.1 429 x\nretry-after: 2\nx-ratelimit-remaining-tokens: 3\nx-ratelimit-reset-tokens: 5s\n")).toBe(2000);
    expect(wait('HTTP/1.1 429 x\nRateLimit: "a";r=0;t=9\n')).toBe(9000);
    expect(wait("HTTP/1.1 429 x\n")).toBeUndefined();
    expect(wait("HTTP/1.1 200 OK\nretry-after: 2\n")).toBeUndefined();
  });
});

describe("parseServerReport: responses, costs and lines", () => {
  it("starts a response at each status line: redirects, 100 Continue and curl's retries", () => {
    const text =
      crlf("HTTP/1.1 100 Continue") +
      crlf("HTTP/1.1 429 Too Many Requests", "Retry-After: 1", "x-ratelimit-remaining-requests: 0") +
      crlf("HTTP/1.1 301 Moved Permanently", "Location: /v2") +
      crlf("HTTP/2 200", "x-ratelimit-remaining-requests: 41") +
      "tbucket-cost: 120, 40\n";
    const { responses, problems } = parseServerReport(text, NOW);
    expect(problems).toEqual([]);
    expect(responses.map((response) => [response.status, response.throttled, response.retryAfterMs])).toEqual([
      [100, false, undefined],
      [429, true, 1000],
      [301, false, undefined],
      [200, false, undefined],
    ]);
    // A cost the job appends after curl belongs to the last response.
    expect(responses[3]).toEqual({ status: 200, throttled: false, retryAfterMs: undefined, limits: [{ name: "requests", remaining: 41 }], costs: [120, 40] });
  });

  it("settles with the last tbucket-cost line, before curl's headers or after them", () => {
    expect(settledCosts(parseServerReport("tbucket-cost: 7\nHTTP/1.1 200 OK\nx: y\n", NOW))).toEqual([7]);
    expect(settledCosts(parseServerReport("tbucket-cost: 7\nHTTP/1.1 200 OK\ntbucket-cost: 8, 9\n", NOW))).toEqual([8, 9]);
    expect(settledCosts(parseServerReport("HTTP/1.1 200 OK\n", NOW))).toBeUndefined();
  });

  it("keeps the lines before any status line as a response without one", () => {
    expect(parseServerReport("tbucket-cost: 7\n", NOW).responses).toEqual([{ status: undefined, throttled: false, retryAfterMs: undefined, limits: [], costs: [7] }]);
    expect(parseServerReport("", NOW).responses).toEqual([]);
    expect(parseServerReport("\n\n", NOW).responses).toEqual([]);
  });

  it("reads LF and CRLF alike, names in any case, a folded line as the one before", () => {
    const a = parseServerReport("HTTP/1.1 429 x\nRETRY-AFTER: 3\nX-RateLimit-Remaining-Requests: 0\n", NOW);
    const b = parseServerReport("HTTP/1.1 429 x\r\nretry-after: 3\r\nx-ratelimit-remaining-requests: 0\r\n", NOW);
    expect(a).toEqual(b);
    expect(only('HTTP/1.1 200 OK\nRateLimit: "a";r=1,\n "b";r=2\n').limits).toEqual([
      { name: "a", remaining: 1 },
      { name: "b", remaining: 2 },
    ]);
  });

  it("ignores unknown lines and says each malformed known one once, shortly", () => {
    const junk = "x".repeat(500);
    const text = [
      "HTTP/1.1 200 OK",
      "not a header",
      `x-ratelimit-remaining-requests: many`,
      "x-ratelimit-remaining-requests: many",
      "x-ratelimit-limit-tokens: 1,000",
      `x-ratelimit-reset-tokens: ${junk}`,
      "tbucket-cost: abc",
      "tbucket-cost: 1, -2",
      "HTTP/1.1 abc",
      "",
    ].join("\n");
    const report = parseServerReport(text, NOW);
    expect(report.problems).toEqual([
      'status line "HTTP/1.1 abc" is not like "HTTP/1.1 429 Too Many Requests"',
      'x-ratelimit-remaining-requests: "many" is not a number',
      'x-ratelimit-limit-tokens: "1,000" is not a number',
      `x-ratelimit-reset-tokens: "${"x".repeat(40)}…" is not a duration like 6m0s, 1s, 20ms or seconds`,
      'tbucket-cost: "abc" is not a list of numbers, each 0 to 2^53 - 1, like 120 or 120, 40',
      'tbucket-cost: "1, -2" is not a list of numbers, each 0 to 2^53 - 1, like 120 or 120, 40',
    ]);
    expect(report.responses).toEqual([{ status: 200, throttled: false, retryAfterMs: undefined, limits: [], costs: [] }]);
  });

  it("says a cost past 2^53, and keeps at most eight problems however many lines are bad", () => {
    expect(only(`HTTP/1.1 200 OK\ntbucket-cost: ${2 ** 53 + 2}\n`).problems).toHaveLength(1);
    expect(only("HTTP/1.1 200 OK\ntbucket-cost: 9007199254740993\n").problems).toHaveLength(1);
    expect(only("HTTP/1.1 200 OK\ntbucket-cost: 9007199254740991\n").costs).toEqual([9007199254740991]);
    const many = Array.from({ length: 100 }, (_, i) => `retry-after: bad${i}`).join("\n");
    expect(parseServerReport(`HTTP/1.1 429 x\n${many}\n`, NOW).problems).toHaveLength(8);
  });
});

describe("readServerReport", () => {
  it("is undefined for a file that is not there: the job wrote no report", async () => {
    expect(await readServerReport(join(tempDir(), "absent"), NOW)).toBeUndefined();
  });

  it("says a report it cannot read", async () => {
    const dir = tempDir();
    expect(await readServerReport(dir, NOW)).toEqual({ responses: [], problems: [`report ${dir}: cannot be read (EISDIR)`], truncated: false });
  });

  it("reads a report as parseServerReport does", async () => {
    const path = join(tempDir(), "report");
    writeFileSync(path, crlf("HTTP/2 429", "retry-after: 2"));
    expect(await readServerReport(path, NOW)).toEqual(parseServerReport(crlf("HTTP/2 429", "retry-after: 2"), NOW));
  });

  it("reads at most the cap of a job that writes megabytes, cut at a whole line, and says so", async () => {
    const path = join(tempDir(), "report");
    const head = crlf("HTTP/1.1 200 OK", "x-ratelimit-remaining-requests: 5");
    // The cap falls inside a retry-after line: its first digits must not be read as a wait.
    const filler = "x-filler: " + "y".repeat(MAX_REPORT_BYTES - head.length - 12 - 20) + "\n";
    const text = head + filler + "retry-after: 99999999999\n" + "z: ".padEnd(100, "z").concat("\n").repeat(40_000) + "HTTP/1.1 429 late\n";
    writeFileSync(path, text);
    expect(text.length).toBeGreaterThan(4_000_000);
    const report = (await readServerReport(path, NOW))!;
    expect(report.truncated).toBe(true);
    expect(report.problems).toEqual([`report ${path}: longer than ${MAX_REPORT_BYTES} bytes; the rest was ignored`]);
    expect(report.responses).toEqual([{ status: 200, throttled: false, retryAfterMs: undefined, limits: [{ name: "requests", remaining: 5 }], costs: [] }]);
  });

  it("reads a report of exactly the cap whole, and takes a smaller cap", async () => {
    const path = join(tempDir(), "report");
    const text = "HTTP/1.1 200 OK\nx-filler: ".padEnd(MAX_REPORT_BYTES - 1, "y") + "\n";
    writeFileSync(path, text);
    expect((await readServerReport(path, NOW))!.truncated).toBe(false);
    const small = (await readServerReport(path, NOW, 20))!;
    expect(small.truncated).toBe(true);
    expect(small.responses.map((response) => response.status)).toEqual([200]);
  });
});
