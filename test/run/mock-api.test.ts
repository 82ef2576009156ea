import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { afterEach, describe, expect, it } from "vitest";
import { parseServerReport } from "../../src/run/server-report.js";
import { formatGoDuration, type MockApi, type MockApiOptions, startMockApi } from "../fixtures/mock-api.mjs";

/**
 * The mock API of the quota tests and bench (test/fixtures/mock-api.mjs), over real HTTP on
 * 127.0.0.1. Its buckets read a clock the tests move by hand, so every level is exact.
 */
let api: MockApi | undefined;
let nowMs = 0;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function start(options: MockApiOptions): Promise<MockApi> {
  nowMs = 0;
  api = await startMockApi({ periodMs: 1000, now: () => nowMs, ...options });
  return api;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

async function complete(body: unknown): Promise<Answer> {
  const response = await fetch(api!.url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, headers: Object.fromEntries(response.headers), body: await response.json() };
}

/** The answer's headers as curl -D would write them, read back by tbucket's own parser. */
function asReport(answer: Answer) {
  const lines = [`HTTP/1.1 ${answer.status} X`, ...Object.entries(answer.headers).map(([name, value]) => `${name}: ${value}`)];
  const report = parseServerReport(`${lines.join("\r\n")}\r\n\r\n`, Date.now());
  expect(report.problems).toEqual([]);
  return report.responses[0]!;
}

describe("mock API", () => {
  it("answers 200 with usage until the requests bucket is empty, then 429 with consistent headers", async () => {
    await start({ requests: 3 });
    const answers: Answer[] = [];
    for (let i = 0; i < 4; i++) answers.push(await complete({ max_tokens: 30, prompt_tokens: 10 }));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(answers[0]!.body.usage).toEqual({ prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 });
    expect(answers.map((answer) => answer.headers["x-ratelimit-remaining-requests"])).toEqual(["2", "1", "0", "0"]);
    expect(answers.every((answer) => answer.headers["x-ratelimit-limit-requests"] === "3")).toBe(true);
    // One request comes back every 1000/3 ms: the 4th may come in 334 ms, or 1 s in whole seconds.
    const refused = answers[3]!;
    expect([refused.headers["retry-after"], refused.headers["retry-after-ms"], refused.headers["x-ratelimit-reset-requests"]]).toEqual(["1", "334", "1s"]);
    expect(refused.body.error.type).toBe("rate_limit_exceeded");
    expect(asReport(refused)).toEqual({ status: 429, throttled: true, retryAfterMs: 1000, limits: [{ name: "requests", limit: 3, remaining: 0, resetMs: 1000 }], costs: [] });
    expect(asReport(answers[1]!).limits).toEqual([{ name: "requests", limit: 3, remaining: 1, resetMs: 667 }]);

    nowMs = 334;
    expect((await complete({ max_tokens: 1 })).status).toBe(200);
  });

  it("records each arrival, and whether it came before a Retry-After it had given", async () => {
    await start({ requests: 1 });
    await complete({ max_tokens: 1 });
    expect((await complete({ max_tokens: 1 })).headers["retry-after-ms"]).toBe("1000");
    nowMs = 500;
    expect((await complete({ max_tokens: 1 })).status).toBe(429);
    nowMs = 1200;
    expect((await complete({ max_tokens: 1 })).status).toBe(200);
    const stats = (await (await fetch(`http://127.0.0.1:${api!.port}/stats`)).json()) as ReturnType<MockApi["stats"]>;
    expect(stats).toEqual(api!.stats());
    expect(stats).toMatchObject({ total: 4, ok: 2, throttled: 2, rejected: 0, early: 2, earlyMs: 1, inFlight: 0 });
    expect(stats.requests.map(({ connectedAtMs, ...rest }) => (expect(connectedAtMs).toBeTypeOf("number"), rest))).toEqual([
      { atMs: 0, status: 200, early: false, earlyMs: false, maxTokens: 1 },
      { atMs: 0, status: 429, early: false, earlyMs: false, retryAfterMs: 1000, maxTokens: 1 },
      // The second refusal, at 500 ms, asked for 500 ms more: 1 s in whole seconds, until 1500 ms.
      { atMs: 500, status: 429, early: true, earlyMs: true, retryAfterMs: 500, maxTokens: 1 },
      { atMs: 1200, status: 200, early: true, earlyMs: false, maxTokens: 1 },
    ]);
  });

  it("reserves max_tokens of output at the start and gives back what the answer did not use", async () => {
    await start({ outputTokens: 300, outputFraction: 1 / 3 });
    const first = await complete({ max_tokens: 300 });
    expect(first.body.usage.completion_tokens).toBe(100);
    // The answer's headers are written after the settle: 300 reserved, 200 given back.
    expect(first.headers["x-ratelimit-remaining-output-tokens"]).toBe("200");
    expect((await complete({ max_tokens: 200 })).status).toBe(200);
    expect((await complete({ max_tokens: 200 })).status).toBe(429);
  });

  it("without the settle (all of max_tokens used), the same requests are refused", async () => {
    await start({ outputTokens: 300, outputFraction: 1 });
    expect((await complete({ max_tokens: 300 })).headers["x-ratelimit-remaining-output-tokens"]).toBe("0");
    expect((await complete({ max_tokens: 200 })).status).toBe(429);
  });

  it("holds the reservation while an answer is under way", async () => {
    // Long enough for the second request to come while the first is held, on a loaded machine too.
    await start({ outputTokens: 300, outputFraction: 0, latencyMs: 1000 });
    const slow = complete({ max_tokens: 300 });
    while (api!.stats().inFlight === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = await complete({ max_tokens: 1 });
    expect(refused.status).toBe(429);
    expect(refused.headers["x-ratelimit-remaining-output-tokens"]).toBe("0");
    expect((await slow).headers["x-ratelimit-remaining-output-tokens"]).toBe("300");
  });

  it("counts input tokens, from prompt_tokens or a quarter of the prompt's length; waits for the slowest bucket", async () => {
    await start({ requests: 10, inputTokens: 100 });
    expect((await complete({ max_tokens: 1, prompt: "x".repeat(200) })).headers["x-ratelimit-remaining-input-tokens"]).toBe("50");
    const refused = await complete({ max_tokens: 1, prompt_tokens: 80 });
    expect(refused.status).toBe(429);
    // 30 more tokens come in 300 ms; a request is there at once.
    expect(refused.headers["retry-after-ms"]).toBe("300");
    expect(refused.headers["x-ratelimit-remaining-requests"]).toBe("9");
  });

  it("refuses with 400, not 429, what no wait lets in: a bad body, a cost above a limit", async () => {
    await start({ requests: 5, outputTokens: 100 });
    expect((await complete({ prompt: "no max_tokens" })).status).toBe(400);
    expect((await complete({ max_tokens: -1 })).status).toBe(400);
    const large = await complete({ max_tokens: 101 });
    expect([large.status, large.body.error.type, large.headers["retry-after"]]).toEqual([400, "request_too_large", undefined]);
    expect(api!.stats()).toMatchObject({ total: 3, rejected: 3, ok: 0 });
  });

  it("follows a hidden schedule of request limits, telling nothing of it with advertise off", async () => {
    await start({ schedule: [{ fromMs: 0, requests: 5 }, { fromMs: 1000, requests: 2 }, { fromMs: 2000, requests: 9 }], advertise: false });
    const burst = async (n: number) => {
      const statuses: number[] = [];
      for (let i = 0; i < n; i++) statuses.push((await complete({ max_tokens: 1 })).status);
      return statuses.filter((status) => status === 200).length;
    };
    expect(await burst(7)).toBe(5);
    nowMs = 1000;
    expect(await burst(7)).toBe(2);
    // A raised limit fills at its new rate from the instant it changed, though no request came then: in 1 s the bucket earns 9.
    nowMs = 3000;
    expect(await burst(12)).toBe(9);
    const refused = await complete({ max_tokens: 1 });
    expect(Object.keys(refused.headers).filter((name) => name.startsWith("x-ratelimit"))).toEqual([]);
    expect(refused.headers["retry-after"]).toBe("1");
  });

  it("runs standalone from its arguments, on 127.0.0.1, and stops on SIGTERM", async () => {
    const child = spawn(process.execPath, [new URL("../fixtures/mock-api.mjs", import.meta.url).pathname, "--period", "1m", "--requests", "2"], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const [line] = await createInterface({ input: child.stdout })[Symbol.asyncIterator]().next().then((next) => [next.value as string]);
      const { port } = JSON.parse(line!);
      const post = () => fetch(`http://127.0.0.1:${port}/v1/complete`, { method: "POST", body: '{"max_tokens":5}' });
      const statuses = [(await post()).status, (await post()).status];
      const refused = await post();
      expect([...statuses, refused.status]).toEqual([200, 200, 429]);
      // Two a minute: the next in 30 s.
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(29);
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
    }
  });
});

describe("formatGoDuration", () => {
  it.each([
    [0, "0ms"],
    [19.2, "20ms"],
    [999.5, "1s"],
    [1000, "1s"],
    [1500, "1.5s"],
    [59_992, "59.992s"],
    [360_000, "6m0s"],
    [3_723_500, "1h2m3.5s"],
  ])("writes %d ms as %s, which the report parser reads back", (ms, text) => {
    expect(formatGoDuration(ms)).toBe(text);
    const parsed = parseServerReport(`HTTP/1.1 200 OK\nx-ratelimit-reset-requests: ${text}\n`, 0).responses[0]!.limits[0]!.resetMs!;
    expect(parsed).toBeGreaterThanOrEqual(ms);
    expect(parsed - ms).toBeLessThan(1);
  });
});
