import type { JobRecord } from "./job-runner.js";

/**
 * One line of `--joblog`: a JSON object per job, in the order jobs end.
 * Times are Unix epoch seconds and `wait` is seconds spent waiting for tokens;
 * `exit` and `signal` are the last attempt's; a skipped job has `skipped: true`,
 * no start and no attempts; an item that could not be run (a class not defined) has
 * `error: "bad-item"`, no start and no attempts.
 *
 * After those, what the job's reports said (DESIGN 13): `cost`, the estimate it was admitted with
 * (`--cost`; null without one), `settled`, the costs its `tbucket-cost` line gave (null: none),
 * `throttled`, how many attempts the server throttled (429, 503), and `server_wait`, the longest
 * wait in seconds a throttled response asked for (null: none said).
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
    cost: record.costs?.cost ?? null,
    settled: record.settledCosts ?? null,
    throttled: record.throttled ?? 0,
    server_wait: record.serverWaitMs === undefined ? null : Math.round(record.serverWaitMs) / 1000,
  };
  return `${JSON.stringify(line)}\n`;
}
