// Runs tbucket's own entry point in the test process, with the command's work
// replaced by a stub: argument parsing and its messages, without a process.
import type * as StandardStreams from "../../src/cli/standard-streams.js";

/** What the entry point wrote to standard error and output since the last `runMain`. */
const written = { stderr: "", stdout: "" };

/**
 * The factory for `vi.mock("../../src/cli/standard-streams.js", ...)`: the
 * real module, writing into `written` instead of descriptors 1 and 2, and
 * leaving the test process's own standard error alone.
 */
export async function captureStandardStreams(importOriginal: () => Promise<typeof StandardStreams>): Promise<typeof StandardStreams> {
  return {
    ...(await importOriginal()),
    writeStandardError: (text: string) => void (written.stderr += text),
    writeStandardOutput: (text: string | Buffer) => void (written.stdout += text.toString()),
    ignoreStandardErrorFailures: () => {},
  };
}

/** The status `main(argv)` returns and the lines it wrote, as `tbucket argv...` would give them. */
export async function runMain(argv: readonly string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  written.stderr = "";
  written.stdout = "";
  const { main } = await import("../../src/cli/main.js");
  const code = await main(argv);
  return { code, stderr: written.stderr, stdout: written.stdout };
}
