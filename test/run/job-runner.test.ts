import { describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { LimitSetLimiter } from "../../src/core/limit-set-limiter.js";
import type { Limiter } from "../../src/core/limiter.js";
import { TokenBucket } from "../../src/core/token-bucket.js";
import { jobSource } from "../../src/run/job-source.js";
import { JobRunner, type JobRecord, type JobRunnerOptions } from "../../src/run/job-runner.js";
import { drive, fakeLaunches, settle, type FakeBehaviour } from "./fake-jobs.js";

function setup(options: {
  rate: number;
  burst?: number;
  count?: number;
  concurrency?: number;
  behaviour?: FakeBehaviour;
  limiter?: (clock: FakeClock) => Limiter;
  extra?: Partial<JobRunnerOptions>;
}) {
  const clock = new FakeClock(1000);
  const limiter = options.limiter?.(clock) ?? new TokenBucket({ rate: options.rate, burst: options.burst ?? 1, clock });
  const fake = fakeLaunches(clock, options.behaviour ?? (() => ({ runMs: 0 })));
  const records: JobRecord[] = [];
  const runner = new JobRunner({
    limiter,
    clock,
    jobs: jobSource({ count: options.count ?? Infinity }),
    launch: fake.launch,
    concurrency: options.concurrency ?? Infinity,
    onJobEnd: (record) => records.push(record),
    ...options.extra,
  });
  const relative = () => fake.startsMs.map((ms) => ms - 1000);
  return { clock, runner, fake, records, relative };
}

describe("JobRunner when a launch throws", () => {
  it("counts the job as failed with its reason, and goes on with the next (no job is lost)", async () => {
    const clock = new FakeClock(1000);
    const fake = fakeLaunches(clock, () => ({ runMs: 0 }));
    const records: JobRecord[] = [];
    const runner = new JobRunner({
      limiter: new TokenBucket({ rate: 10, burst: 1, clock }),
      clock,
      jobs: jobSource({ count: 3 }),
      launch: (job, attempt) => {
        if (job.number === 2) throw Object.assign(new Error("report file: EACCES"), { code: "EACCES" });
        return fake.launch(job, attempt);
      },
      concurrency: Infinity,
      onJobEnd: (record) => records.push(record),
    });
    const result = await drive(clock, runner.run());
    expect(result.counts).toMatchObject({ started: 3, succeeded: 2, failed: 1 });
    expect(records.find((record) => record.number === 2)?.exit?.spawnError).toEqual({ code: "ELAUNCH", message: "report file: EACCES" });
  });
});

describe("JobRunner schedule", () => {
  it("spaces launches evenly at the rate with the default burst of 1", async () => {
    const { clock, runner, relative } = setup({ rate: 10, count: 5 });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0, 100, 200, 300, 400]);
    expect(result.counts).toMatchObject({ started: 5, succeeded: 5, failed: 0, skipped: 0, retried: 0 });
  });

  it("launches a burst back to back, then one per interval", async () => {
    const { clock, runner, relative } = setup({ rate: 10, burst: 3, count: 6 });
    await drive(clock, runner.run());
    expect(relative()).toEqual([0, 0, 0, 100, 200, 300]);
  });

  it("never starts more than burst + rate x elapsed over a simulated 10 s (envelope)", async () => {
    const { clock, runner, relative } = setup({ rate: 7, burst: 3, count: 70, behaviour: () => ({ runMs: 30 }) });
    await drive(clock, runner.run());
    const starts = relative();
    expect(starts).toHaveLength(70);
    for (let i = 0; i < starts.length; i++) {
      for (let j = i; j < starts.length; j++) {
        const windowMs = starts[j]! - starts[i]!;
        // Waits are whole nanoseconds, truncated (as in x/time/rate): allow a nanosecond per launch.
        expect(j - i + 1).toBeLessThanOrEqual(3 + (7 * windowMs) / 1000 + 1e-6);
      }
    }
    // And it is not slower than the rate: the 70th start is due at (70 - 3) / 7 s.
    expect(starts.at(-1)).toBeLessThanOrEqual(Math.ceil((67 / 7) * 1000) + 1);
  });
});

describe("JobRunner concurrency", () => {
  it("runs at most `concurrency` jobs at once, whatever the rate", async () => {
    const { clock, runner, fake, relative } = setup({ rate: Infinity, count: 5, concurrency: 2, behaviour: () => ({ runMs: 1000 }) });
    await drive(clock, runner.run());
    expect(fake.maxRunning()).toBe(2);
    expect(relative()).toEqual([0, 0, 1000, 1000, 2000]);
  });

  it("takes the slot before the token: a job that waited for a slot starts as soon as it frees", async () => {
    const { clock, runner, relative, records } = setup({ rate: 10, count: 3, concurrency: 1, behaviour: () => ({ runMs: 500 }) });
    await drive(clock, runner.run());
    expect(relative()).toEqual([0, 500, 1000]);
    expect(records.map((r) => r.waitMs)).toEqual([0, 0, 0]);
  });
});

describe("JobRunner on a limit set", () => {
  it("charges every launch to each limit: 10/s with a burst of 5 and at most 3 in any second", async () => {
    const limits = (clock: FakeClock) =>
      new LimitSetLimiter(
        [
          { kind: "bucket", unit: "count", rate: 10, burst: 5 },
          { kind: "window", unit: "count", n: 3, windowMs: 1000 },
        ],
        { unit: "count", clock },
      );
    const { clock, runner, relative } = setup({ rate: 10, count: 7, limiter: limits });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0, 0, 0, 1000, 1000, 1000, 2000]);
    expect(result.counts).toMatchObject({ started: 7, succeeded: 7 });
  });

  it("counts the time jobs waited for a slot, apart from the wait for tokens", async () => {
    const { clock, runner } = setup({ rate: Infinity, count: 3, concurrency: 1, behaviour: () => ({ runMs: 500 }) });
    const result = await drive(clock, runner.run());
    expect(result.slotWaitMs).toBe(1000);
    expect(result.waitMs).toBe(0);
  });
});

describe("JobRunner --max-wait", () => {
  it("skips jobs whose token would take longer, taking nothing for them", async () => {
    const { clock, runner, relative, records } = setup({ rate: 2, count: 3, extra: { maxWaitMs: 400 } });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0]);
    expect(result.counts).toMatchObject({ started: 1, succeeded: 1, skipped: 2 });
    expect(records.filter((r) => r.skipped).map((r) => r.number)).toEqual([2, 3]);
  });

  it("waits for a token within the limit", async () => {
    const { clock, runner, relative } = setup({ rate: 2, count: 3, extra: { maxWaitMs: 500 } });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0, 500, 1000]);
    expect(result.counts.skipped).toBe(0);
  });
});

describe("JobRunner retries", () => {
  it("reruns a failed job, each attempt taking a token", async () => {
    const { clock, runner, relative, records } = setup({
      rate: 10,
      count: 1,
      extra: { retries: 3 },
      behaviour: (_job, attempt) => ({ runMs: 0, code: attempt < 3 ? 1 : 0 }),
    });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0, 100, 200]);
    expect(result.counts).toMatchObject({ started: 1, succeeded: 1, failed: 0, retried: 2 });
    expect(records[0]).toMatchObject({ attempts: 3, exit: { code: 0, signal: null }, waitMs: 200 });
  });

  it("gives up after the last retry and counts the job failed once", async () => {
    const { clock, runner, records } = setup({ rate: Infinity, count: 2, extra: { retries: 1 }, behaviour: () => ({ runMs: 0, code: 4 }) });
    const result = await drive(clock, runner.run());
    expect(result.counts).toMatchObject({ started: 2, succeeded: 0, failed: 2, retried: 2 });
    expect(records.map((r) => [r.attempts, r.exit?.code])).toEqual([[2, 4], [2, 4]]);
  });
});

describe("JobRunner stopping", () => {
  it("stops launching after --duration and lets running jobs finish", async () => {
    const { clock, runner, relative } = setup({ rate: 10, extra: { durationMs: 350 }, behaviour: () => ({ runMs: 1000 }) });
    const result = await drive(clock, runner.run());
    expect(relative()).toEqual([0, 100, 200, 300]);
    expect(result).toMatchObject({ stoppedBy: "duration", counts: { started: 4, succeeded: 4 } });
  });

  it("on stop with a signal, forwards it to running jobs and launches nothing more", async () => {
    const { clock, runner, fake } = setup({ rate: 10, behaviour: () => ({ runMs: 10_000 }) });
    const done = runner.run();
    for (let i = 0; i < 250; i++) {
      await clock.advance(1);
      await settle();
    }
    expect(fake.startsMs).toHaveLength(3);
    runner.stop("signal", "SIGINT");
    const result = await drive(clock, done);
    expect(fake.signals).toEqual(["SIGINT", "SIGINT", "SIGINT"]);
    expect(fake.startsMs).toHaveLength(3);
    expect(result).toMatchObject({ stoppedBy: "signal", counts: { started: 3, failed: 0, interrupted: 3, running: 0 } });
  });

  it("counts the wait a stop cut short in the run's wait (--stats on a paused key said tens of ms)", async () => {
    const { clock, runner } = setup({ rate: 1, behaviour: () => ({ runMs: 0 }) });
    const done = runner.run();
    // The first launch goes at once; the second waits a second for its token, and the stop comes 600 ms in.
    await settle();
    await clock.advance(600);
    runner.stop("signal", "SIGINT");
    const result = await drive(clock, done);
    expect(result.counts).toMatchObject({ started: 1 });
    expect(result.waitMs).toBe(600);
  });

  it("killAfterMs: jobs that ignore the forwarded signal are killed that long after it, and only then", async () => {
    const { clock, runner, fake } = setup({ rate: Infinity, count: 2, extra: { killAfterMs: 5000 }, behaviour: () => ({ runMs: 60_000 }) });
    const done = runner.run();
    await settle();
    runner.stop("signal", "SIGTERM");
    // The fake jobs ignore SIGTERM: nothing happens until the 5 s are up.
    await clock.advance(4999);
    await settle();
    expect(fake.signals).toEqual(["SIGTERM", "SIGTERM"]);
    const result = await drive(clock, done);
    expect(clock.now() - 1000).toBe(5000);
    expect(fake.signals).toEqual(["SIGTERM", "SIGTERM", "SIGKILL", "SIGKILL"]);
    expect(result.counts).toMatchObject({ started: 2, failed: 0, interrupted: 2, running: 0 });
  });

  it("killAfterMs: no kill is left pending once the jobs have ended", async () => {
    const { clock, runner, fake } = setup({ rate: Infinity, count: 1, extra: { killAfterMs: 5000 }, behaviour: () => ({ runMs: 60_000 }) });
    const done = runner.run();
    await settle();
    runner.stop("signal", "SIGINT");
    await drive(clock, done);
    await clock.advance(10_000);
    await settle();
    expect(fake.signals).toEqual(["SIGINT"]);
  });

  it("counts as interrupted only the jobs the signal reached: one that failed before it stays failed", async () => {
    const { clock, runner } = setup({ rate: Infinity, count: 2, behaviour: (job) => (job.number === 1 ? { runMs: 10, code: 3 } : { runMs: 60_000 }) });
    const done = runner.run();
    await clock.advance(20);
    await settle();
    runner.stop("signal", "SIGINT");
    const result = await drive(clock, done);
    expect(result.counts).toMatchObject({ started: 2, failed: 1, interrupted: 1 });
  });

  it("tells onLaunch when each launch's token was asked for, no later than its grant", async () => {
    const launches: Array<[number, number]> = [];
    const { clock, runner } = setup({ rate: 10, count: 3, extra: { onLaunch: (_job, _attempt, atMs, askedMs) => launches.push([atMs - 1000, askedMs - 1000]) } });
    await drive(clock, runner.run());
    expect(launches).toEqual([[0, 0], [100, 0], [200, 100]]);
  });

  it("does not retry a job that ended because launching stopped", async () => {
    const { clock, runner, fake } = setup({ rate: 10, count: 1, extra: { retries: 5 }, behaviour: () => ({ runMs: 10_000 }) });
    const done = runner.run();
    await settle();
    runner.stop("signal", "SIGINT");
    const result = await drive(clock, done);
    expect(fake.startsMs).toHaveLength(1);
    expect(result.counts).toMatchObject({ started: 1, failed: 0, interrupted: 1, retried: 0 });
  });

  it("stops launching when the command is missing: every job would fail alike", async () => {
    const { clock, runner, fake } = setup({ rate: Infinity, count: 10, concurrency: 1, behaviour: () => ({ runMs: 0, spawnError: "ENOENT" }) });
    const result = await drive(clock, runner.run());
    expect(fake.startsMs).toHaveLength(1);
    expect(result).toMatchObject({ stoppedBy: "spawn-error", spawnFailure: { error: { code: "ENOENT" }, job: { number: 1 } } });
  });

  it("keeps launching after a spawn error that may pass (EAGAIN)", async () => {
    const { clock, runner } = setup({
      rate: Infinity,
      count: 3,
      behaviour: (job) => (job.number === 1 ? { runMs: 0, spawnError: "EAGAIN" } : { runMs: 0 }),
    });
    const result = await drive(clock, runner.run());
    expect(result.counts).toMatchObject({ started: 3, succeeded: 2, failed: 1 });
    expect(result.spawnFailure).toBeUndefined();
  });

  it("when the limiter fails (a store gone), stops launching, lets running jobs end, then reports its error with the counts", async () => {
    let calls = 0;
    const failing = (clock: FakeClock): Limiter => {
      const bucket = new TokenBucket({ rate: Infinity, burst: 1, clock });
      return {
        rate: Infinity,
        burst: 1,
        wait: async (n, signal) => {
          if (++calls > 2) throw new Error("store unreachable");
          await bucket.wait(n, signal);
        },
        tryWait: async () => {
          throw new Error("not used without --max-wait");
        },
        tokens: () => bucket.tokens(),
      };
    };
    const { clock, runner, fake, records } = setup({
      rate: Infinity,
      count: 10,
      extra: { retries: 1 },
      limiter: failing,
      behaviour: (job) => ({ runMs: 100, code: job.number === 1 ? 1 : 0 }),
    });
    const result = await drive(clock, runner.run());
    expect(result.stoppedBy).toBe("limiter-error");
    expect((result.limiterError?.error as Error).message).toBe("store unreachable");
    expect(result.counts).toMatchObject({ started: 2, succeeded: 1, failed: 1 });
    expect(fake.startsMs).toHaveLength(2);
    expect(records.map((r) => [r.number, r.exit?.code])).toEqual([[1, 1], [2, 0]]);
  });
});

describe("JobRunner shared slots", () => {
  /** Slots shared with other processes, as a key's concurrency limit: `free` of them, each taken with its launch. */
  function sharedSlots(free: number) {
    const log: string[] = [];
    let inUse = 0;
    return {
      log,
      slots: {
        acquire: async () => {
          if (inUse >= free) return undefined;
          inUse++;
          log.push(`take ${inUse}`);
          return async () => {
            inUse--;
            log.push(`give ${inUse}`);
          };
        },
      },
    };
  }

  it("each attempt takes its launch and a slot in one step and gives the slot back when it ends, between retries too", async () => {
    const { log, slots } = sharedSlots(1);
    const { clock, runner, records } = setup({
      rate: Infinity,
      count: 2,
      concurrency: 1,
      extra: { retries: 1, sharedSlots: slots, maxWaitMs: 0 },
      behaviour: (_job, attempt) => ({ runMs: 100, code: attempt === 1 ? 1 : 0 }),
    });
    await drive(clock, runner.run());
    // One slot: job 1's two attempts each hold it while they run; job 2 finds it free after.
    expect(log).toEqual(["take 1", "give 0", "take 1", "give 0", "take 1", "give 0", "take 1", "give 0"]);
    expect(records.map((record) => [record.attempts, record.exit?.code])).toEqual([
      [2, 0],
      [2, 0],
    ]);
  });

  it("a launch refused a slot is skipped as a token refused would be, holding nothing", async () => {
    const { log, slots } = sharedSlots(0);
    const { clock, runner, records } = setup({ rate: Infinity, count: 2, extra: { sharedSlots: slots, maxWaitMs: 0 } });
    const result = await drive(clock, runner.run());
    expect(log).toEqual([]);
    expect(result.counts).toMatchObject({ started: 0, skipped: 2 });
    expect(records.every((record) => record.skipped)).toBe(true);
  });
});

describe("JobRunner with a limiter per job (classes)", () => {
  async function classRun(items: string[]) {
    const clock = new FakeClock(1000);
    const { ClassLimiter } = await import("../../src/core/class-limiter.js");
    // a: 9/s guaranteed, first; b: 1/s. The key: 10/s.
    const classes = new ClassLimiter([{ kind: "bucket", unit: "count", rate: 10, burst: 1 }], [
      { name: "a", rate: 9, prio: 0, burst: 2 },
      { name: "b", rate: 1, prio: 1, burst: 2 },
    ], { clock });
    const fake = fakeLaunches(clock, () => ({ runMs: 0 }));
    const records: JobRecord[] = [];
    const runner = new JobRunner({
      limiter: classes.limiterFor("a"),
      clock,
      jobs: jobSource({ items: (async function* () { yield* items; })(), count: Infinity }),
      launch: fake.launch,
      concurrency: Infinity,
      limiterOf: (job) => {
        if (job.item === "c") throw new Error(`line ${job.number}: no class "c"`);
        return classes.limiterFor(job.item!);
      },
      onJobEnd: (record) => records.push(record),
    });
    const result = await drive(clock, runner.run());
    classes.close();
    return { result, records, takenBy: classes.takenBy };
  }

  it("a class's wait does not hold up another's: the items are read on while one waits", async () => {
    // b's items come first (two at once, then 1/s: to 3 s); a's after them go at a's 9/s, not behind b's.
    const items = ["b", "b", "b", "b", "b", ...Array.from({ length: 18 }, () => "a")];
    const { records } = await classRun(items);
    const aEnd = Math.max(...records.filter((r) => r.item === "a").map((r) => r.startMs! - 1000));
    const bEnd = Math.max(...records.filter((r) => r.item === "b").map((r) => r.startMs! - 1000));
    expect(aEnd).toBeLessThan(bEnd);
    expect(aEnd).toBeLessThanOrEqual(2300);
  });

  it("an item the limiter refuses is failed, never started, with its line", async () => {
    const { result, records } = await classRun(["a", "c", "b"]);
    expect(result.counts).toMatchObject({ started: 2, succeeded: 2, failed: 1 });
    const bad = records.find((r) => r.item === "c")!;
    expect(bad).toMatchObject({ number: 2, attempts: 0, startMs: undefined, skipped: false, badItem: `line 2: no class "c"` });
  });
});
