import { setMaxListeners } from "node:events";
import { type Clock, systemClock } from "../core/clock.js";
import type { Costs } from "../core/limit-spec.js";
import type { Limiter } from "../core/limiter.js";
import type { JobSpec } from "./job-source.js";
import { type JobExit, type Launch, type LaunchedJob, succeeded } from "./launch.js";
import { settledCosts, throttleWaitMs } from "./server-report.js";

/** What happened to one job, once it is over. Times are on the runner's clock. */
export interface JobRecord {
  readonly number: number;
  readonly item: string | undefined;
  /** When the first attempt started; undefined when the job was skipped. */
  readonly startMs: number | undefined;
  readonly endMs: number;
  /** Time spent waiting for tokens, over every attempt. */
  readonly waitMs: number;
  /** The last attempt's exit; undefined when the job was skipped. */
  readonly exit: JobExit | undefined;
  readonly attempts: number;
  /** Never started: the token would have taken longer than --max-wait. */
  readonly skipped: boolean;
  /** Never started: its item could not be run (a class not defined), this line says why. It counts as failed. */
  readonly badItem?: string;
  /** Attempts whose report's last response was throttled (429, 503). */
  readonly throttled?: number;
  /** The longest wait a throttled response asked for (Retry-After, retry-after-ms, a used-up limit's reset). */
  readonly serverWaitMs?: number;
  /** The costs the job was admitted with, and those its report settled (`tbucket-cost`). */
  readonly costs?: Costs;
  readonly settledCosts?: readonly number[];
}

/** What one attempt's report said, for a rate controller (`--adaptive`) to follow. */
export interface AttemptOutcome {
  readonly throttled: boolean;
  readonly serverWaitMs: number | undefined;
}

/** Counters, for progress and the summary. */
export interface RunCounts {
  /** Jobs whose first attempt started. */
  started: number;
  running: number;
  succeeded: number;
  failed: number;
  /** Jobs that did not succeed after a signal was passed on to them (Ctrl-C, a closed output). */
  interrupted: number;
  skipped: number;
  /** Attempts after the first. */
  retried: number;
}

/** Why launching stopped before the jobs ran out. */
export type StopReason = "signal" | "duration" | "spawn-error" | "limiter-error" | "output-error";

export interface RunResult {
  readonly counts: Readonly<RunCounts>;
  readonly stoppedBy: StopReason | undefined;
  /** The first job that could not be started because its command is missing or not executable. */
  readonly spawnFailure: { readonly job: JobSpec; readonly error: NonNullable<JobExit["spawnError"]> } | undefined;
  readonly elapsedMs: number;
  readonly waitMs: number;
  /** Time jobs spent waiting for a free slot (`concurrency`), before asking for their token. */
  readonly slotWaitMs?: number;
  /** What the limiter threw when it failed (a store gone): launching stopped there. */
  readonly limiterError?: { readonly error: unknown };
}

export interface JobRunnerOptions {
  limiter: Limiter;
  jobs: AsyncIterable<JobSpec>;
  launch: Launch;
  /** Most jobs running at once; Infinity: no limit. */
  concurrency: number;
  /**
   * Slots shared with other processes (a shared key's concurrency limit):
   * each attempt then takes its launch and a slot in one step, instead of a
   * token from `limiter`, holds the slot while it runs and gives it back
   * when it ends, so a job between attempts holds none.
   */
  sharedSlots?: SharedSlots;
  /** Skip a job whose token would take longer than this; Infinity: wait as long as it takes. */
  maxWaitMs?: number;
  /** Extra attempts for a failed job, each taking a token. */
  retries?: number;
  /** Stop launching after this long; Infinity: never. */
  durationMs?: number;
  /** After a signal is passed on, kill the jobs still running this much later; Infinity: never. */
  killAfterMs?: number;
  clock?: Clock;
  /** An attempt is about to start (attempt 1 is the job's start); `askedMs`: when its token was asked for, no later than its grant. */
  onLaunch?(job: JobSpec, attempt: number, atMs: number, askedMs: number): void;
  /**
   * The limiter a job takes its tokens from (its class's line), instead of
   * `limiter`; throwing marks the item bad: the job never starts, and counts
   * as failed with the error's message as its `badItem`.
   */
  limiterOf?(job: JobSpec): Limiter;
  /**
   * What a job's launch costs in each unit (a launch is `{ count: 1 }`; `--cost` adds the item's
   * `cost`); throwing marks the item bad, as limiterOf does.
   */
  costsOf?(job: JobSpec): Costs;
  /** A bad item (costsOf or limiterOf threw) counts as skipped, not failed (run --skip-bad). */
  skipBadItems?: boolean;
  /** A job is over: finished, failed for good, or skipped. */
  onJobEnd?(record: JobRecord): void;
  /** An attempt ended and its report was read: where a rate controller plugs in. */
  onAttemptEnd?(job: JobSpec, attempt: number, exit: JobExit, outcome: AttemptOutcome): void;
  /** The job's report settled its costs (`tbucket-cost`): correct the limits that counted them. */
  settle?(job: JobSpec, limiter: Limiter, admitted: Costs, settled: readonly number[]): void;
  /** With a shared key: the server's pushback, told to and heard from every process on the key. */
  sharedPause?: SharedPause;
  /** The server paused launches for `ms` from now (the pause moved later): where the limiter is kept from filling meanwhile. */
  onPause?(ms: number): void;
  /** A launch also waits for a token of this, before the limiter's (run --adaptive's rate, in front of a set or a shared key). */
  pacer?: Limiter;
}

/** A pause kept where every process on a key reads it (the store): asked before every launch. */
export interface SharedPause {
  /** Pauses the key for `ms` from now, unless it is paused for longer. */
  pause(ms: number): Promise<void>;
  /** How long the key is still paused (0: not). */
  remainingMs(): Promise<number>;
}

/** Backoff after a throttle that named no time: from 1 s, doubling, at most 60 s, with jitter. */
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MOST_MS = 60_000;

/** Launches that hold a slot of a limit shared with other processes while they run. */
export interface SharedSlots {
  /** Waits for a launch and a slot, as Limiter.tryWait (Infinity: as long as it takes); resolves to the slot's release, or undefined when refused. */
  acquire(maxWaitMs: number, signal: AbortSignal, costs: Costs): Promise<(() => Promise<void>) | undefined>;
}

const FATAL_SPAWN_ERRORS = new Set(["ENOENT", "EACCES", "ENOTDIR", "EISDIR", "ENOINTERP"]);

/** Spawn errors that will fail every job alike (command missing or not executable): launching more is pointless. */
export function isFatalSpawnError(code: string): boolean {
  return FATAL_SPAWN_ERRORS.has(code);
}

/**
 * JobRunner launches jobs under two separate limits: the limiter decides how
 * fast launches start (one token each, retries included), and `concurrency`
 * how many run at once. For each job it takes a slot first and then a token,
 * so a job waiting for a slot never holds a token, and a token is always
 * spent within a moment of being granted.
 *
 * `stop(signal)` ends launching and forwards the signal to running jobs;
 * `kill()` ends them for good, as does `killAfterMs` after a signal they
 * ignored. The run resolves once every started job has ended.
 */
export class JobRunner {
  readonly #options: JobRunnerOptions;
  readonly #clock: Clock;
  readonly #maxWaitMs: number;
  readonly #retries: number;
  /** Aborted when launching must stop: cancels waits for items, slots and tokens. */
  readonly #stopLaunching = new AbortController();
  readonly #live = new Set<LaunchedJob>();
  /** Jobs a signal was passed on to: if they do not succeed, they count as interrupted, not failed. */
  readonly #signalled = new WeakSet<LaunchedJob>();
  readonly #counts: RunCounts = { started: 0, running: 0, succeeded: 0, failed: 0, interrupted: 0, skipped: 0, retried: 0 };
  #stoppedBy: StopReason | undefined;
  #spawnFailure: RunResult["spawnFailure"];
  #slotFreed: (() => void) | undefined;
  /** Slots held by jobs, from before their token until after their last attempt. */
  #slotsTaken = 0;
  #waitMs = 0;
  #slotWaitMs = 0;
  /** The limiter failed (a store that went away): launching stops, and run() reports it once jobs end. */
  #limiterError: { error: unknown } | undefined;
  /** Aborted when the run is over: cancels a pending --kill-after. */
  readonly #runOver = new AbortController();
  #killScheduled = false;
  /** With classes: jobs waiting for their token while the next items are read, and a wake-up when one has it. */
  #waitingTokens = 0;
  #tokenTaken: (() => void) | undefined;
  /** The server's pushback: no attempt starts before this instant (on the runner's clock). */
  #pausedUntilMs = -Infinity;
  /** The pauses being written to the shared key, in order: a launch reads the key's pause only after them. */
  #sharingPause: Promise<void> = Promise.resolve();
  /** Throttles in a row that named no time: the exponent of the backoff. */
  #unnamedThrottles = 0;

  constructor(options: JobRunnerOptions) {
    if (!(options.concurrency >= 1)) {
      throw new RangeError(`Expected \`concurrency\` to be at least 1 or Infinity, got \`${options.concurrency}\``);
    }
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#maxWaitMs = options.maxWaitMs ?? Infinity;
    this.#retries = options.retries ?? 0;
    // With classes, up to READ_AHEAD waits listen to it at once.
    setMaxListeners(0, this.#stopLaunching.signal);
  }

  /** Until when the server's pushback holds launches (this run's or, on a shared key, another process's), on the runner's clock. */
  get pausedUntilMs(): number {
    return this.#pausedUntilMs;
  }

  /** A snapshot of the counters. */
  get counts(): Readonly<RunCounts> {
    return { ...this.#counts, running: this.#live.size };
  }

  /** Stops launching; with a signal, forwards it to every running job, and kills them after `killAfterMs`. */
  stop(reason: StopReason, signal?: NodeJS.Signals): void {
    this.#stoppedBy ??= reason;
    this.#stopLaunching.abort();
    if (!signal) return;
    for (const job of this.#live) {
      this.#signalled.add(job);
      job.kill(signal);
    }
    const killAfterMs = this.#options.killAfterMs ?? Infinity;
    if (signal !== "SIGKILL" && Number.isFinite(killAfterMs) && !this.#killScheduled && !this.#runOver.signal.aborted) {
      this.#killScheduled = true;
      this.#clock.sleep(killAfterMs, this.#runOver.signal).then(
        () => this.kill(),
        () => {},
      );
    }
  }

  /** Kills every running job (the second Ctrl-C). */
  kill(): void {
    this.stop("signal", "SIGKILL");
  }

  async run(): Promise<RunResult> {
    const startMs = this.#clock.now();
    const stopSignal = this.#stopLaunching.signal;
    const durationMs = this.#options.durationMs ?? Infinity;
    const timerStop = new AbortController();
    if (Number.isFinite(durationMs)) {
      this.#clock.sleep(durationMs, timerStop.signal).then(
        () => this.stop("duration"),
        () => {},
      );
    }
    const running = new Set<Promise<void>>();
    const iterator = this.#options.jobs[Symbol.asyncIterator]();
    try {
      while (!stopSignal.aborted) {
        const next = await untilAborted(iterator.next(), stopSignal);
        if (next === ABORTED || next.done) break;
        let limiter: Limiter;
        let costs: Costs;
        try {
          limiter = this.#options.limiterOf?.(next.value) ?? this.#options.limiter;
          costs = this.#options.costsOf?.(next.value) ?? LAUNCH_COSTS;
        } catch (error) {
          const skipped = this.#options.skipBadItems === true;
          if (skipped) this.#counts.skipped++;
          else this.#counts.failed++;
          this.#options.onJobEnd?.({
            number: next.value.number, item: next.value.item, startMs: undefined, endMs: this.#clock.now(),
            waitMs: 0, exit: undefined, attempts: 0, skipped, badItem: (error as Error).message,
          });
          continue;
        }
        if (!(await this.#takeSlot(stopSignal))) break;
        const launch = this.#launch(next.value, limiter, costs, stopSignal, startMs, durationMs, running);
        if (this.#options.limiterOf === undefined) {
          if (!(await launch)) break;
        } else {
          // Classes: each job waits in its class's line while the next items are read, so that one
          // class's wait does not hold up another's; at most READ_AHEAD wait at once.
          this.#waitingTokens++;
          const waiting: Promise<void> = launch.then(() => {}).finally(() => {
            this.#waitingTokens--;
            this.#tokenTaken?.();
          });
          running.add(waiting);
          void waiting.finally(() => running.delete(waiting)).catch(() => {});
          while (this.#waitingTokens >= READ_AHEAD && !stopSignal.aborted) {
            await untilAborted(new Promise<void>((resolve) => (this.#tokenTaken = resolve)), stopSignal);
          }
        }
        // Let finished jobs be reaped and their output read even when launches are never throttled.
        await yieldToEventLoop();
      }
    } finally {
      timerStop.abort();
      void Promise.resolve(iterator.return?.()).catch(() => {});
      // Every job ends before the run does, even when one of them failed the run.
      // Jobs still waiting for their tokens (classes) start more jobs as they get them: until none is left.
      const ends: PromiseSettledResult<void>[] = [];
      while (running.size > 0) {
        const now = [...running];
        ends.push(...(await Promise.allSettled(now)));
        for (const promise of now) running.delete(promise);
      }
      this.#runOver.abort();
      const failure = ends.find((end) => end.status === "rejected");
      if (failure) throw failure.reason;
    }
    return {
      counts: this.counts,
      stoppedBy: this.#stoppedBy,
      spawnFailure: this.#spawnFailure,
      elapsedMs: this.#clock.now() - startMs,
      waitMs: this.#waitMs,
      slotWaitMs: this.#slotWaitMs,
      limiterError: this.#limiterError,
    };
  }

  /**
   * Takes a job's token (its slot is taken) and starts it; false when launching must stop (a stop,
   * the limiter failed, --duration passed), the slot given back.
   */
  async #launch(job: JobSpec, limiter: Limiter, costs: Costs, stopSignal: AbortSignal, startMs: number, durationMs: number, running: Set<Promise<void>>): Promise<boolean> {
    const token = await this.#takeToken(stopSignal, limiter, costs);
    // A token granted in the same moment as a stop must not start a job after the signal went out.
    if (token === ABORTED || token === FAILED || stopSignal.aborted) {
      if (token !== ABORTED && token !== FAILED) await token.release?.();
      this.#releaseSlot();
      return false;
    }
    // Past --duration by the clock, though its timer has not fired yet (a busy machine wakes timers late).
    if (this.#clock.now() - startMs >= durationMs) {
      this.stop("duration");
      await token.release?.();
      this.#releaseSlot();
      return false;
    }
    if (!token.ok) {
      this.#releaseSlot();
      this.#counts.skipped++;
      this.#options.onJobEnd?.({
        number: job.number, item: job.item, startMs: undefined, endMs: this.#clock.now(),
        waitMs: token.waitMs, exit: undefined, attempts: 0, skipped: true,
      });
      return true;
    }
    const run = this.#runJob(job, token, limiter, costs).finally(() => running.delete(run));
    running.add(run);
    // Observed by Promise.all below; this only keeps an early failure from counting as unhandled.
    run.catch(() => {});
    return true;
  }

  /** Runs one job to its end, retrying failures; the job holds its slot throughout. */
  async #runJob(job: JobSpec, firstToken: { waitMs: number; askedMs: number; release?: () => Promise<void> }, limiter: Limiter, costs: Costs): Promise<void> {
    let release = firstToken.release;
    let waitMs = firstToken.waitMs;
    let askedMs = firstToken.askedMs;
    let attempts = 0;
    let startMs: number | undefined;
    let exit: JobExit;
    let signalled = false;
    let throttled = 0;
    let serverWaitMs: number | undefined;
    let settled: readonly number[] | undefined;
    this.#counts.started++;
    try {
      for (;;) {
        attempts++;
        const atMs = this.#clock.now();
        startMs ??= atMs;
        this.#options.onLaunch?.(job, attempts, atMs, askedMs);
        const launched = this.#launchAttempt(job, attempts);
        this.#live.add(launched);
        try {
          exit = await launched.exited;
        } finally {
          this.#live.delete(launched);
          const ended = release;
          release = undefined;
          await ended?.();
        }
        signalled = this.#signalled.has(launched);
        const { pauseMs, ...outcome } = this.#pushback(exit);
        if (outcome.throttled) throttled++;
        if (outcome.serverWaitMs !== undefined) serverWaitMs = Math.max(serverWaitMs ?? 0, outcome.serverWaitMs);
        const reportedCosts = exit.report && settledCosts(exit.report);
        if (reportedCosts) {
          settled = reportedCosts;
          this.#options.settle?.(job, limiter, costs, reportedCosts);
        }
        this.#options.onAttemptEnd?.(job, attempts, exit, outcome);
        // Paused once the attempt's end is told (--adaptive cuts its rate there): the buckets emptied for the
        // pause then owe it at the rate that follows, not at the one cut, which would hold them past its end.
        if (pauseMs !== undefined) this.#pause(pauseMs);
        if (exit.spawnError && isFatalSpawnError(exit.spawnError.code)) {
          this.#spawnFailure ??= { job, error: exit.spawnError };
          this.stop("spawn-error");
          break;
        }
        // A throttled attempt is retried even when the command exited 0 (curl without -f).
        if ((succeeded(exit) && !outcome.throttled) || attempts > this.#retries || this.#stopLaunching.signal.aborted) break;
        const token = await this.#takeToken(this.#stopLaunching.signal, limiter, costs);
        if (token === ABORTED || token === FAILED) break;
        waitMs += token.waitMs;
        if (!token.ok) break;
        release = token.release;
        askedMs = token.askedMs;
        this.#counts.retried++;
      }
    } finally {
      await release?.();
      this.#releaseSlot();
    }
    if (succeeded(exit) && throttled < attempts) this.#counts.succeeded++;
    else if (signalled) this.#counts.interrupted++;
    else this.#counts.failed++;
    this.#options.onJobEnd?.({
      number: job.number, item: job.item, startMs, endMs: this.#clock.now(), waitMs, exit, attempts, skipped: false,
      throttled, serverWaitMs, costs, settledCosts: settled,
    });
  }

  /** One attempt; a launch that throws (a fault of ours, not the job's) is an attempt that failed to start, never a job lost. */
  #launchAttempt(job: JobSpec, attempt: number): LaunchedJob {
    try {
      return this.#options.launch(job, attempt);
    } catch (error) {
      // Its own code: an errno here (the report file's) is not the command's, which would stop the run.
      const spawnError = { code: "ELAUNCH", message: (error as Error).message };
      return { exited: Promise.resolve({ code: null, signal: null, spawnError }), kill: () => {} };
    }
  }

  /**
   * A throttled attempt pauses every launch of the run until the server's time (the latest of
   * Retry-After, retry-after-ms and a used-up limit's reset), or, when it named none, a backoff
   * from 1 s doubling to 60 s with jitter: the pause it asks for, which only ever moves later.
   */
  #pushback(exit: JobExit): AttemptOutcome & { pauseMs?: number } {
    const last = exit.report?.responses.at(-1);
    if (!last?.throttled) {
      if (last) this.#unnamedThrottles = 0;
      // A limit the server says is used up (remaining 0, requests or tokens alike) holds launches until its reset:
      // a bucket lowered to nothing (a count above 0 lowers the buckets: run's onAttemptEnd).
      const usedUp = last?.limits.filter((limit) => limit.remaining === 0 && limit.resetMs !== undefined).map((limit) => limit.resetMs!) ?? [];
      return { throttled: false, serverWaitMs: undefined, ...(usedUp.length > 0 && { pauseMs: Math.max(...usedUp) }) };
    }
    const serverWaitMs = throttleWaitMs(last);
    let pauseMs: number;
    if (serverWaitMs !== undefined) {
      pauseMs = serverWaitMs;
    } else {
      const ceiling = Math.min(BACKOFF_MOST_MS, BACKOFF_FIRST_MS * 2 ** this.#unnamedThrottles++);
      // Half fixed, half random: clients throttled together come back apart, none sooner than half the step.
      pauseMs = ceiling / 2 + Math.random() * (ceiling / 2);
    }
    return { throttled: true, serverWaitMs, pauseMs };
  }

  /** Holds every launch for `ms`: this run's at once, and on a shared key every process's, through the store. */
  #pause(ms: number): void {
    const untilMs = this.#clock.now() + ms;
    if (untilMs > this.#pausedUntilMs) this.#options.onPause?.(ms);
    this.#pausedUntilMs = Math.max(this.#pausedUntilMs, untilMs);
    const shared = this.#options.sharedPause;
    if (!shared) return;
    const writing = this.#sharingPause.then(
      () => shared.pause(ms),
      () => shared.pause(ms),
    );
    // A store that fails here fails the next launch's wait (a limiter error); until then the rejection is held, not unhandled.
    writing.catch(() => {});
    this.#sharingPause = writing;
  }

  /** Waits out the server's pause: this run's, then the shared key's as the store has it (another process may have paused it). */
  async #waitOutPause(signal: AbortSignal): Promise<void> {
    const shared = this.#options.sharedPause;
    for (;;) {
      while (this.#clock.now() < this.#pausedUntilMs) {
        await this.#clock.sleep(this.#pausedUntilMs - this.#clock.now(), signal);
      }
      if (!shared) return;
      await this.#sharingPause;
      const leftMs = await shared.remainingMs();
      if (!(leftMs > 0)) return;
      this.#pausedUntilMs = Math.max(this.#pausedUntilMs, this.#clock.now() + leftMs);
    }
  }

  /** Waits for a free slot and takes it; false when launching stopped meanwhile. */
  async #takeSlot(signal: AbortSignal): Promise<boolean> {
    const beforeMs = this.#clock.now();
    try {
      while (this.#slotsTaken >= this.#options.concurrency) {
        const freed = new Promise<void>((resolve) => (this.#slotFreed = resolve));
        if ((await untilAborted(freed, signal)) === ABORTED) return false;
      }
    } finally {
      this.#slotWaitMs += this.#clock.now() - beforeMs;
    }
    this.#slotsTaken++;
    return true;
  }

  #releaseSlot(): void {
    this.#slotsTaken--;
    const wake = this.#slotFreed;
    this.#slotFreed = undefined;
    wake?.();
  }

  /**
   * One token, waiting at most --max-wait; ok false: skipped, nothing taken.
   * The run's wait counts every wait, one cut short by a stop (a signal while
   * the key is paused) too.
   */
  async #takeToken(
    signal: AbortSignal,
    limiter: Limiter,
    costs: Costs,
  ): Promise<{ ok: boolean; waitMs: number; askedMs: number; release?: () => Promise<void> } | typeof ABORTED | typeof FAILED> {
    const { sharedSlots } = this.#options;
    const beforeMs = this.#clock.now();
    try {
      // The server said when: no attempt is admitted before that, however many tokens there are.
      await this.#waitOutPause(signal);
      const pacer = this.#options.pacer;
      if (pacer) {
        if (!Number.isFinite(this.#maxWaitMs)) await pacer.wait(1, signal);
        else if (!(await pacer.tryWait(1, this.#maxWaitMs, signal))) return { ok: false, waitMs: this.#clock.now() - beforeMs, askedMs: beforeMs };
      }
      if (sharedSlots) {
        const release = await sharedSlots.acquire(this.#maxWaitMs, signal, costs);
        // A throttle that came while this one waited for its slot holds it back too (the slot stays held meanwhile).
        if (release !== undefined) await this.#waitOutPause(signal);
        return { ok: release !== undefined, waitMs: this.#clock.now() - beforeMs, askedMs: beforeMs, release };
      }
      let ok = true;
      if (!Number.isFinite(this.#maxWaitMs)) await limiter.wait(1, signal, costs);
      else ok = await limiter.tryWait(1, this.#maxWaitMs, signal, costs);
      // A throttle that came while this one waited for its token holds it back too.
      if (ok) await this.#waitOutPause(signal);
      return { ok, waitMs: this.#clock.now() - beforeMs, askedMs: beforeMs };
    } catch (error) {
      if (signal.aborted) return ABORTED;
      this.#limiterError ??= { error };
      this.stop("limiter-error");
      return FAILED;
    } finally {
      this.#waitMs += this.#clock.now() - beforeMs;
    }
  }
}

/** With classes, how many jobs may wait for their tokens at once (items read ahead of their launch). */
const READ_AHEAD = 1000;

/** A launch costs one in the limiter's unit, whatever else the limiter counts. */
const LAUNCH_COSTS: Costs = { count: 1 };

const ABORTED = Symbol("aborted");
const FAILED = Symbol("failed");

/** Resolves with the promise's value, or ABORTED as soon as the signal aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
