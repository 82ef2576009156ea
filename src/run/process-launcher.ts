import { spawn, type StdioOptions } from "node:child_process";
import type { Readable } from "node:stream";
import { commandLines } from "./command-template.js";
import { createCollector, type OutputMode, type StreamCollector } from "./job-output.js";
import type { JobExit, Launch, LaunchedJob } from "./launch.js";
import type { OutputSink } from "./output-sink.js";
import type { ProcessGroups } from "./process-groups.js";
import { describeSpawnError } from "./spawn-error.js";
import { join } from "node:path";
import { closeSync, mkdirSync, openSync, rmSync } from "node:fs";
import { readServerReport } from "./server-report.js";

export interface ProcessLauncherOptions {
  /** The command and its arguments, with `{}` and `{#}` still in them. */
  template: readonly string[];
  /** Run through `/bin/sh -c`, items shell-quoted. */
  shell: boolean;
  /** `ignore` when our standard input holds the items: jobs must not eat them. */
  stdin: "ignore" | "inherit";
  output: OutputMode;
  /** Prefix every output line with the job's item, or its number when it has none. */
  tag: boolean;
  stdout: OutputSink;
  stderr: OutputSink;
  /** Keeps each job's group while anything of it lives, to end it on the way out. */
  groups?: ProcessGroups;
  /**
   * The run's private report directory (DESIGN 13): each attempt gets an empty file in it,
   * named in `{report}` and `$TBUCKET_REPORT`, read once the attempt exits (JobExit.report).
   */
  reportDir?: string;
  /** The wall clock report dates are read against. */
  nowEpochMs?: () => number;
}

/**
 * Launches jobs as child processes, started directly (no shell) unless asked.
 *
 * Each job leads a process group of its own (a new session, as `setsid`), so
 * that a signal reaches everything the job started, its grandchildren
 * included, and not just the process we spawned. The terminal's Ctrl-C then
 * reaches tbucket alone, which passes it on to every group.
 */
export function createProcessLauncher(options: ProcessLauncherOptions): Launch {
  const out: StdioOptions = options.output === "raw" ? "inherit" : "pipe";
  const stdio: StdioOptions = [options.stdin, out, out];
  const commandLine = commandLines(options.template, options.shell);
  /** Said for the first job only: a run of daemons would say it for each. */
  let toldHeld = false;
  return (job, attempt) => {
    const reportPath = options.reportDir === undefined ? undefined : join(options.reportDir, `${job.number}-${attempt}`);
    if (reportPath !== undefined) createReportFile(options.reportDir!, reportPath);
    const { file, args } = commandLine(job, reportPath);
    const env = reportPath === undefined ? undefined : { ...process.env, TBUCKET_REPORT: reportPath };
    const tag = options.tag ? `${job.item ?? job.number}\t` : undefined;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(file, args, { stdio, detached: true, env });
    } catch (error) {
      // Arguments spawn refuses outright, such as an empty command name or an item holding a NUL byte.
      const spawnError = describeSpawnError(error as NodeJS.ErrnoException, file, args);
      return { exited: Promise.resolve({ code: null, signal: null, spawnError }), kill: () => {} };
    }
    const pid = child.pid;
    if (pid !== undefined) options.groups?.add(pid);
    // One owner for both streams of a job: while one streams a long line, the other may still write.
    const owner = { job };
    const collectors = [
      follow(child.stdout, createCollector(options.output, options.stdout, tag, owner)),
      follow(child.stderr, createCollector(options.output, options.stderr, tag, owner)),
    ];
    const pipes = [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
    // A job ends when its process does (as with xargs), not when a process it left behind lets go of its output.
    let signalled = false;
    child.once("exit", () =>
      stopWaitingAfterExit(pipes, () => {
        // A job we signalled is being ended with all it started: nothing to tell.
        if (toldHeld || signalled) return;
        toldHeld = true;
        options.stderr.writeLine(`tbucket: run: job ${job.number} ended but a process it started still holds its output; not waiting for it\n`);
      }),
    );
    // Until 'close', the job's process or one holding its output keeps the group's number
    // reserved, so signalling the group is safe; after it, ProcessGroups looks before it signals.
    let closed = false;
    const exited = new Promise<JobExit>((resolve) => {
      let spawnError: JobExit["spawnError"];
      child.once("error", (error: NodeJS.ErrnoException) => {
        spawnError = describeSpawnError(error, file, args);
      });
      // 'close' comes after the process ended and its output streams closed: nothing is left to read.
      child.once("close", (code, signal) => {
        closed = true;
        if (pid !== undefined) options.groups?.jobEnded(pid);
        const flushed = collectors.map((collector) => collector?.end());
        void Promise.all(flushed)
          .then(async () => {
            const exit: JobExit = spawnError ? { code: null, signal: null, spawnError } : { code, signal };
            if (reportPath === undefined) return exit;
            // No file or one that cannot be read: no report. Read bounded, then gone: the directory holds only live attempts.
            const report = await readServerReport(reportPath, options.nowEpochMs?.() ?? Date.now()).catch(() => undefined);
            rmSync(reportPath, { force: true });
            return report ? { ...exit, report } : exit;
          })
          .then(resolve);
      });
    });
    const launched: LaunchedJob = {
      exited,
      kill: (signal) => {
        if (closed || pid === undefined) return;
        signalled = true;
        try {
          process.kill(-pid, signal);
        } catch {
          // ESRCH: the whole group is gone already.
        }
      },
    };
    return launched;
  };
}

function follow(stream: Readable | null, collector: StreamCollector | undefined): StreamCollector | undefined {
  if (!stream || !collector) return undefined;
  const resume = () => stream.resume();
  stream.on("data", (chunk: Buffer) => {
    if (!collector.push(chunk, resume)) stream.pause();
  });
  return collector;
}

/**
 * Rounds of reading after a job's exit that may still bring what it wrote: a pipe holds at
 * most 1 MiB (pipe-max-size), read up to 64 KiB at a time. More comes only from another writer.
 */
const ROUNDS_AFTER_EXIT = 32;
/** Then how long a quiet pipe may take to end: the job's own children, signalled with it, may take a moment to die. */
const HELD_GRACE_MS = 200;

/**
 * Once a job's own process has exited, all it wrote is in its pipes (a process's
 * files close before its parent hears of its end), but the pipes end only when
 * every process holding them has let go: a background child (`cmd &`) keeps
 * them open for as long as it lives. This reads what is there, each round one
 * pass of the event loop's poll (two immediates); when a round brings nothing
 * and a pipe is still open HELD_GRACE_MS later, it calls `onHeld` and closes
 * our end of it: the job is over. A pipe paused for the output's sake is
 * waited for, not counted.
 */
function stopWaitingAfterExit(pipes: readonly Readable[], onHeld: () => void): void {
  let rounds = 0;
  let read = false;
  let graced = false;
  const onData = () => (read = true);
  for (const pipe of pipes) pipe.on("data", onData);
  const open = () => pipes.filter((pipe) => !pipe.destroyed && !pipe.readableEnded);
  const done = () => {
    for (const pipe of pipes) pipe.off("data", onData);
  };
  const look = () => {
    const left = open();
    if (left.length === 0) return done();
    const paused = left.find((pipe) => pipe.isPaused());
    if (paused) {
      paused.once("resume", () => setImmediate(look));
      return;
    }
    read = false;
    setImmediate(() =>
      setImmediate(() => {
        const stillOpen = open();
        if (stillOpen.length === 0) return done();
        if (read && ++rounds < ROUNDS_AFTER_EXIT) return look();
        if (!graced) {
          graced = true;
          setTimeout(look, HELD_GRACE_MS);
          return;
        }
        done();
        onHeld();
        for (const pipe of stillOpen) pipe.destroy();
      }),
    );
  };
  look();
}

/**
 * The attempt's empty report file. A job may have removed the run's directory (it is named in
 * $TBUCKET_REPORT): it is made again, ours alone. A file that still cannot be made is no report,
 * never a job not run.
 */
function createReportFile(dir: string, path: string): void {
  try {
    closeSync(openSync(path, "w", 0o600));
  } catch {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      closeSync(openSync(path, "w", 0o600));
    } catch {
      // The job gets the path all the same; what it cannot write there is no report.
    }
  }
}
