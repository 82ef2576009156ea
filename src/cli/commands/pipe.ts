import type { Command } from "commander";
import { parseAnyRate, parseByteRate, parseByteSize, parseCount, type RateKind } from "../../core/units.js";
import type { CostMode } from "../../stream/throttle-stream.js";
import { parseOption, UsageError } from "../errors.js";
import { parseReportOptions, type ReportFlags, type ReportOptions, statsFormatOption, statsOption } from "../report-options.js";
import { addSharedBucketOptions, parseSharedBucketOptions, type SharedBucketFlags, type SharedBucketOptions } from "../shared-options.js";

export interface PipeConfig extends ReportOptions {
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
  /** -N: names the progress line. */
  name: string | undefined;
  /** --force: binary data goes to a terminal too. */
  force: boolean;
}

interface PipeFlags extends ReportFlags, SharedBucketFlags {
  rate?: string;
  burst?: string;
  lines?: boolean;
  null?: boolean;
  size?: string;
  pipeSize?: string;
  name?: string;
  force?: boolean;
}

const EXAMPLES = `
Units: byte rates 1mb = 1mb/s = 1,048,576 B/s (k, m, g, t are binary whatever the case),
10mbit = 1,250,000 B/s (bit units are decimal); count rates 5, 5/s, 300/m, 1/10s.

Examples:
  cat big.iso | tbucket --rate 1mb --burst 4mb > /mnt/slow/big.iso
  tbucket -r 10mbit -p backup.tar | ssh host 'cat > backup.tar'
  tail -f app.log | tbucket --lines --rate 100/s       # at most 100 lines a second
  tbucket --rate inf --progress --stats big.iso > /dev/null
  tbucket --key backups --rate 20mb < dump.sql > copy.sql  # share 20 MiB/s between processes`;

/** The default burst: 100 ms of the rate (at least 1) for bytes, one record for a count rate. */
export function defaultPipeBurst(kind: RateKind, rate: number): number {
  if (kind === "count") return 1;
  if (rate === Infinity) return 1024 * 1024;
  return Math.max(1, Math.floor(rate / 10));
}

export function registerPipe(program: Command, onExit: (code: number) => void): void {
  const command = program
    .command("pipe", { isDefault: true })
    .description("copy files or standard input to standard output, no faster than the rate (the default command)")
    .argument("[file...]", "files to read in order; - or none: standard input")
    .option("-r, --rate <rate>", "byte rate (1mb, 512k/s, 10mbit, inf); a line rate with --lines (100/s)")
    .option("-b, --burst <size>", "bucket capacity (default: 100 ms of the rate in bytes; 1 line with --lines)")
    .option("-l, --lines", "one token per line; lines are never split (with a byte rate: lines cost their bytes)")
    .option("-0, --null", "records end with NUL instead of newline (implies --lines)")
    .option("-s, --size <size>", "expected total bytes, for the percentage and ETA of --progress")
    .option("-p, --progress", "show progress on standard error (default: when it is a terminal and standard output is not)")
    .option("-q, --quiet", "no progress")
    .option("-N, --name <name>", "prefix the progress line with <name>; named tbuckets in one pipeline each keep a line")
    .option("--force", "write to a terminal even input that looks binary")
    .option("--pipe-size <size>", "capacity to ask for the pipes on standard input and output, up to 1m unprivileged (default: 1m from 50mb/s on, else as they are)")
    .addOption(statsOption())
    .addOption(statsFormatOption());
  addSharedBucketOptions(command)
    .addHelpText("after", EXAMPLES)
    .action(async (files: string[], flags: PipeFlags) => {
      const config = parsePipeOptions(files, flags);
      const { runPipe } = await import("../actions/pipe.js");
      onExit(await runPipe(config));
    });
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
    burst = kind === "count" ? parseOption("--burst", flags.burst, (text) => parseCount(text)) : parseOption("--burst", flags.burst, parseByteSize);
  }
  const { progress, stats } = parseReportOptions(flags);
  return {
    files,
    rate,
    burst,
    kind,
    cost: !lines ? "bytes" : kind === "count" ? "records" : "record-bytes",
    delimiter: flags.null ? 0 : 10,
    sizeBytes: flags.size === undefined ? undefined : parseOption("--size", flags.size, parseByteSize),
    pipeSizeBytes: flags.pipeSize === undefined ? undefined : parseOption("--pipe-size", flags.pipeSize, parsePipeSize),
    progress,
    stats,
    shared,
    name: flags.name,
    force: Boolean(flags.force),
  };
}
