import { open } from "node:fs/promises";

/**
 * The report channel of `tbucket run` (DESIGN 13): a file a job writes lines
 * to, most often the response headers that `curl -D FILE` saves. Each status
 * line (`HTTP/1.1 429 Too Many Requests`, `HTTP/2 200`) starts a response, so
 * a file in which curl followed a redirect or retried holds several, the
 * job's outcome last; lines before the first status line (a job that writes
 * `tbucket-cost: N` itself) form a response without a status.
 *
 * What is read, header names in any case:
 *
 *   Retry-After: 3 | Wed, 21 Oct 2015 07:28:00 GMT    wait, in seconds or until a date
 *   retry-after-ms: 2500                              wait, in milliseconds
 *   x-ratelimit-{limit,remaining,reset}-NAME          OpenAI's; reset as 6m0s, 1s, 20ms or seconds
 *   anthropic-ratelimit-NAME-{limit,remaining,reset}  Anthropic's; reset an RFC 3339 instant
 *   RateLimit-Policy: "default";q=100;w=60            IETF: q per w seconds, a list of several
 *   RateLimit: "default";r=9;t=1                      IETF: r left now, full again in t seconds
 *   tbucket-cost: N[, N...]                           the job's real costs, to settle
 *
 * Also the older IETF forms that deployed servers still send: the unnamed
 * `RateLimit-Limit`/`-Remaining`/`-Reset` fields (drafts up to 06) and the
 * dictionary `RateLimit: limit=100, remaining=25, reset=5` (draft 07), whose
 * limit is named "default"; and the unnamed `x-ratelimit-limit`/`-remaining`/`-reset`.
 * A reset given as a plain number of a billion seconds or more is an instant
 * in Unix seconds (GitHub's form): no server means a wait of 31 years.
 *
 * Waits and resets are returned in milliseconds from `nowEpochMs`, the wall
 * clock the dates are read against; past instants are 0. Lines of no known
 * header are ignored; a known header whose value cannot be read is left out
 * of the response and said in `problems`, one short line each.
 */

/** One limit the server told of: its quota, what is left, and when it is full again. */
export interface ServerLimit {
  /** `requests`, `tokens`, `input-tokens`, an IETF policy's name; `default` when the field names none. */
  name: string;
  limit?: number;
  remaining?: number;
  /** Until the limit is reset (OpenAI, Anthropic) or full again (IETF `t`), from the report's now. */
  resetMs?: number;
  /** An IETF policy's window (`w`), over which `limit` is granted. */
  windowMs?: number;
}

/** What one response said. */
export interface ServerResponse {
  /** The status code; undefined for the lines before any status line. */
  status: number | undefined;
  /** 429 or 503: the server refused for load; the job should be retried later. */
  throttled: boolean;
  /** The server's wait from Retry-After and retry-after-ms, the latest instant when they disagree. */
  retryAfterMs: number | undefined;
  limits: ServerLimit[];
  /** From `tbucket-cost`, in the order of the cost limits; empty when none was written. */
  costs: number[];
}

/** A report file read: its responses, in the order written, and what could not be read. */
export interface ServerReport {
  responses: ServerResponse[];
  /** One line each, naming the header and why; duplicates said once. */
  problems: string[];
  /** The file was longer than the cap: only its first bytes were read. */
  truncated: boolean;
}

/** The most of a report that is read: a job writing megabytes costs this much memory, no more. */
export const MAX_REPORT_BYTES = 64 * 1024;

/** At most this many problems are kept from one report; the rest are one more line's worth of noise. */
const MAX_PROBLEMS = 8;

/** The largest count a cost or limit may be (2^53 - 1, as MAX_COST): beyond it, numbers are no longer exact. */
const MAX_EXACT = Number.MAX_SAFE_INTEGER;

/** Parses the text of a report (see the module's doc) against the wall clock `nowEpochMs`. */
export function parseServerReport(text: string, nowEpochMs: number): ServerReport {
  const problems = new Problems();
  const responses: ServerResponse[] = [];
  let fields: Field[] = [];
  let status: number | undefined;
  const finish = () => {
    if (status !== undefined || fields.length > 0) responses.push(interpret(status, fields, nowEpochMs, problems));
  };
  for (const rawLine of text.split("\n")) {
    const line = rawLine.endsWith("\r") ? rawLine.slice(0, -1) : rawLine;
    if (/^HTTP\//i.test(line)) {
      const match = /^HTTP\/\d(?:\.\d)?[ \t]+(\d{3})(?:[ \t].*)?$/i.exec(line);
      if (!match) {
        problems.add(`status line ${quote(line)} is not like "HTTP/1.1 429 Too Many Requests"`);
        continue;
      }
      finish();
      status = Number(match[1]);
      fields = [];
      continue;
    }
    // An obsolete folded line continues the field before it.
    if (/^[ \t]/.test(line) && fields.length > 0 && line.trim() !== "") {
      fields[fields.length - 1]!.value += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) continue;
    fields.push({ name, value: line.slice(colon + 1).trim() });
  }
  finish();
  return { responses, problems: problems.lines, truncated: false };
}

/**
 * Reads the report at `path`, at most `maxBytes` of it (a longer file is cut
 * at its last whole line within them, `truncated`, and said in `problems`).
 * Undefined when there is no file: the job wrote no report. A file that
 * cannot be read is a report with that problem and no responses.
 */
export async function readServerReport(path: string, nowEpochMs: number, maxBytes = MAX_REPORT_BYTES): Promise<ServerReport | undefined> {
  let bytes: Buffer;
  let truncated: boolean;
  try {
    const file = await open(path, "r");
    try {
      // One byte more than the cap tells a file of exactly the cap from a longer one.
      const buffer = Buffer.alloc(maxBytes + 1);
      let length = 0;
      while (length < buffer.length) {
        const { bytesRead } = await file.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
      }
      truncated = length > maxBytes;
      bytes = buffer.subarray(0, Math.min(length, maxBytes));
    } finally {
      await file.close();
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    return { responses: [], problems: [`report ${path}: cannot be read (${code ?? (error as Error).message})`], truncated: false };
  }
  if (truncated) {
    // A line cut by the cap is not read: its value would be a wrong one.
    const lastNewline = bytes.lastIndexOf(0x0a);
    bytes = bytes.subarray(0, lastNewline + 1);
  }
  // Latin-1 keeps every byte one character, so a cut never splits a character.
  const report = parseServerReport(bytes.toString("latin1"), nowEpochMs);
  if (!truncated) return report;
  return { ...report, problems: [...report.problems, `report ${path}: longer than ${maxBytes} bytes; the rest was ignored`], truncated };
}

/**
 * The wait a throttled response asks for: its Retry-After, or, when the
 * server gave none, the latest reset of a limit it said was used up. The
 * latest instant binds (DESIGN 13). Undefined when the response is not
 * throttled or says no time.
 */
export function throttleWaitMs(response: ServerResponse): number | undefined {
  if (!response.throttled) return undefined;
  let waitMs = response.retryAfterMs;
  for (const limit of response.limits) {
    if (limit.remaining === undefined || limit.remaining > 0 || limit.resetMs === undefined) continue;
    waitMs = Math.max(waitMs ?? 0, limit.resetMs);
  }
  return waitMs;
}

/**
 * The job's real costs: those of the last `tbucket-cost` line in the report,
 * whichever response it fell in (a job may write it before curl runs, or
 * after). Undefined when the job wrote none: its estimate stands.
 */
export function settledCosts(report: ServerReport): number[] | undefined {
  return report.responses.findLast((response) => response.costs.length > 0)?.costs;
}

interface Field {
  name: string;
  value: string;
}

class Problems {
  readonly lines: string[] = [];
  add(line: string): void {
    if (this.lines.length < MAX_PROBLEMS && !this.lines.includes(line)) this.lines.push(line);
  }
}

/** A value as a problem shows it: quoted, and short, since a job may write anything. */
function quote(value: string): string {
  return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
}

function interpret(status: number | undefined, fields: readonly Field[], nowEpochMs: number, problems: Problems): ServerResponse {
  const limits = new Map<string, ServerLimit>();
  const limitNamed = (name: string): ServerLimit => {
    let limit = limits.get(name);
    if (!limit) limits.set(name, (limit = { name }));
    return limit;
  };
  let retryAfterMs: number | undefined;
  const waitAtLeast = (ms: number) => {
    retryAfterMs = Math.max(retryAfterMs ?? 0, ms);
  };
  let costs: number[] = [];
  // Lists may be split over several lines of one field (RFC 9110 5.3): they are joined in order.
  const policies: string[] = [];
  const states: string[] = [];

  for (const { name, value } of fields) {
    const problem = (why: string) => problems.add(`${name}: ${quote(value)} ${why}`);
    if (name === "retry-after") {
      const ms = parseRetryAfter(value, nowEpochMs);
      if (ms === undefined) problem("is neither seconds nor an HTTP date");
      else waitAtLeast(ms);
    } else if (name === "retry-after-ms") {
      const ms = parseNumber(value);
      if (ms === undefined) problem("is not a number of milliseconds");
      else waitAtLeast(ms);
    } else if (name === "tbucket-cost") {
      const parsed = value.split(",").map((part) => parseNumber(part.trim()));
      if (parsed.some((cost) => cost === undefined || cost > MAX_EXACT)) problem("is not a list of numbers, each 0 to 2^53 - 1, like 120 or 120, 40");
      else costs = parsed as number[];
    } else if (name === "ratelimit-policy") {
      policies.push(value);
    } else if (name === "ratelimit") {
      states.push(value);
    } else {
      const known = openAiField(name) ?? anthropicField(name) ?? legacyIetfField(name);
      if (!known) continue;
      if (known.part === "reset") {
        const ms = known.anthropic ? parseInstantOrSeconds(value, nowEpochMs) : parseResetDuration(value, nowEpochMs);
        if (ms === undefined) problem(known.anthropic ? "is not an RFC 3339 instant" : "is not a duration like 6m0s, 1s, 20ms or seconds");
        else limitNamed(known.name).resetMs = ms;
      } else {
        const count = parseNumber(value);
        if (count === undefined) problem("is not a number");
        else limitNamed(known.name)[known.part] = count;
      }
    }
  }
  if (policies.length > 0) readPolicies(policies.join(", "), limitNamed, problems);
  if (states.length > 0) readStates(states.join(", "), limitNamed, problems);
  return { status, throttled: status === 429 || status === 503, retryAfterMs, limits: [...limits.values()], costs };
}

type Part = "limit" | "remaining" | "reset";

interface KnownField {
  name: string;
  part: Part;
  anthropic?: boolean;
}

function openAiField(name: string): KnownField | undefined {
  const match = /^x-ratelimit-(limit|remaining|reset)(?:-(.+))?$/.exec(name);
  return match ? { part: match[1] as Part, name: match[2] ?? "default" } : undefined;
}

function anthropicField(name: string): KnownField | undefined {
  const match = /^anthropic-ratelimit-(.+)-(limit|remaining|reset)$/.exec(name);
  return match ? { part: match[2] as Part, name: match[1]!, anthropic: true } : undefined;
}

function legacyIetfField(name: string): KnownField | undefined {
  const match = /^ratelimit-(limit|remaining|reset)$/.exec(name);
  return match ? { part: match[1] as Part, name: "default" } : undefined;
}

/** A non-negative decimal number (no sign, no exponent), or undefined. */
function parseNumber(text: string): number | undefined {
  if (!/^(?:\d+(?:\.\d*)?|\.\d+)$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}

/** Plain seconds from 1e9 on are Unix instants, not waits. */
const UNIX_SECONDS_FROM = 1e9;

function secondsOrInstant(seconds: number, nowEpochMs: number): number {
  return seconds >= UNIX_SECONDS_FROM ? Math.max(0, seconds * 1000 - nowEpochMs) : seconds * 1000;
}

function parseRetryAfter(text: string, nowEpochMs: number): number | undefined {
  const seconds = parseNumber(text);
  if (seconds !== undefined) return seconds * 1000;
  const instant = parseHttpDate(text, nowEpochMs);
  return instant === undefined ? undefined : Math.max(0, instant - nowEpochMs);
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/** An HTTP date (RFC 9110 5.6.7) in Unix milliseconds: IMF-fixdate, or the obsolete RFC 850 and asctime forms. */
function parseHttpDate(text: string, nowEpochMs: number): number | undefined {
  let match = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/i.exec(text);
  let day: string, month: string, year: number, clock: string[];
  if (match) {
    [day, month, year, clock] = [match[1]!, match[2]!, Number(match[3]), match.slice(4, 7)];
  } else if ((match = /^[a-z]+day, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/i.exec(text))) {
    // RFC 9110: a two-digit year more than 50 years ahead is in the past century.
    const short = Number(match[3]);
    [day, month, year, clock] = [match[1]!, match[2]!, 2000 + short > new Date(nowEpochMs).getUTCFullYear() + 50 ? 1900 + short : 2000 + short, match.slice(4, 7)];
  } else if ((match = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/i.exec(text))) {
    [day, month, year, clock] = [match[2]!.trim(), match[1]!, Number(match[6]), match.slice(3, 6)];
  } else {
    return undefined;
  }
  const monthIndex = MONTHS.indexOf(month.toLowerCase());
  const [hours, minutes, seconds] = clock.map(Number) as [number, number, number];
  if (monthIndex < 0 || hours > 23 || minutes > 59 || seconds > 60) return undefined;
  const ms = Date.UTC(year, monthIndex, Number(day), hours, minutes, seconds);
  return new Date(ms).getUTCDate() === Number(day) ? ms : undefined;
}

const DURATION_UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, "μs": 0.001, ns: 0.000001 };

/** OpenAI's reset: a Go duration (`6m0s`, `1s`, `20ms`, `1h2m3.5s`), or plain seconds (or a Unix instant). */
function parseResetDuration(text: string, nowEpochMs: number): number | undefined {
  const seconds = parseNumber(text);
  if (seconds !== undefined) return secondsOrInstant(seconds, nowEpochMs);
  if (!/^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:h|ms|m|s|us|µs|μs|ns))+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|μs|ns)/g)) ms += Number(amount) * DURATION_UNIT_MS[unit!]!;
  return ms;
}

/** Anthropic's reset: an RFC 3339 instant; plain seconds (or a Unix instant) are taken too. */
function parseInstantOrSeconds(text: string, nowEpochMs: number): number | undefined {
  const seconds = parseNumber(text);
  if (seconds !== undefined) return secondsOrInstant(seconds, nowEpochMs);
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/.test(text)) return undefined;
  const instant = Date.parse(text.replace(" ", "T"));
  return Number.isNaN(instant) ? undefined : Math.max(0, instant - nowEpochMs);
}

/**
 * One member of a Structured Field list (RFC 9651): its bare item and
 * parameters, as far as rate limits need (strings, tokens, numbers; inner
 * lists and byte sequences are skipped over, not read).
 */
interface ListMember {
  item: string | number | undefined;
  params: Map<string, string | number | true>;
}

/** The members of a Structured Field list, or undefined when it is not one. */
function parseList(text: string): ListMember[] | undefined {
  const members: ListMember[] = [];
  let at = 0;
  const skipSpaces = () => {
    while (text[at] === " " || text[at] === "\t") at++;
  };
  const bareItem = (): string | number | undefined | null => {
    const rest = text.slice(at);
    let match: RegExpExecArray | null;
    if ((match = /^"((?:[^"\\]|\\["\\])*)"/.exec(rest))) {
      at += match[0].length;
      return match[1]!.replace(/\\(["\\])/g, "$1");
    }
    if ((match = /^-?\d+(?:\.\d+)?/.exec(rest))) {
      at += match[0].length;
      return Number(match[0]);
    }
    if ((match = /^[a-zA-Z*][a-zA-Z0-9:/!#$%&'*+.^_`|~-]*/.exec(rest))) {
      at += match[0].length;
      return match[0];
    }
    if ((match = /^:[A-Za-z0-9+/=]*:/.exec(rest)) || (match = /^\?[01]/.exec(rest))) {
      at += match[0].length;
      return undefined;
    }
    return null;
  };
  skipSpaces();
  while (at < text.length) {
    const item = bareItem();
    if (item === null) return undefined;
    const params = new Map<string, string | number | true>();
    while (text[at] === ";") {
      at++;
      skipSpaces();
      const key = /^[a-z*][a-z0-9_.*-]*/.exec(text.slice(at))?.[0];
      if (!key) return undefined;
      at += key.length;
      if (text[at] === "=") {
        at++;
        const value = bareItem();
        if (value === null) return undefined;
        params.set(key, value ?? true);
      } else {
        params.set(key, true);
      }
    }
    members.push({ item, params });
    skipSpaces();
    if (at >= text.length) break;
    if (text[at] !== ",") return undefined;
    at++;
    skipSpaces();
    if (at >= text.length) return undefined;
  }
  return members;
}

/** A non-negative number parameter, or undefined (absent) or null (present, not one). */
function numberParam(member: ListMember, key: string): number | undefined | null {
  const value = member.params.get(key);
  if (value === undefined) return undefined;
  return typeof value === "number" && value >= 0 ? value : null;
}

/** The draft-07 dictionary `limit=100, remaining=25, reset=5`: its three numbers, or undefined when it is not that form. */
function parseDraft7(text: string): Partial<Record<Part, number>> | undefined {
  if (!/^\s*(limit|remaining|reset)\s*=/i.test(text)) return undefined;
  const parts: Partial<Record<Part, number>> = {};
  for (const entry of text.split(",")) {
    const match = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/i.exec(entry);
    if (!match) return undefined;
    const key = match[1]!.toLowerCase();
    if (key === "limit" || key === "remaining" || key === "reset") parts[key] = Number(match[2]);
  }
  return parts;
}

/** `"name";q=100;w=60, ...` (draft 08 on), or draft 07's `100;w=60`. */
function readPolicies(text: string, limitNamed: (name: string) => ServerLimit, problems: Problems): void {
  const members = parseList(text);
  if (!members) {
    problems.add(`ratelimit-policy: ${quote(text)} is not a list like "default";q=100;w=60`);
    return;
  }
  for (const member of members) {
    const quota = typeof member.item === "number" ? member.item : numberParam(member, "q");
    const window = numberParam(member, "w");
    const name = typeof member.item === "string" ? member.item : "default";
    if (quota === null || window === null || (typeof member.item === "number" && member.item < 0)) {
      problems.add(`ratelimit-policy: ${quote(text)} has a q or w that is not a number 0 or more`);
      continue;
    }
    const limit = limitNamed(name);
    if (quota !== undefined) limit.limit = quota;
    if (window !== undefined) limit.windowMs = window * 1000;
  }
}

/** `"name";r=9;t=1, ...` (draft 08 on), or draft 07's `limit=100, remaining=25, reset=5`. */
function readStates(text: string, limitNamed: (name: string) => ServerLimit, problems: Problems): void {
  const draft7 = parseDraft7(text);
  if (draft7) {
    const limit = limitNamed("default");
    if (draft7.limit !== undefined) limit.limit = draft7.limit;
    if (draft7.remaining !== undefined) limit.remaining = draft7.remaining;
    if (draft7.reset !== undefined) limit.resetMs = draft7.reset * 1000;
    return;
  }
  const members = parseList(text);
  if (!members || members.some((member) => typeof member.item !== "string")) {
    problems.add(`ratelimit: ${quote(text)} is not a list like "default";r=9;t=1`);
    return;
  }
  for (const member of members) {
    const remaining = numberParam(member, "r");
    const reset = numberParam(member, "t");
    if (remaining === null || reset === null) {
      problems.add(`ratelimit: ${quote(text)} has an r or t that is not a number 0 or more`);
      continue;
    }
    const limit = limitNamed(member.item as string);
    if (remaining !== undefined) limit.remaining = remaining;
    if (reset !== undefined) limit.resetMs = reset * 1000;
  }
}
