import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { RuntimeError } from "../errors.js";
import { writeStandardError } from "../standard-streams.js";

/** The access log: standard output for "-", else a file appended to; a file that cannot be opened is a runtime failure. */
export async function openAccessLog(path: string): Promise<{ stream: NodeJS.WritableStream; close(): Promise<void> }> {
  if (path === "-") {
    process.stdout.on("error", () => {});
    return { stream: process.stdout, close: async () => {} };
  }
  const stream = createWriteStream(path, { flags: "a" });
  try {
    await once(stream, "open");
  } catch (error) {
    throw new RuntimeError(`--access-log ${path}: ${describeFileError(error)}; choose a file you can write`);
  }
  // A log that fails mid-run (a full disk) must not stop the proxy.
  stream.on("error", (error) => writeStandardError(`tbucket: warning: --access-log ${path}: ${describeFileError(error)}; requests go on unlogged\n`));
  return { stream, close: () => new Promise<void>((resolve) => stream.end(() => resolve())) };
}

function describeFileError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return "its folder does not exist";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a folder";
  return code ?? (error as Error).message;
}

