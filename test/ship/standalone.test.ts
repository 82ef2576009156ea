// The standalone executable, as a user on a machine without Node gets it: built
// once, alone in an empty folder, run with an empty environment.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runCli, start } from "../helpers/cli.js";
import { startRedisServer, type RedisServer } from "../helpers/redis-server.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };

let dir: string;
let exe: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-ship-"));
  mkdirSync(join(dir, "bin"));
  exe = join(dir, "bin", "tbucket");
  // One build for the whole file (about 10 s: bundle, blob, strip, inject), written where the tests run it: not into
  // the clone's dist/, where a second suite from the same clone would be building its own at the same time.
  const build = spawnSync(process.execPath, [join(root, "scripts", "build-binary.mjs"), "--quiet", "--out", exe], { cwd: root, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`build-binary failed (${build.status}): ${build.stderr}`);
}, 240_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * Runs the copied executable in its empty folder with no environment (as `env -i` does), unless `env`
 * adds some. TMPDIR alone is set, to the test's folder: a shared key unpacks the SQLite addon there,
 * and a pipe the native part.
 */
function runExe(args: string[], options: { stdinFile?: string; input?: string; env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  return start(exe, args, {
    input: options.input,
    stdin: options.stdinFile ? { file: options.stdinFile } : "close",
    bareEnv: true,
    env: { TMPDIR: dir, ...options.env },
    cwd: options.cwd ?? join(dir, "bin"),
  }).exited;
}

function dataFile(name: string, bytes: number): { path: string; content: Buffer } {
  const content = randomBytes(bytes);
  const path = join(dir, name);
  writeFileSync(path, content);
  return { path, content };
}

describe("the standalone executable, alone in an empty folder, with an empty environment", () => {
  it("is the only file in its folder and prints its version", async () => {
    expect(readdirSync(join(dir, "bin"))).toEqual(["tbucket"]);
    const result = await runExe(["--version"]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout.toString()).toBe(`${version}\n`);
  });

  it("tbucket --rate inf < file gives identical bytes", async () => {
    const { path, content } = dataFile("binary.bin", 3 * 1024 * 1024 + 7);
    const result = await runExe(["--rate", "inf"], { stdinFile: path });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.equals(content)).toBe(true);
  });

  it("a fast pipe (48 MiB, read on the event loop, through 1 MiB pipes) gives identical bytes", async () => {
    const { path, content } = dataFile("long.bin", 48 * 1024 * 1024 + 5);
    const { code, stdout, stderr } = await start("sh", ["-c", `cat '${path}' | '${exe}' --rate inf | sha256sum`], { bareEnv: true, env: { TMPDIR: dir }, stdin: "close" }).exited;
    expect(stderr).toBe("");
    expect(code).toBe(0);
    expect(stdout.toString().split(" ")[0]).toBe(createHash("sha256").update(content).digest("hex"));
  });

  it("a throttled pipe keeps the bytes and the rate (timers work inside the executable)", async () => {
    const { path, content } = dataFile("throttled.bin", 300 * 1024);
    const result = await runExe(["--rate", "1mb", "--burst", "64k", path]);
    expect(result.code).toBe(0);
    expect(result.stdout.equals(content)).toBe(true);
    // Conformance: 300 KiB through b + r·T needs T >= (300 - 64) / 1024 s.
    expect(result.elapsedMs).toBeGreaterThanOrEqual(((300 - 64) / 1024) * 1000 * 0.95);
  });

  it("a bad option is a usage error, exit 2, one line", async () => {
    const result = await runExe(["--rate", "fast"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`tbucket: --rate: "fast" is not a byte rate; try "1mb", "512k/s" or "10mbit"\n`);
  });

  it("run passes the jobs' results on: 0 when all succeed, 1 when one fails, 127 when not found", async () => {
    // No PATH in the environment: the commands are named by path.
    const ok = await runExe(["run", "--rate", "100", "--count", "3", "--", "/bin/sh", "-c", "echo job"]);
    expect(ok.code).toBe(0);
    expect(ok.stdout.toString()).toBe("job\njob\njob\n");
    const failed = await runExe(["run", "--rate", "100", "--count", "2", "--", "/bin/sh", "-c", "exit 3"]);
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim().split("\n")).toHaveLength(1);
    const missing = await runExe(["run", "--rate", "100", "--count", "1", "--", "/nonexistent/command"]);
    expect(missing.code).toBe(127);
  });

  it("run substitutes items from standard input", async () => {
    const result = await runExe(["run", "--rate", "100", "--jobs", "1", "--", "/bin/echo", "item {}"], { input: "a\nb\nc\n" });
    expect(result.code).toBe(0);
    expect(result.stdout.toString()).toBe("item a\nitem b\nitem c\n");
  });

  it("simulate gives the same decisions as the npm build, within b + r·T", async () => {
    const args = ["simulate", "--rate", "5", "--burst", "10", "--arrivals", "steady 8/s for 20s", "--format", "jsonl"];
    const [standalone, npmBuild] = await Promise.all([runExe(args), runCli(args)]);
    expect(standalone.stderr).toBe("");
    expect(standalone.code).toBe(0);
    expect(standalone.stdout.toString()).toBe(npmBuild.stdout.toString());
    const events = standalone.stdout.toString().trim().split("\n").map((line) => JSON.parse(line) as { t: number; admitted: boolean });
    expect(events).toHaveLength(160);
    const admitted = events.filter((event) => event.admitted).length;
    expect(admitted).toBeGreaterThanOrEqual(100);
    expect(admitted).toBeLessThanOrEqual(10 + 5 * 20);
  });
});

describe("shared buckets from the standalone executable", () => {
  it("two pipes sharing a key on SQLite share one rate", async () => {
    const store = `sqlite:${join(dir, "buckets.db")}`;
    const first = dataFile("shared-1.bin", 160 * 1024);
    const second = dataFile("shared-2.bin", 160 * 1024);
    const args = ["--key", "ship", "--store", store, "--rate", "256k", "--burst", "32k"];
    const startedMs = performance.now();
    const [a, b] = await Promise.all([runExe([...args, first.path]), runExe([...args, second.path])]);
    const elapsedMs = performance.now() - startedMs;
    expect(a.stderr + b.stderr).toBe("");
    expect([a.code, b.code]).toEqual([0, 0]);
    expect(a.stdout.equals(first.content)).toBe(true);
    expect(b.stdout.equals(second.content)).toBe(true);
    // Together 320 KiB through one bucket: T >= (320 - 32 - one 20 ms lease each) / 256 s, about 1.09 s;
    // two private buckets would take about 0.5 s.
    expect(elapsedMs).toBeGreaterThanOrEqual(((320 - 32 - 2 * 5.12) / 256) * 1000 * 0.95);
  });

  it("carries its native part: a pipe to a pipe goes by splice(2) and 1 MiB pipes, the part written once to TMPDIR", async () => {
    const { path, content } = dataFile("spliced.bin", 8 * 1024 * 1024 + 3);
    const tmp = mkdtempSync(join(tmpdir(), "tbucket-ship-io-"));
    const pipeline = async (env: string) => {
      const script = `cat '${path}' | ${env} '${exe}' --rate inf --stats-format json | sha256sum`;
      const { code, stdout, stderr } = await start("sh", ["-c", script], { bareEnv: true, env: { TMPDIR: tmp, PATH: "/usr/bin:/bin" }, stdin: "close" }).exited;
      return { code, stdout: stdout.toString(), stderr };
    };
    try {
      const digest = createHash("sha256").update(content).digest("hex");
      const spliced = await pipeline("");
      expect(spliced.code).toBe(0);
      expect(spliced.stdout.split(" ")[0]).toBe(digest);
      expect(JSON.parse(spliced.stderr)).toMatchObject({ bytes: content.length, zeroCopy: true });
      const privateDir = join(tmp, `tbucket-${process.getuid!()}`);
      expect(readdirSync(privateDir)).toHaveLength(1);
      // The same executable, told to do without: the JavaScript path, the same bytes.
      const plain = await pipeline("TBUCKET_NATIVE=0");
      expect(plain.stdout.split(" ")[0]).toBe(digest);
      expect(JSON.parse(plain.stderr)).toMatchObject({ bytes: content.length, zeroCopy: false });
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("writes the SQLite addon once into a private folder of TMPDIR and reuses it", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "tbucket-ship-tmp-"));
    try {
      const store = `sqlite:${join(dir, "addon.db")}`;
      const args = ["--key", "addon", "--store", store, "--rate", "inf"];
      const first = await runExe(args, { input: "hello\n", env: { TMPDIR: tmp } });
      expect(first).toMatchObject({ code: 0, stderr: "" });
      expect(first.stdout.toString()).toBe("hello\n");
      const privateDir = join(tmp, `tbucket-${process.getuid!()}`);
      expect(statSync(privateDir).mode & 0o777).toBe(0o700);
      const [addon, ...others] = readdirSync(privateDir);
      expect(others).toEqual([]);
      expect(addon).toMatch(new RegExp(`^tbucket-${version.replace(/\./g, "\\.")}-[0-9a-f]{16}\\.node$`));
      const writtenMs = statSync(join(privateDir, addon!)).mtimeMs;

      const second = await runExe(args, { input: "again\n", env: { TMPDIR: tmp } });
      expect(second).toMatchObject({ code: 0, stderr: "" });
      expect(statSync(join(privateDir, addon!)).mtimeMs).toBe(writtenMs);

      // A folder others can write to is refused: someone could have planted a library there.
      chmodSync(privateDir, 0o777);
      const refused = await runExe(args, { input: "x\n", env: { TMPDIR: tmp } });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${privateDir} is not a private folder of this user`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  describe("on Redis", () => {
    let redis: RedisServer;
    beforeAll(async () => {
      redis = await startRedisServer();
    });
    afterAll(async () => {
      await redis?.stop();
    });

    it("a pipe with a key on Redis keeps the bytes", async () => {
      const { path, content } = dataFile("redis.bin", 100 * 1024);
      const result = await runExe(["--key", "ship", "--store", redis.url, "--rate", "inf", path]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout.equals(content)).toBe(true);
    });
  });
});
