import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Gives the whole run a folder of its own and points the temp, state, data,
 * config and cache directories into it, so that no test leaves files in the
 * machine's temp folder or touches the user's ~/.local/state (where the
 * default SQLite store lives) or a shell's history. Workers start after this
 * and inherit the environment. Whatever a test forgot to remove is removed with
 * the folder, and named in an error that fails the run; so is a tbucket-* entry
 * that appeared in the machine's temp folder (a child run with an environment
 * of its own, without TMPDIR), which is left for a person to look at.
 */
export default function isolate(): () => void {
  // Each project runs the global setup: the first one sets up for all.
  if (process.env.TBUCKET_TEST_ROOT) return () => {};
  const machineTmp = tmpdir();
  const ours = (entry: string) => entry.startsWith("tbucket-");
  const before = new Set(readdirSync(machineTmp).filter(ours));
  const root = mkdtempSync(join(machineTmp, "tbucket-test-"));
  const folders = { TMPDIR: "tmp", XDG_STATE_HOME: "state", XDG_DATA_HOME: "data", XDG_CONFIG_HOME: "config", XDG_CACHE_HOME: "cache" };
  for (const [variable, name] of Object.entries(folders)) {
    const path = join(root, name);
    mkdirSync(path);
    process.env[variable] = path;
  }
  process.env.TBUCKET_TEST_ROOT = root;
  return () => {
    const left = Object.values(folders).flatMap((name) => readdirSync(join(root, name)).map((entry) => join(name, entry)));
    rmSync(root, { recursive: true, force: true });
    const escaped = readdirSync(machineTmp).filter((entry) => ours(entry) && !before.has(entry) && !entry.startsWith("tbucket-test-"));
    left.push(...escaped.map((entry) => join(machineTmp, entry)));
    delete process.env.TBUCKET_TEST_ROOT;
    // Leaving files behind is a defect like a failed assertion: the run fails.
    if (left.length > 0) {
      process.stderr.write(`\nFAIL: tests left behind: ${left.join(", ")}\n`);
      process.exitCode = 1;
    }
  };
}
