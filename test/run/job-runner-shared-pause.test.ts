import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { jobSource } from "../../src/run/job-source.js";
import { JobRunner, type JobRecord } from "../../src/run/job-runner.js";
import type { JobExit, Launch } from "../../src/run/launch.js";
import type { ServerReport } from "../../src/run/server-report.js";
import { openStore, parseStoreLocation } from "../../src/store/open-store.js";
import { ServerPause } from "../../src/store/server-pause.js";
import { drive } from "./fake-jobs.js";

const THROTTLED: ServerReport = { responses: [{ status: 429, throttled: true, retryAfterMs: 2000, limits: [], costs: [] }], problems: [], truncated: false };

/** Jobs that run 10 ms; `throttle(job, attempt)` says which end with the server's 429 and Retry-After: 2. */
function launches(clock: FakeClock, startsMs: number[], throttle: (job: number, attempt: number) => boolean): Launch {
  return (job, attempt) => {
    startsMs.push(clock.now());
    const exited = clock.sleep(10).then((): JobExit => (throttle(job.number, attempt) ? { code: 22, signal: null, report: THROTTLED } : { code: 0, signal: null }));
    return { exited, kill: () => {} };
  };
}

describe("JobRunner: the server's pause on a shared key", () => {
  it("holds every process on the key until the server's time, not only the one throttled", async () => {
    const clock = new FakeClock(1000);
    const store = await openStore(parseStoreLocation("memory:"), { clock });
    const startsA: number[] = [];
    const startsB: number[] = [];
    const records: JobRecord[] = [];
    const runner = (starts: number[], throttle: (job: number, attempt: number) => boolean, count: number) =>
      new JobRunner({
        limiter: new TokenBucket({ rate: 10, burst: 1, clock }),
        clock,
        jobs: jobSource({ count }),
        launch: launches(clock, starts, throttle),
        concurrency: Infinity,
        retries: 1,
        sharedPause: new ServerPause(store, "api"),
        onJobEnd: (record) => records.push(record),
      });
    // A's first job is throttled at 1010 (told 2 s); B shares the key and was never told anything.
    const a = runner(startsA, (job, attempt) => job === 1 && attempt === 1, 2);
    const b = runner(startsB, () => false, 4);
    await drive(clock, Promise.all([a.run(), b.run()]));
    const pauseEndMs = 1010 + 2000;
    expect(startsA[0]).toBe(1000);
    expect(startsB[0]).toBe(1000);
    // Nothing starts between the throttle and the server's time, in either process.
    expect([...startsA, ...startsB].filter((ms) => ms > 1010 && ms < pauseEndMs)).toEqual([]);
    expect(startsB.slice(1).every((ms) => ms >= pauseEndMs)).toBe(true);
    expect(startsA.length).toBe(3);
    expect(startsB.length).toBe(4);
    expect(records.filter((record) => record.throttled).length).toBe(1);
    await store.close();
  });

  it("without a shared pause, the other process goes on at its rate (the fault this guards against)", async () => {
    const clock = new FakeClock(1000);
    const starts: number[] = [];
    const b = new JobRunner({ limiter: new TokenBucket({ rate: 10, burst: 1, clock }), clock, jobs: jobSource({ count: 4 }), launch: launches(clock, starts, () => false), concurrency: Infinity });
    await drive(clock, b.run());
    expect(starts).toEqual([1000, 1100, 1200, 1300]);
  });
});
