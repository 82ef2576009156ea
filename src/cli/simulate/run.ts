import { randomInt } from "node:crypto";
import { createReadStream, fstatSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { setFlagsFromString } from "node:v8";
import { patternArrivals } from "../../simulate/arrival-pattern.js";
import type { ArrivalSource } from "../../simulate/event-batch.js";
import { grouped, msToSeconds, plural } from "../../core/format.js";
import { DEFAULT_MAX_KEYS } from "../../http/request-limiter.js";
import { OutputBuffer, OutputStreamError } from "../../simulate/output-buffer.js";
import { runSimulation } from "../../simulate/run-simulation.js";
import type { SimulatorOptions } from "../../simulate/simulator.js";
import { renderStepCsv, renderStepTable, stepWithClassesToJson } from "../../simulate/render/step-table.js";
import { decisionJsonLine } from "../../simulate/render/decision-line.js";
import { renderSummaryText } from "../../simulate/render/summary-text.js";
import { buildSummary } from "../../simulate/summary.js";
import { checkRowCount, chooseStepMs, rowCount, TooManyRowsError } from "../../simulate/timeline.js";
import { createTraceReport, TraceError, TraceOptionError, type TraceReport, traceArrivals } from "../../simulate/trace-reader.js";
import type { SimulateConfig } from "./options.js";
import { RuntimeError, UsageError } from "../errors.js";
import { UnknownClassError } from "../../core/class-spec.js";
import { describeUnknownClass } from "../class-options.js";
import { describeFileError } from "../file-errors.js";
import { describeSkippedLine, describeTooManyRows, describeTraceError, describeTraceOptionError, SKIP_BAD_FLAG } from "./errors.js";
import { HeapGuard } from "./heap-guard.js";

/** Runs `tbucket simulate`: arrivals in, decisions of the core bucket out, in the chosen format. */
export async function runSimulate(config: SimulateConfig): Promise<number> {
  const stdout = process.stdout;
  const onTerminal = Boolean(stdout.isTTY);
  const output = new OutputBuffer(stdout);
  const seed = config.source.kind === "pattern" && config.source.random ? (config.seed ?? randomInt(2 ** 31)) : config.seed;
  const trace = config.source.kind === "trace" ? createTraceReport() : undefined;
  // One bucket per key makes short-lived objects at a high rate, and V8's incremental marking keeps
  // those made during a marking cycle until it ends: the heap then swells to several times what is
  // live. A batch computation does not mind whole pauses instead; --max-keys then bounds the memory.
  if (config.perKey) setFlagsFromString("--no-incremental-marking");
  try {
    if (config.suggest) {
      const code = await runSuggest(config, heapGuarded(openArrivals(config, seed ?? 0, trace), config), output);
      await output.flush();
      return code;
    }
    const format = config.format ?? (onTerminal ? "summary" : "table");
    const chart = config.chart || (config.format === undefined && onTerminal);
    // A pattern's length is known: a step too fine for it is refused before simulating.
    if (config.source.kind === "pattern" && config.stepMs !== undefined) {
      checkRowCount(config.source.durationMs, config.stepMs, rowCount(config.source.durationMs, config.stepMs));
    }
    const simulator = simulatorOptions(config, config.ratePerSecond as number, config.burst!);
    const jsonl = format === "jsonl";
    // Per-event output waits for a slow reader between batches: small batches keep that wait frequent.
    // A batch's keys live until it is consumed: small batches let them die young.
    const heap = new HeapGuard();
    let events = 0;
    const recorder = await runSimulation(openArrivals(config, seed ?? 0, trace, jsonl || config.perKey ? 4096 : undefined), {
      simulator,
      stepMs: config.stepMs,
      onDecision: jsonl ? (timeMs, cost, key, sim) => output.write(decisionJsonLine(timeMs, cost, key, sim)) : undefined,
      afterBatch: (batch, sim) => {
        events += batch.count;
        if (heap.nearlyFull()) throw new RuntimeError(describeOutOfHeap(heap.limitBytes, events, sim.keyCount, config));
        return jsonl ? output.maybeFlush() : undefined;
      },
    });
    const endMs = Math.max(config.source.kind === "pattern" ? config.source.durationMs : 0, recorder.lastMs);
    const summary = buildSummary(recorder, { costUnit: config.costUnit, endMs, seed, trace, describeSkipped: describeSkippedLine });
    const stepMs = config.stepMs ?? chooseStepMs(endMs, recorder.timeline.slotMs);
    const wantsSteps = chart || config.svgPath !== undefined || format === "table" || format === "csv" || format === "json";
    if (wantsSteps) checkRowCount(endMs, stepMs, recorder.timeline.rows(endMs, stepMs));
    const steps = wantsSteps ? recorder.levelSteps(endMs, stepMs) : [];
    const classNames = [...recorder.classes.keys()];
    switch (format) {
      case "summary":
        output.write(renderSummaryText(summary, { skippedBecause: SKIP_BAD_FLAG }));
        break;
      case "table":
        output.write(renderStepTable(steps, config.costUnit, stepMs, classNames));
        break;
      case "csv":
        output.write(renderStepCsv(steps, config.costUnit, classNames));
        break;
      case "json":
        output.write(`${JSON.stringify({ ...summary, step: msToSeconds(stepMs), steps: steps.map((s) => stepWithClassesToJson(s, config.costUnit, classNames)) }, null, 2)}\n`);
        break;
      case "jsonl":
        break;
    }
    if (chart) {
      const { renderAsciiChart } = await import("../../simulate/render/ascii-chart.js");
      output.write(`\n${renderAsciiChart(steps, { burst: simulator.burst, stepMs, unit: config.costUnit, perKey: config.perKey, width: chartWidth() })}`);
    }
    if (config.svgPath !== undefined) {
      const { renderSvgPlot } = await import("../../simulate/render/svg-plot.js");
      const svg = renderSvgPlot(steps, { summary, stepMs });
      await writeFile(config.svgPath, svg).catch((error: NodeJS.ErrnoException) => {
        throw new RuntimeError(`--svg ${config.svgPath}: cannot write it: ${describeWriteError(error)}`);
      });
    }
    if (format === "jsonl" && trace) reportTraceNotes(trace);
    // The summary (text or JSON) counts the evictions; the other formats would leave them unsaid.
    if (format !== "summary" && format !== "json" && recorder.simulator.evictions > 0) reportEvictions(recorder.simulator.evictions, simulator.maxKeys, config);
    await output.flush();
    return 0;
  } catch (error) {
    // The reader of standard output left (`| head -1`): it has what it wanted.
    if (error instanceof OutputStreamError && error.failure.code === "EPIPE") return 0;
    throw translateError(error, config);
  }
}

/** The chart's width: the terminal's, else $COLUMNS (a whole number), else 80. */
export function chartWidth(stdout: { isTTY?: boolean; columns?: number } = process.stdout, env: NodeJS.ProcessEnv = process.env): number {
  if (stdout.isTTY && stdout.columns !== undefined && stdout.columns > 0) return stdout.columns;
  const columns = Number(env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : 80;
}

/** --suggest: hold the arrivals, search, print the answer and its trade-off table. */
async function runSuggest(config: SimulateConfig, source: ArrivalSource, output: OutputBuffer): Promise<number> {
  const { EventStore } = await import("../../simulate/event-store.js");
  const suggest = await import("../../simulate/suggest.js");
  const render = await import("../../simulate/render/suggestion.js");
  const target = config.suggest!;
  const store = await EventStore.collect(source);
  if (store.count === 0) throw new UsageError(`--suggest: there are no arrivals to tune on; check the --trace file or --arrivals pattern`);
  const durationMs = Math.max(config.source.kind === "pattern" ? config.source.durationMs : 0, store.lastMs);
  const policy = config.policy === "drop" ? "drop" : Number.isFinite(config.maxWaitMs) ? `queue, max wait ${msToSeconds(config.maxWaitMs)} s` : "queue";
  let suggestion;
  let fixed: number;
  if (config.ratePerSecond === "auto") {
    fixed = config.burst!;
    const { ratePerSecond: _unused, ...options } = simulatorOptions(config, 1, fixed);
    suggestion = suggest.suggestRate(store, options, target, durationMs);
  } else {
    fixed = config.ratePerSecond;
    const { burst: _unused, ...options } = simulatorOptions(config, fixed, 1);
    suggestion = suggest.suggestBurst(store, options, target);
  }
  const arrivalRate = durationMs > 0 ? store.totalCost / (durationMs / 1000) : 0;
  const context = { unit: config.costUnit, policy, fixed, durationMs, arrivalRate };
  if (config.format === "json") output.write(`${JSON.stringify(render.suggestionToJson(suggestion, context), null, 2)}\n`);
  else if (config.format === "csv") output.write(render.renderSuggestionCsv(suggestion));
  else output.write(render.renderSuggestionText(suggestion, context));
  if (!suggestion.answer) {
    await output.flush();
    if (suggestion.kind === "burst" && store.maxCost > suggest.MAX_BURST) {
      throw new RuntimeError(
        `--suggest: no burst meets ${target.text}: an arrival costs ${store.maxCost}, more than the largest burst searched (${suggest.MAX_BURST}); scale the costs down (kilobytes instead of bytes)`,
      );
    }
    const upTo = suggestion.kind === "burst" && store.totalCost > suggest.MAX_BURST ? ` up to ${suggest.MAX_BURST}` : "";
    throw new RuntimeError(`--suggest: no ${suggestion.kind}${upTo} meets ${target.text}; loosen the target${suggestion.kind === "rate" ? " or raise the burst" : ""}`);
  }
  return 0;
}

export function simulatorOptions(config: SimulateConfig, ratePerSecond: number, burst: number): SimulatorOptions {
  // Bounded as the proxy's and the middleware's key tables are: a trace of millions of clients fits any heap.
  const maxKeys = config.perKey ? (config.maxKeys ?? DEFAULT_MAX_KEYS) : Infinity;
  return {
    ratePerSecond,
    burst,
    limits: config.limits,
    policy: config.policy,
    maxWaitMs: config.maxWaitMs,
    perKey: config.perKey,
    maxKeys,
    classes: config.classes,
    defaultClass: config.defaultClass,
  };
}

/** What evictions do to the decisions, once, on standard error. */
function reportEvictions(evictions: number, maxKeys: number, config: SimulateConfig): void {
  const bound = config.maxKeys === undefined ? `--max-keys's default, ${maxKeys}` : `--max-keys ${maxKeys}`;
  process.stderr.write(
    `tbucket: --per-key: ${plural(evictions, "key")} evicted to keep ${bound} buckets; an evicted key that comes back starts with a full bucket, as with the proxy; raise --max-keys to keep more\n`,
  );
}

/** The arrivals, for --suggest, which holds them all: stopped with one line when they nearly fill the heap. */
async function* heapGuarded(source: ArrivalSource, config: SimulateConfig): ArrivalSource {
  const heap = new HeapGuard();
  let events = 0;
  for await (const batch of source) {
    events += batch.count;
    if (heap.nearlyFull()) throw new RuntimeError(describeOutOfHeap(heap.limitBytes, events, undefined, config));
    yield batch;
  }
}

/** The line a simulation stops with when the heap is nearly full of what it holds: the buckets, or the events for --suggest. */
function describeOutOfHeap(limitBytes: number, events: number, keyCount: number | undefined, config: SimulateConfig): string {
  const heap = `${Math.round(limitBytes / 2 ** 20)} MB`;
  if (keyCount === undefined) {
    return `simulate: out of memory after holding ${grouped(events)} events for --suggest, in a heap of ${heap}; tune on a part of the trace, or give Node a larger heap (NODE_OPTIONS=--max-old-space-size=MB)`;
  }
  const held = config.perKey ? ` holding ${grouped(keyCount)} buckets` : "";
  const lower = config.perKey ? `lower --max-keys (the default is ${DEFAULT_MAX_KEYS}) or ` : "";
  return `simulate: out of memory after ${grouped(events)} events${held}, in a heap of ${heap}; ${lower}give Node a larger heap (NODE_OPTIONS=--max-old-space-size=MB)`;
}

/** A fresh source of the configured arrivals (a trace is read again each time). */
export function openArrivals(config: SimulateConfig, seed: number, trace: TraceReport | undefined, batchSize?: number): ArrivalSource {
  if (config.source.kind === "pattern") return patternArrivals(config.source.segments, seed, batchSize);
  const path = config.source.path;
  if (path === "-") refuseDirectoryOnStandardInput();
  const input = path === "-" ? process.stdin : createReadStream(path, { highWaterMark: 1 << 20 });
  return traceArrivals(
    readingTrace(input, path),
    {
      costField: config.costField,
      // An event's class travels as its key (classes and --per-key do not go together yet).
      keyField: config.classField ?? config.keyField,
      costBytes: config.costUnit === "bytes",
      wantKeys: config.perKey || config.classField !== undefined,
      withKeys: config.perKey || config.classField !== undefined,
      ipv6Prefix: config.perKey ? config.ipv6Prefix : undefined,
      skipBad: config.skipBad,
      batchSize,
    },
    trace ?? createTraceReport(),
  );
}

const WRITE_REASONS: Record<string, string> = {
  ENOSPC: "no space left on the device; free some space or write elsewhere",
  EDQUOT: "the disk quota is used up; free some space or write elsewhere",
  EFBIG: "the file is too large for the device; write elsewhere",
  EROFS: "the file system is read-only; write elsewhere",
  EACCES: "permission denied; check the permissions, or write elsewhere",
  EPERM: "permission denied; check the permissions, or write elsewhere",
  EISDIR: "it is a directory; name a file",
  ENOENT: "no such directory; check the path",
  ENOTDIR: "a part of the path is not a directory; check the path",
  EBADF: "it is not open for writing; redirect it to a file or a pipe",
  EIO: "input/output error; check the device",
};

/** Why a write failed and what to do, for standard output and --svg alike. */
function describeWriteError(error: NodeJS.ErrnoException): string {
  return (error.code && WRITE_REASONS[error.code]) ?? `${error.message}; check where the output goes`;
}

/** A trace that could not be opened or read, whatever the reason (EIO, EISDIR, EACCES...). */
class TraceReadError extends Error {
  constructor(
    readonly path: string,
    readonly failure: NodeJS.ErrnoException,
  ) {
    super(failure.message);
    this.name = "TraceReadError";
  }
}

/** The trace's chunks, with a failure to read told apart from every other error. */
async function* readingTrace(input: AsyncIterable<Buffer | string>, path: string): AsyncGenerator<Buffer | string> {
  try {
    for await (const chunk of input) yield chunk;
  } catch (error) {
    throw new TraceReadError(path, error as NodeJS.ErrnoException);
  }
}

/** Node reads a directory on standard input as an empty stream: say so rather than simulate nothing. */
function refuseDirectoryOnStandardInput(): void {
  let isDirectory = false;
  try {
    isDirectory = fstatSync(0).isDirectory();
  } catch {
    // A standard input that cannot be examined is read as it is.
  }
  if (isDirectory) {
    const error: NodeJS.ErrnoException = new Error("EISDIR: illegal operation on a directory, read");
    error.code = "EISDIR";
    throw new TraceReadError("-", error);
  }
}

/** One line naming the file, what failed and what to do. */
function describeTraceReadError(error: TraceReadError): string {
  const described = describeFileError(error.path, error.failure);
  // Codes the shared table does not know come back in Node's words: say what failed and what to do.
  if (described.includes("; ")) return `--trace ${described}`;
  const name = error.path === "-" ? "standard input" : error.path;
  return `--trace ${name}: cannot read it (${error.failure.message}); check that it is a readable file of events`;
}

/** With --format jsonl the summary is not printed: skipped lines are still worth a word on standard error. */
function reportTraceNotes(trace: TraceReport): void {
  if (trace.skipped > 0) process.stderr.write(`tbucket: --skip-bad: skipped ${plural(trace.skipped, "bad line")} (${describeSkippedLine(trace.skippedExamples[0]!)})\n`);
  if (trace.outOfOrder > 0) process.stderr.write(`tbucket: --trace: ${trace.outOfOrder} events were earlier than the one before; taken at its time\n`);
}

function translateError(error: unknown, config: SimulateConfig): unknown {
  const name = config.source.kind === "trace" ? (config.source.path === "-" ? "standard input" : config.source.path) : "";
  if (error instanceof UnknownClassError) return new UsageError(describeUnknownClass(error.className, error.defined, `--trace ${name} (--class-field ${config.classField})`));
  // The class field is read as the key field: name the flag the user gave.
  const classFlag = (text: string) => (config.classField === undefined ? text : text.replaceAll("--key-field", "--class-field"));
  if (error instanceof TraceError) return new UsageError(classFlag(`--trace ${name}: ${describeTraceError(error)}`));
  if (error instanceof TraceOptionError) {
    if (config.classField !== undefined && error.option === "keyField") {
      return new UsageError(`--class-field: not with an access log, whose fields are known; its events go to --default-class (or the first class)`);
    }
    return new UsageError(describeTraceOptionError(error));
  }
  if (error instanceof TooManyRowsError) return new UsageError(describeTooManyRows(error));
  if (error instanceof TraceReadError) return new RuntimeError(describeTraceReadError(error));
  if (error instanceof OutputStreamError) return new RuntimeError(`standard output: cannot write: ${describeWriteError(error.failure)}`);
  return error;
}
