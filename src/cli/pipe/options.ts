import { unitOf } from "../../core/limit-spec.js";
import { parseByteSize, type RateKind } from "../../core/units.js";
import { STDIN_NAME } from "../../stream/read-sources.js";
import type { CostMode } from "../../stream/throttle-stream.js";
import { parseOption, UsageError } from "../errors.js";
import { type LimitFlags, needsLimitSet, type ParsedLimit, parseLimitOptions } from "../limit-options.js";
import { parseReportOptions, type ReportFlags, type ReportOptions } from "../report-options.js";
import { parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";

export interface PipeConfig extends ReportOptions {
  /** With --key: the class of the key every slice takes as (--class). */
  className?: string;
  /** The sources in order, `-` for standard input; none named on the command line is standard input alone, as for cat. */
  files: string[];
  /** Every limit, in command-line order: one bucket, or a set (see needsLimitSet); none: from --key. */
  limits: ParsedLimit[];
  /** With one bucket: tokens per second (bytes, or lines with --lines and a count rate); undefined: from --key, or a set. */
  rate: number | undefined;
  /** With one bucket, as given (undefined: its default), or with --key alone the key's new burst. */
  burst: number | undefined;
  /** What the main unit is: bytes, or lines when only lines are limited. */
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
export interface PipeFlags extends ReportFlags, SharedBucketFlags, LimitFlags {
  lines?: boolean;
  null?: boolean;
  size?: string;
  pipeSize?: string;
  force?: boolean;
  class?: string;
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
  const className = flags.class === undefined ? undefined : parseClassName(flags.class, shared.key);
  const lines = Boolean(flags.lines || flags.null);
  const { limits, loneBurst } = parseLimitOptions(flags, { units: lines ? "any" : "bytes", keyed: shared.key !== undefined });
  if (limits.length === 0 && shared.key === undefined) {
    throw new UsageError(`--rate: missing; try "tbucket --rate 1mb" (or --lines --rate 100/s), or --key to use a shared bucket`);
  }
  const single = needsLimitSet(limits) ? undefined : limits[0];
  const counted = limits.map((limit) => unitOf(limit.spec));
  // Bytes are the main unit whenever a limit counts them: slices are cut in bytes, whole lines in line mode.
  const kind: RateKind = !lines || counted.includes("bytes") ? "bytes" : "count";
  const rate = single?.spec.kind === "bucket" ? single.spec.rate : undefined;
  const burst = single?.spec.kind === "bucket" ? (single.burstGiven ? single.spec.burst : undefined) : loneBurst;
  const { progress, stats, name } = parseReportOptions(flags);
  return {
    files: files.length === 0 ? [STDIN_NAME] : files,
    limits,
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
    ...(className !== undefined && { className }),
    force: Boolean(flags.force),
  };
}

/** --class NAME names a class of the shared key; without --key there are no classes to take from. */
function parseClassName(name: string, key: string | undefined): string {
  if (key === undefined) throw new UsageError(`--class: needs --key, whose classes are set with "tbucket key set KEY --rate 20mb --class ${name}=5mb"`);
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name)) throw new UsageError(`--class: "${name}" is not a class name (letters, digits, "_", "." and "-")`);
  return name;
}
