import { readdirSync, readFileSync } from "node:fs";
import { type Clock, systemClock } from "../core/clock.js";

/** How often `endLingering` looks whether the groups are gone. */
const POLL_MS = 50;

/**
 * The process groups of the jobs (each job leads one), kept for as long as
 * any process of theirs may live: a job whose own process ended can leave
 * background processes behind in its group ("lingering"). A group's number
 * stays reserved by the system while any member lives, so signalling it never
 * hits a stranger; once a check finds a group empty it is forgotten.
 *
 * A process killed after its parent is a zombie until PID 1 reaps it, which
 * some inits do late (seconds): on Linux, a group of zombies counts as empty.
 */
export class ProcessGroups {
  readonly #live = new Set<number>();
  readonly #lingering = new Set<number>();
  readonly #clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  /** A job started as the leader of group `pid`. */
  add(pid: number): void {
    this.#live.add(pid);
  }

  /** The job's own process ended and its output closed: keep its group only if something of it lives on. */
  jobEnded(pid: number): void {
    if (!this.#live.delete(pid)) return;
    this.#lingering.add(pid);
    this.signalLingering(0);
  }

  /** True when a job that ended left processes behind. */
  get anyLingering(): boolean {
    return this.#lingering.size > 0;
  }

  /** Sends `signal` (0: only look) to the groups of ended jobs that left processes behind. */
  signalLingering(signal: NodeJS.Signals | 0): void {
    for (const group of this.#lingering) if (!signalGroup(group, signal)) this.#lingering.delete(group);
  }

  /** Sends `signal` to every group, running jobs' and lingering ones: the last thing before exiting. */
  signalAll(signal: NodeJS.Signals): void {
    for (const group of this.#live) signalGroup(group, signal);
    this.signalLingering(signal);
  }

  /** Ends what ended jobs left behind: `signal` now, SIGKILL `killAfterMs` later for what outlived it. */
  async endLingering(signal: NodeJS.Signals, killAfterMs: number): Promise<void> {
    this.signalLingering(signal);
    const deadlineMs = this.#clock.now() + killAfterMs;
    for (;;) {
      for (const group of this.#lingering) if (!hasLiveProcess(group)) this.#lingering.delete(group);
      if (!this.anyLingering || this.#clock.now() >= deadlineMs) break;
      await this.#clock.sleep(Math.min(POLL_MS, deadlineMs - this.#clock.now()));
    }
    this.signalLingering("SIGKILL");
  }
}

/** Signals a whole group; false when it has no process left (ESRCH). */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/** True when group `pid` has a process that is not a zombie; where /proc cannot tell, when it has any. */
function hasLiveProcess(pid: number): boolean {
  if (!signalGroup(pid, 0)) return false;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "latin1");
    } catch {
      continue;
    }
    // "pid (name) state ppid pgrp ...": the name may hold spaces and parentheses.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(pgrp) === pid && state !== "Z" && state !== "X") return true;
  }
  return false;
}
