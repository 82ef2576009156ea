import type { JobRecord } from "./job-runner.js";

/**
 * One line of `--joblog`: a JSON object per job, in the order jobs end.
 * Times are Unix epoch seconds and `wait` is seconds spent waiting for tokens;
 * `exit` and `signal` are the last attempt's; a skipped job has `skipped: true`,
 * no start and no attempts; an item that could not be run (a class not defined) has
 * `error: "bad-item"`, no start and no attempts.
 */
export function formatJobLogLine(record: JobRecord, toEpochMs: (clockMs: number) => number): string {
  const seconds = (ms: number) => Math.round(ms) / 1000;
  const line = {
    number: record.number,
    item: record.item ?? null,
    start: record.startMs === undefined ? null : seconds(toEpochMs(record.startMs)),
    end: seconds(toEpochMs(record.endMs)),
    wait: Math.round(record.waitMs) / 1000,
    exit: record.exit?.code ?? null,
    signal: record.exit?.signal ?? null,
    attempts: record.attempts,
    ...(record.skipped ? { skipped: true } : {}),
    ...(record.exit?.spawnError ? { error: record.exit.spawnError.code } : {}),
    ...(record.badItem !== undefined ? { error: "bad-item" } : {}),
  };
  return `${JSON.stringify(line)}\n`;
}
