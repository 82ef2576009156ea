import { describe, expect, it } from "vitest";
import { describeSkippedLine, describeTraceError, describeTraceOptionError } from "../../src/cli/simulate/errors.js";
import { BadLine } from "../../src/simulate/trace-line.js";
import {
  createTraceReport,
  MAX_LINE_BYTES,
  TraceError,
  traceArrivals,
  TraceOptionError,
  type TraceOptions,
  type TraceReport,
} from "../../src/simulate/trace-reader.js";

interface Event {
  timeMs: number;
  cost: number;
  key?: string;
}

const defaults: TraceOptions = { costField: undefined, keyField: undefined, costBytes: false, wantKeys: false, withKeys: false, skipBad: false };

/** Reads `text` as a trace delivered in chunks of `chunkSize` bytes (to cross line boundaries). */
async function read(text: string, options: Partial<TraceOptions> = {}, chunkSize = 1 << 20): Promise<{ events: Event[]; report: TraceReport }> {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunkSize) chunks.push(bytes.subarray(i, i + chunkSize));
  return readChunks(chunks, options);
}

/** `read`, with a failure worded as the CLI words it: the tables below pin what users read. */
async function readAsCli(text: string, options: Partial<TraceOptions> = {}, chunkSize = 1 << 20): Promise<unknown> {
  return read(text, options, chunkSize).catch((error: unknown) => {
    if (error instanceof TraceError) throw new Error(describeTraceError(error));
    if (error instanceof TraceOptionError) throw new Error(describeTraceOptionError(error));
    throw error;
  });
}

async function readChunks(chunks: Iterable<Buffer>, options: Partial<TraceOptions> = {}): Promise<{ events: Event[]; report: TraceReport }> {
  const report = createTraceReport();
  const events: Event[] = [];
  for await (const batch of traceArrivals(chunks, { ...defaults, ...options, batchSize: 3 }, report)) {
    for (let i = 0; i < batch.count; i++) {
      const event: Event = { timeMs: batch.timesMs[i]!, cost: batch.costs[i]! };
      if (batch.keys) event.key = batch.keys[i];
      events.push(event);
    }
  }
  return { events, report };
}

const CLF = [
  `127.0.0.1 - frank [10/Oct/2026:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`,
  `10.0.0.2 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 304 -`,
  `127.0.0.1 - - [10/Oct/2026:13:55:38 -0700] "POST /api?q=\\"x\\" HTTP/1.1" 201 17 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64)"`,
].join("\n");

describe("trace files", () => {
  it("reads seconds from the start exactly (0.1 s is 100 ms), keeping the file's order for equal times", async () => {
    const { events, report } = await read("0\n0.1\n0.1\n3.125\n7.333333333\n", {});
    expect(events.map((e) => e.timeMs)).toEqual([0, 100, 100, 3125, 7333.333333]);
    expect(report.events).toBe(5);
    expect(report.timeKind).toBe("seconds");
  });

  it("takes the cost and key from the fields named, separated by spaces, tabs or commas; skips a header, comments, blank lines and CR", async () => {
    const text = "time,cost,client\r\n# a comment\n0.5,3,alice\r\n\n1\t1\tbob\n  \n2.25 2.5 alice\n";
    const { events } = await read(text, { costField: 2, keyField: 3, withKeys: true });
    expect(events).toEqual([
      { timeMs: 500, cost: 3, key: "alice" },
      { timeMs: 1000, cost: 1, key: "bob" },
      { timeMs: 2250, cost: 2.5, key: "alice" },
    ]);
  });

  it("with ipv6Prefix, keys an IPv6 address by its network, as the proxy does; IPv4 and other keys as they are", async () => {
    const text = "0 2001:db8:1:200::1\n1 2001:DB8:1:2ff:0:0:0:2\n2 2001:db8:1:300::1\n3 192.0.2.1\n4 user:42\n5 ::1\n";
    const keys = async (ipv6Prefix?: number) => (await read(text, { keyField: 2, withKeys: true, ipv6Prefix })).events.map((event) => event.key);
    expect(await keys(56)).toEqual(["2001:db8:1:200::/56", "2001:db8:1:200::/56", "2001:db8:1:300::/56", "192.0.2.1", "user:42", "::/56"]);
    expect(await keys(128)).toEqual(["2001:db8:1:200::1", "2001:db8:1:2ff::2", "2001:db8:1:300::1", "192.0.2.1", "user:42", "::1"]);
    expect(await keys()).toEqual(["2001:db8:1:200::1", "2001:DB8:1:2ff:0:0:0:2", "2001:db8:1:300::1", "192.0.2.1", "user:42", "::1"]);
    const log = `2001:db8:1:2ff::9 - - [10/Oct/2026:13:55:36 -0700] "GET / HTTP/1.1" 200 2\n`;
    expect((await read(log, { wantKeys: true, withKeys: true, ipv6Prefix: 56 })).events.map((event) => event.key)).toEqual(["2001:db8:1:200::/56"]);
  });

  it("gives the same events whatever the chunks, even one byte at a time (lines cut across chunks, UTF-8 keys)", async () => {
    const text = "0.5 1 ünïcödé\n1.5 2 b\n2.5 1 ünïcödé";
    const whole = await read(text, { costField: 2, keyField: 3, withKeys: true });
    const bytewise = await read(text, { costField: 2, keyField: 3, withKeys: true }, 1);
    expect(bytewise.events).toEqual(whole.events);
    expect(whole.events.map((e) => e.key)).toEqual(["ünïcödé", "b", "ünïcödé"]);
  });

  it("rebases epoch seconds and ISO-8601 times to the first event, keeping nanoseconds", async () => {
    const epoch = await read("1760104536.25\n1760104536.35\n1760104538.000000001\n");
    expect(epoch.events.map((e) => e.timeMs)).toEqual([0, 100, 1750.000001]);
    expect(epoch.report.timeKind).toBe("epoch");
    const iso = await read("2026-10-10T13:55:36.250Z\n2026-10-10T15:55:37+02:00\n2026-10-10T13:55:38.5\n");
    expect(iso.events.map((e) => e.timeMs)).toEqual([0, 750, 2250]);
    expect(iso.report.timeKind).toBe("iso");
    const zones = await read("2026-10-10T13:55:36Z\n2026-10-10T19:25:37+0530\n2026-10-10T15:55:38+02\n2026-10-10T03:55:39-10:00\n");
    expect(zones.events.map((e) => e.timeMs)).toEqual([0, 1000, 2000, 3000]);
    const leap = await read("2024-02-28T23:59:59Z\n2024-02-29T00:00:00Z\n2024-03-01T00:00:00.5+00:00\n");
    expect(leap.events.map((e) => e.timeMs)).toEqual([0, 1000, 86_401_500]);
  });

  it("recognises Common and Combined Log Format without options: time, client, response size", async () => {
    const { events, report } = await read(CLF, { costBytes: true, wantKeys: true, withKeys: true });
    expect(report.shape).toBe("access-log");
    expect(events).toEqual([
      { timeMs: 0, cost: 2326, key: "127.0.0.1" },
      { timeMs: 0, cost: 0, key: "10.0.0.2" }, // "-" is no body
      { timeMs: 2000, cost: 17, key: "127.0.0.1" },
    ]);
    const counted = await read(CLF);
    expect(counted.events.map((e) => e.cost)).toEqual([1, 1, 1]);
  });

  it("reads an access log's time to the fraction of a second, as tbucket proxy and Apache's %{msec_frac}t write it, whole seconds beside", async () => {
    const line = (time: string) => `10.0.0.1 - - [${time}] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0" admitted 0\n`;
    const { events, report } = await read(
      line("10/Oct/2026:13:55:36.042 +0000") + line("10/Oct/2026:13:55:36.5 +0000") + line("10/Oct/2026:13:55:37 +0000") + line("10/Oct/2026:15:55:37.123456789 +0200"),
    );
    expect(report.shape).toBe("access-log");
    expect(events.slice(0, 3).map((e) => e.timeMs)).toEqual([0, 458, 958]);
    expect(events[3]!.timeMs).toBeCloseTo(1081.456789, 6);
  });

  it("skips the proxy's lines whose request never reached the limit (invalid, failed), keeps cancelled ones, and reads plain logs' last fields as they are", async () => {
    const line = (ms: number, status: number, tail: string) => `10.0.0.1 - - [10/Oct/2026:13:55:36.${String(ms).padStart(3, "0")} +0000] "GET / HTTP/1.1" ${status} 5 "-" ${tail}\n`;
    const { events, report } = await read(
      line(0, 400, `"curl/8.5.0" invalid 0`) +
        line(10, 200, `"curl/8.5.0" admitted 0`) +
        line(20, 503, `"curl/8.5.0" failed 0`) +
        line(30, 501, `"curl/8.5.0" invalid 0`) +
        line(40, 499, `"curl/8.5.0" cancelled 35`) +
        line(50, 429, `"curl/8.5.0" refused 0`) +
        // A client's user agent cannot pass for the decision: its quotes are escaped.
        line(60, 200, `"x\\" invalid 0" admitted 0`) +
        line(70, 400, `"curl/8.5.0" queued 0`),
    );
    // The first arrival, not the first line, is the origin.
    expect(events.map((e) => e.timeMs)).toEqual([0, 30, 40, 50, 60]);
    expect([report.lines, report.events, report.skipped]).toEqual([8, 5, 0]);
    // nginx's log with a last field of its own (here $request_time) is every line an arrival.
    const nginx = await read(line(0, 400, `"curl/8.5.0" 0.001`) + line(10, 503, `"curl/8.5.0" failed`));
    expect(nginx.events).toHaveLength(2);
  });

  it("takes an event earlier than the one before at that one's time, and counts it", async () => {
    const { events, report } = await read("1\n3\n2\n4\n");
    expect(events.map((e) => e.timeMs)).toEqual([1000, 3000, 3000, 4000]);
    expect(report.outOfOrder).toBe(1);
  });

  const TIME = `expected seconds from the start (12.5), epoch seconds (1760104536.25) or an ISO-8601 time (2026-10-10T13:55:36.25Z)`;
  it.each([
    ["0\n1\nabc\n", {}, `line 3: "abc" is not a time; ${TIME}; or pass --skip-bad to skip such lines`],
    ["0\n-1\n", {}, `line 2: "-1" is not a time; ${TIME}; or pass --skip-bad to skip such lines`],
    ["0 1\n1\n", { costField: 2 }, `line 2: has 1 field, expected at least 2 (--cost-field 2); or pass --skip-bad to skip such lines`],
    ["0 x\n", { costField: 2 }, `line 1: field 2 "x" is not a cost; expected a number of 0 or more (--cost-field 2); or pass --skip-bad to skip such lines`],
    ["0 1\n1 -2\n", { costField: 2 }, `line 2: field 2 "-2" is not a cost; expected a number of 0 or more (--cost-field 2); or pass --skip-bad to skip such lines`],
    ["0 a\n1\n", { keyField: 2, withKeys: true }, `line 2: has 1 field, expected at least 2 (--key-field 2); or pass --skip-bad to skip such lines`],
    ["1\n1760104536\n", {}, `line 2: the time is epoch seconds but line 1 had seconds from the start; use one kind of time in a trace`],
    ["2026-13-45T00:00:00Z\n", {}, `line 1: "2026-13-45T00:00:00Z" is not a valid date: there is no month 13; ${TIME}; or pass --skip-bad to skip such lines`],
    // Date.parse would take these as 2 March, 1 March and the next day: the trace would move without a word.
    ["2026-02-30T00:00:00Z\n", {}, `line 1: "2026-02-30T00:00:00Z" is not a valid date: February 2026 has 28 days; ${TIME}; or pass --skip-bad to skip such lines`],
    ["2026-02-28T00:00:00Z\n2026-02-29T00:00:00Z\n", {}, `line 2: "2026-02-29T00:00:00Z" is not a valid date: February 2026 has 28 days; ${TIME}; or pass --skip-bad to skip such lines`],
    ["2026-10-10T24:00:00Z\n", {}, `line 1: "2026-10-10T24:00:00Z" is not a valid date: the hour is 24, past 23; ${TIME}; or pass --skip-bad to skip such lines`],
    ["2026-10-10T23:60:00\n", {}, `line 1: "2026-10-10T23:60:00" is not a valid date: the minute is 60, past 59; ${TIME}; or pass --skip-bad to skip such lines`],
    ["2026-10-10T10:00:00+24:00\n", {}, `line 1: "2026-10-10T10:00:00+24:00" is not a valid date: the zone offset is not between -23:59 and +23:59; ${TIME}; or pass --skip-bad to skip such lines`],
    [
      `127.0.0.1 - - [30/Feb/2026:13:55:36 -0700] "GET / HTTP/1.0" 200 1\n`,
      {},
      `line 1: "30/Feb/2026:13:55:36 -0700" is not a valid time: February 2026 has 28 days; expected an access log line like 127.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326; or pass --skip-bad to skip such lines`,
    ],
    [
      `127.0.0.1 - - [10/Oct/2026:13:55:36 +2400] "GET / HTTP/1.0" 200 1\n`,
      {},
      `line 1: "10/Oct/2026:13:55:36 +2400" is not a valid time: the zone offset is not between -23:59 and +23:59; expected an access log line like 127.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326; or pass --skip-bad to skip such lines`,
    ],
    [`${CLF}\nnot a log line\n`, {}, `line 4: expected an access log line like 127.0.0.1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 2326; or pass --skip-bad to skip such lines`],
  ])("stops at a bad line with its number and what was expected: %j", async (text, options, message) => {
    await expect(readAsCli(text, options)).rejects.toThrow(message);
  });

  it.each([
    ["0\n1\nabc\n", {}, { lineNumber: 3, kind: "time", text: "abc" }, `line 3: "abc" is not a time; ${TIME}`],
    ["0 1\n1\n", { costField: 2 }, { lineNumber: 2, kind: "missing-field", fieldCount: 1, field: { option: "costField", index: 2 } }, `line 2: has 1 field, expected at least 2 (costField 2)`],
    ["0 x\n", { costField: 2 }, { lineNumber: 1, kind: "cost", text: "x", field: { option: "costField", index: 2 } }, `line 1: field 2 "x" is not a cost; expected a number of 0 or more (costField 2)`],
    ["0 a\n1\n", { keyField: 2, withKeys: true }, { lineNumber: 2, kind: "missing-field", fieldCount: 1, field: { option: "keyField", index: 2 } }, `line 2: has 1 field, expected at least 2 (keyField 2)`],
    [`${CLF}\nnot a log line\n`, {}, { lineNumber: 4, kind: "access-log", text: "not a log line" }, `line 4: expected an access log line like`],
  ])("as a library, a bad line is described by fields and in the options' own names, never a flag: %j", async (text, options, fields, message) => {
    const error = await read(text, options).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(TraceError);
    const { lineNumber, bad } = error as TraceError;
    expect(bad).toBeInstanceOf(BadLine);
    const { lineNumber: _line, ...badFields } = fields;
    expect({ lineNumber, ...bad }).toMatchObject({ lineNumber, ...badFields });
    expect(lineNumber).toBe(fields.lineNumber);
    expect((error as TraceError).message.startsWith(message)).toBe(true);
    expect((error as TraceError).message).not.toContain("--");
  });

  it.each([
    ["0 1\n", { withKeys: true, wantKeys: true }, "withKeys"],
    ["0 1\n", { costBytes: true }, "costBytes"],
    [CLF, { costField: 2 }, "costField"],
    [CLF, { keyField: 1 }, "keyField"],
  ])("as a library, an option that does not suit the trace is named as the option, never a flag: %j", async (text, options, option) => {
    const error = await read(text, options).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(TraceOptionError);
    expect((error as TraceOptionError).option).toBe(option);
    expect((error as TraceOptionError).message.startsWith(`${option}: `)).toBe(true);
    expect((error as TraceOptionError).message).not.toContain("--");
  });

  it("with --skip-bad counts the bad lines and keeps the first few with their reasons", async () => {
    const { events, report } = await read("0\nx\n1\ny\nz\nw\n2\n", { skipBad: true });
    expect(events.map((e) => e.timeMs)).toEqual([0, 1000, 2000]);
    expect(report.skipped).toBe(4);
    expect(report.skippedExamples.map(describeSkippedLine)).toEqual([
      `line 2: "x" is not a time; ${TIME}`,
      `line 4: "y" is not a time; ${TIME}`,
      `line 5: "z" is not a time; ${TIME}`,
    ]);
  });

  it.each([
    ["0 1\n", { withKeys: true, wantKeys: true }, `--per-key: this trace is not an access log; name the field holding each key with --key-field N`],
    ["0 1\n", { costBytes: true }, `--cost bytes: this trace is not an access log; name the field holding each size with --cost-field N`],
    [CLF, { costField: 2 }, `--cost-field: not with an access log, whose fields are known; use --cost bytes to take the response size`],
    [CLF, { keyField: 1 }, `--key-field: not with an access log, whose fields are known; --per-key keys on the client address`],
  ])("refuses options that do not suit the trace: %j", async (text, options, message) => {
    await expect(readAsCli(text, options)).rejects.toThrow(message);
  });

  describe("long lines (regression: a file without newlines was scanned again at every chunk, and held whole)", () => {
    const LONG = `line 2: the line is longer than ${MAX_LINE_BYTES} bytes, more than any trace line needs; it starts "${"9".repeat(200)}…"`;

    it("makes a line past 1 MiB a bad line quoting its first 200 characters, whether it ends or not", async () => {
      const long = "9".repeat(MAX_LINE_BYTES + 1);
      for (const text of [`0\n${long}\n1\n`, `0\n${long}`]) {
        for (const chunkSize of [1 << 20, 4096, 3]) {
          if (chunkSize === 3 && text.endsWith("\n1\n")) continue; // a million one-byte chunks say nothing more
          await expect(readAsCli(text, {}, chunkSize)).rejects.toThrow(`${LONG}; or pass --skip-bad to skip such lines`);
        }
      }
    });

    it("with --skip-bad skips it like any bad line and reads on", async () => {
      const { events, report } = await read(`0\n${"9".repeat(MAX_LINE_BYTES + 10)}\n1\n`, { skipBad: true }, 65_536);
      expect(events.map((e) => e.timeMs)).toEqual([0, 1000]);
      expect(report).toMatchObject({ skipped: 1, lines: 3 });
      expect(report.skippedExamples.map(describeSkippedLine)).toEqual([LONG]);
    });

    it("keeps a line of exactly the limit, spread over many chunks", async () => {
      const line = `5 ${"x".repeat(MAX_LINE_BYTES - 2)}`;
      const { events } = await read(`0 a\n${line}\n`, { keyField: 2, withKeys: true }, 1000);
      expect(events.map((e) => [e.timeMs, e.key?.length])).toEqual([
        [0, 1],
        [5000, MAX_LINE_BYTES - 2],
      ]);
    });

    it("reads a 64 MiB line without newline in time linear in its length, holding only its start", async () => {
      // Quadratic copying of 64 MiB in 64 KiB chunks is 1024 copies of up to 64 MiB: tens of seconds.
      const chunk = Buffer.alloc(65_536, 57);
      const started = performance.now();
      const chunks = (function* () {
        for (let i = 0; i < 1024; i++) yield chunk;
      })();
      const { events, report } = await readChunks(chunks, { skipBad: true });
      expect(events).toEqual([]);
      expect(report.skipped).toBe(1);
      expect(performance.now() - started).toBeLessThan(5000);
    });

    it("escapes control characters of a bad line, so that a trace cannot drive the terminal", async () => {
      await expect(read("\u001b[2Jx\n")).rejects.toThrow(`line 1: "\\u001b[2Jx" is not a time`);
      const log = `127.0.0.1 - [x] [31/Apr/2026:13:55:36 +0000] "GET / HTTP/1.0" 200 1\n`;
      await expect(read(log)).rejects.toThrow(`line 1: "31/Apr/2026:13:55:36 +0000" is not a valid time: April 2026 has 30 days`);
    });

    it("quotes at most 200 characters of a bad field", async () => {
      await expect(readAsCli(`${"1".repeat(300)}x\n`)).rejects.toThrow(`line 1: "${"1".repeat(200)}…" is not a time`);
      await expect(readAsCli(`0 ${"1".repeat(300)}x\n`, { costField: 2 })).rejects.toThrow(`line 1: field 2 "${"1".repeat(200)}…" is not a cost`);
    });

    it("counts the fields of a line with many of them in one pass", async () => {
      const started = performance.now();
      await expect(readAsCli(`0${" 1".repeat(400_000)}\n`, { costField: 500_000 })).rejects.toThrow(
        `line 1: has 400001 fields, expected at least 500000 (--cost-field 500000)`,
      );
      expect(performance.now() - started).toBeLessThan(5000);
    });
  });
});
