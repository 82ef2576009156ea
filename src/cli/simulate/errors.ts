import { type BadLine, describeMissingField, describeNotACost, type FieldOption } from "../../simulate/trace-line.js";
import { humanWait } from "../../core/format.js";
import { MAX_ROWS, type TooManyRowsError } from "../../simulate/timeline.js";
import type { SkippedLine, TraceError, TraceOptionError } from "../../simulate/trace-reader.js";

/**
 * Trace errors as the user of `tbucket simulate` reads them. The simulator
 * says what is wrong with a line or an option in its own terms (costField,
 * skipBad); here the flags that name them and the way out are added.
 */

const FIELD_FLAGS: Record<FieldOption["option"], string> = { costField: "--cost-field", keyField: "--key-field" };

/** What is wrong with a line, naming the flag that chose the field at fault. */
export function describeBadLine(bad: BadLine): string {
  if (bad.field === undefined) return bad.message;
  const flag = `(${FIELD_FLAGS[bad.field.option]} ${bad.field.index})`;
  if (bad.kind === "missing-field") return `${describeMissingField(bad.fieldCount ?? 0, bad.field.index)} ${flag}`;
  if (bad.kind === "cost") return `${describeNotACost(bad.text ?? "", bad.field.index)} ${flag}`;
  return bad.message;
}

/** A skipped line, as the summary and the note on standard error show it. */
export function describeSkippedLine(line: SkippedLine): string {
  return `line ${line.lineNumber}: ${describeBadLine(line.bad)}`;
}

/** The line that stopped the reading, and how to read past such lines. */
export function describeTraceError(error: TraceError): string {
  return `${describeSkippedLine(error)}; or pass --skip-bad to skip such lines`;
}

const OPTION_MISMATCHES: Record<TraceOptionError["option"], string> = {
  costField: `--cost-field: not with an access log, whose fields are known; use --cost bytes to take the response size`,
  keyField: `--key-field: not with an access log, whose fields are known; --per-key keys on the client address`,
  costBytes: `--cost bytes: this trace is not an access log; name the field holding each size with --cost-field N`,
  withKeys: `--per-key: this trace is not an access log; name the field holding each key with --key-field N`,
};

/** An option that does not suit the trace found, in the flags' words. */
export function describeTraceOptionError(error: TraceOptionError): string {
  return OPTION_MISMATCHES[error.option];
}

/** The table, chart and plot have at most MAX_ROWS rows: a finer --step is a usage mistake. */
export function describeTooManyRows(error: TooManyRowsError): string {
  const { endMs, stepMs, rows } = error;
  return `--step ${formatStep(stepMs)}: ${rows} rows over ${humanWait(endMs)} is more than the ${MAX_ROWS} allowed; use --step ${formatStep(error.smallestStepMs)} or more`;
}

/** A step as --step takes it: 4s, 20ms, 0.5ms. */
function formatStep(stepMs: number): string {
  return stepMs >= 1000 && Number.isInteger(stepMs / 1000) ? `${stepMs / 1000}s` : `${stepMs}ms`;
}

/** The flag that skips bad lines, shown after their count in the summary. */
export const SKIP_BAD_FLAG = "--skip-bad";
