import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixture, start, TBUCKET } from "../helpers/cli.js";

/** Preloaded into tbucket: prints on exit every package it required from node_modules. */
const RECORD_REQUIRES = fixture("record-requires.cjs");

async function requiredPackages(args: string[], input = ""): Promise<{ code: number | null; packages: string[] }> {
  const { code, stderr } = await start(process.execPath, ["--require", RECORD_REQUIRES, TBUCKET, ...args], { input }).exited;
  const line = stderr.split("\n").find((l) => l.startsWith("required: "));
  return { code, packages: line ? (JSON.parse(line.slice("required: ".length)) as string[]) : ["(no record)"] };
}

describe("start-up loads only what the command needs", () => {
  it.each([
    [["--version"]],
    [["--rate", "1mb", "--stats"]],
    [["simulate", "--rate", "5", "--burst", "10", "--arrivals", "steady 8/s for 2s"]],
  ])("tbucket %j requires no package from node_modules (the store clients load only for a shared key)", async (args) => {
    const { code, packages } = await requiredPackages(args, "some input\n");
    expect(code).toBe(0);
    expect(packages).toEqual([]);
  });

  it("a pipe on a SQLite bucket does load better-sqlite3 (so the record above would show one)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tbucket-startup-"));
    const { code, packages } = await requiredPackages(["--rate", "1mb", "--key", "startup", "--store", `sqlite:${join(dir, "buckets.db")}`]);
    rmSync(dir, { recursive: true, force: true });
    expect(code).toBe(0);
    expect(packages).toContain("better-sqlite3");
  });
});
