// The benchmarks' peers (pv, cstream, trickle, socat, nginx, wrk...) come from Debian's packages:
// found on PATH, or installed with apt-get when the benchmark runs as root. Never by the tests.
import { execFileSync, spawnSync } from "node:child_process";

/** Whether `command` can be run (a name on PATH, or a path). */
export function have(command) {
  return spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;
}

/**
 * Installs the packages of the commands that are missing, `{ command: package }`, with apt-get
 * when running as root; otherwise names them on standard error, and their rows are left out.
 * Returns the commands still missing.
 */
export function ensurePackages(packagesByCommand) {
  const missing = Object.entries(packagesByCommand).filter(([command]) => !have(command));
  if (missing.length === 0) return [];
  const packages = [...new Set(missing.map(([, name]) => name))].join(" ");
  if (process.getuid?.() !== 0 || !have("apt-get")) {
    process.stderr.write(`bench: missing ${missing.map(([command]) => command).join(", ")}; their rows are left out (apt-get install ${packages})\n`);
    return missing.map(([command]) => command);
  }
  process.stderr.write(`bench: installing ${packages} with apt-get\n`);
  execFileSync(
    "sh",
    ["-c", `apt-get install -y --no-install-recommends ${packages} >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends ${packages} >/dev/null 2>&1; }`],
    { stdio: "inherit", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } },
  );
  return missing.map(([command]) => command).filter((command) => !have(command));
}
