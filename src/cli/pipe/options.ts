import { parseAnyRate, parseByteRate, parseByteSize, parseSizeOfKind, type RateKind } from "../../core/units.js";
import { STDIN_NAME } from "../../stream/read-sources.js";
import type { CostMode } from "../../stream/throttle-stream.js";
import { parseOption, UsageError } from "../errors.js";
import { parseReportOptions, type ReportFlags, type ReportOptions } from "../report-options.js";
import { parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";

export interface PipeConfig extends ReportOptions {
  /** The sources in order, `-` for standard input; none named on the command line is standard input alone, as for cat. */
  files: string[];
  /** Tokens per second (bytes, or lines with --lines and a count rate); undefined: from --key. */
  rate: number | undefined;
  burst: number | undefined;
  kind: RateKind;
  cost: CostMode;
  delimiter: number;
  sizeBytes: number | undefined;
  /** --pipe-size: the capacity asked for standard input's and output's pipes; undefined: tbucket decides. */
  pipeSizeBytes: number | undefined;
  shared: SharedBucketOptions;
  /** --force: binary data goes to a terminal too. */
  force: boolean;
}

/** The pipe's flags as commander hands them over. */
export interface PipeFlags extends ReportFlags, SharedBucketFlags {
  rate?: string;
  burst?: string;
  lines?: boolean;
  null?: boolean;
  size?: string;
  pipeSize?: string;
  force?: boolean;
}

/** Linux's smallest pipe is one page, its largest 2 GiB (to root, past /proc/sys/fs/pipe-max-size). */
const MIN_PIPE_BYTES = 4096;
const MAX_PIPE_BYTES = 2 ** 31 - 4096;

function parsePipeSize(text: string): number {
  const bytes = parseByteSize(text);
  if (bytes < MIN_PIPE_BYTES || bytes > MAX_PIPE_BYTES) throw new Error(`must be from 4k to 2g, not ${text}`);
  return bytes;
}

/** Turns the pipe's flags into a checked configuration; every mistake is a UsageError. */
export function parsePipeOptions(files: string[], flags: PipeFlags): PipeConfig {
  const shared = parseSharedBucketOptions(flags);
  const lines = Boolean(flags.lines || flags.null);
  let kind: RateKind = "bytes";
  let rate: number | undefined;
  if (flags.rate !== undefined) {
    if (lines) {
      ({ kind, perSecond: rate } = parseOption("--rate", flags.rate, (text) => parseAnyRate(text, { allowZero: shared.key !== undefined })));
    } else {
      rate = parseOption("--rate", flags.rate, (text) => parseByteRate(text, { allowZero: shared.key !== undefined }));
    }
  } else if (shared.key === undefined) {
    throw new UsageError(`--rate: missing; try "tbucket --rate 1mb" (or --lines --rate 100/s), or --key to use a shared bucket`);
  } else if (lines) {
    kind = "count";
  }
  let burst: number | undefined;
  if (flags.burst !== undefined) {
    burst = parseOption("--burst", flags.burst, (text) => parseSizeOfKind(kind, text));
  }
  const { progress, stats, name } = parseReportOptions(flags);
  return {
    files: files.length === 0 ? [STDIN_NAME] : files,
    rate,
    burst,
    kind,
    cost: !lines ? "bytes" : kind === "count" ? "records" : "record-bytes",
    delimiter: flags.null ? 0 : 10,
    sizeBytes: flags.size === undefined ? undefined : parseOption("--size", flags.size, parseByteSize),
    pipeSizeBytes: flags.pipeSize === undefined ? undefined : parseOption("--pipe-size", flags.pipeSize, parsePipeSize),
    progress,
    stats,
    name,
    shared,
    force: Boolean(flags.force),
  };
}
