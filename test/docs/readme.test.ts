import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { start } from "../helpers/cli.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const readme = readFileSync(`${root}README.md`, "utf8");

describe("README", () => {
  it("the library example runs against the built package and prints what its comments say", async () => {
    const block = /<!-- library-example -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBeDefined();
    // Run from the package folder, "tbucket" resolves to this package through its own exports; nothing is written
    // into the clone, which a second suite beside this one may be running from.
    const result = await start(process.execPath, ["--input-type=module", "--eval", block!], { cwd: root }).exited;
    expect([result.code, result.stderr]).toEqual([0, ""]);
    expect(result.stdout.toString()).toBe(["true", "false", "200", "false", "4", "65536 65536", ""].join("\n"));
  });

  it(".ci/run runs the Quick start commands from this README", () => {
    expect(readme).toContain("npm ci && head -c 3M /dev/urandom | ./bin/tbucket --rate 1mb --stats > /dev/null\nnpm test\n");
    const ci = readFileSync(`${root}.ci/run`, "utf8");
    expect(ci).toContain(`awk '/^## Quick start/`);
    expect(ci).toContain(`bash -euo pipefail -c "$quickstart"`);
  });
});
