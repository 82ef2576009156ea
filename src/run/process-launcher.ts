import { spawn, type StdioOptions } from "node:child_process";
import type { Readable } from "node:stream";
import { commandLines } from "./command-template.js";
import { createCollector, type OutputMode, type StreamCollector } from "./job-output.js";
import type { JobExit, Launch, LaunchedJob } from "./launch.js";
import type { OutputSink } from "./output-sink.js";
import type { ProcessGroups } from "./process-groups.js";
import { describeSpawnError } from "./spawn-error.js";

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
  return (job) => {
    const { file, args } = commandLine(job);
    const tag = options.tag ? `${job.item ?? job.number}\t` : undefined;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(file, args, { stdio, detached: true });
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
        void Promise.all(flushed).then(() => resolve(spawnError ? { code: null, signal: null, spawnError } : { code, signal }));
      });
    });
    const launched: LaunchedJob = {
      exited,
      kill: (signal) => {
        if (closed || pid === undefined) return;
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
