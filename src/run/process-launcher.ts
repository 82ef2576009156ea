import { spawn, type StdioOptions } from "node:child_process";
import type { Readable } from "node:stream";
import { buildCommandLine } from "./command-template.js";
import { createCollector, type OutputMode, type StreamCollector } from "./job-output.js";
import type { JobExit, Launch, LaunchedJob } from "./launch.js";
import type { OutputSink } from "./output-sink.js";

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
}

/** Launches jobs as child processes, started directly (no shell) unless asked. */
export function createProcessLauncher(options: ProcessLauncherOptions): Launch {
  const out: StdioOptions = options.output === "raw" ? "inherit" : "pipe";
  const stdio: StdioOptions = [options.stdin, out, out];
  return (job) => {
    const { file, args } = buildCommandLine(options.template, job, options.shell);
    const tag = options.tag ? `${job.item ?? job.number}\t` : undefined;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(file, args, { stdio });
    } catch (error) {
      // Arguments spawn refuses outright, such as an item holding a NUL byte.
      const spawnError = { code: (error as NodeJS.ErrnoException).code ?? "EINVAL", message: (error as Error).message };
      return { exited: Promise.resolve({ code: null, signal: null, spawnError }), kill: () => {} };
    }
    const collectors = [
      follow(child.stdout, createCollector(options.output, options.stdout, tag)),
      follow(child.stderr, createCollector(options.output, options.stderr, tag)),
    ];
    const exited = new Promise<JobExit>((resolve) => {
      let spawnError: JobExit["spawnError"];
      child.once("error", (error: NodeJS.ErrnoException) => {
        spawnError = { code: error.code ?? "EUNKNOWN", message: error.message };
      });
      // 'close' comes after the process ended and its output streams closed: nothing is left to read.
      child.once("close", (code, signal) => {
        for (const collector of collectors) collector?.end();
        resolve(spawnError ? { code: null, signal: null, spawnError } : { code, signal });
      });
    });
    const launched: LaunchedJob = {
      exited,
      kill: (signal) => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
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
