// The npm package, as `npm i -g` installs it: packed, installed into a fresh
// prefix, then used as a command and as a typed library.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };

let dir: string;
let prefix: string;
let packedFiles: string[];

function run(command: string, args: string[], options: SpawnSyncOptions = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, ...options });
  return { status: result.status, stdout: result.stdout as unknown as string | Buffer, stderr: String(result.stderr) };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-npm-"));
  // Packed from a copy of what `files` may pick up, so that a standalone executable
  // built in dist/ meanwhile (or not) makes no difference: a stand-in is put there
  // on purpose, and must stay out of the package.
  const stage = join(dir, "stage");
  mkdirSync(stage);
  for (const name of ["package.json", "bin", "dist", "README.md", "LICENSE"]) {
    if (existsSync(join(root, name))) cpSync(join(root, name), join(stage, name), { recursive: true, filter: (source) => !source.endsWith("tbucket-linux-x64") });
  }
  writeFileSync(join(stage, "dist", "tbucket-linux-x64"), "stand-in for the standalone executable");
  // --ignore-scripts: "prepare" would compile again, and dist/ is built already (npm test builds first).
  const packed = run("npm", ["pack", "--json", "--ignore-scripts", "--pack-destination", dir], { cwd: stage });
  if (packed.status !== 0) throw new Error(`npm pack failed: ${packed.stderr}`);
  const [summary] = JSON.parse(String(packed.stdout)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  packedFiles = summary!.files.map((file) => file.path);

  prefix = join(dir, "prefix");
  // --ignore-scripts: better-sqlite3 would compile its addon from source here (about two
  // minutes without a prebuilt download); --version, a pipe and the library do not load it.
  const installed = run("npm", ["install", "--global", "--prefix", prefix, join(dir, summary!.filename), "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], {
    cwd: dir,
  });
  if (installed.status !== 0) throw new Error(`npm install -g failed: ${installed.stderr}`);
}, 180_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("npm pack", () => {
  it("packs the compiled library and CLI, the bin shim, README and LICENSE, nothing else", () => {
    expect(packedFiles).toEqual(
      expect.arrayContaining([
        ...["package.json", "bin/tbucket", "bin/package.json", "dist/cli.cjs", "dist/index.js", "dist/index.d.ts", "dist/cli/main.js", "README.md", "LICENSE"],
        ...["dist/http/index.js", "dist/http/index.d.ts", "dist/http/fetch.js", "dist/http/fastify.js", "dist/cjs/package.json", "dist/cjs/index.js", "dist/cjs/http/index.d.ts", "dist/cjs/http/fastify.js"],
      ]),
    );
    const unexpected = packedFiles.filter((path) => !/^(dist\/.+\.(js|d\.ts)|dist\/cli\.cjs|dist\/cjs\/package\.json|bin\/tbucket|bin\/package\.json|package\.json|README\.md|LICENSE)$/.test(path));
    expect(unexpected).toEqual([]);
    expect(packedFiles).not.toContain("dist/tbucket-linux-x64");
  });
});

describe("npm install -g of the tarball into a fresh prefix", () => {
  const tbucket = () => join(prefix, "bin", "tbucket");

  it("installs a tbucket command that prints its version", () => {
    const result = run(tbucket(), ["--version"]);
    expect(result).toMatchObject({ status: 0, stderr: "" });
    expect(result.stdout).toBe(`${version}\n`);
  });

  it("runs a pipe with exact bytes", () => {
    const input = randomBytes(1024 * 1024 + 3);
    const result = run(tbucket(), ["--rate", "inf"], { input, encoding: "buffer", maxBuffer: 16 * 1024 * 1024 });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(Buffer.compare(result.stdout as Buffer, input)).toBe(0);
  });

  it("gives the typed library: a consumer type-checks against it, and a type mistake is caught", () => {
    const consumer = join(dir, "consumer");
    mkdirSync(join(consumer, "node_modules"), { recursive: true });
    symlinkSync(join(prefix, "lib", "node_modules", "tbucket"), join(consumer, "node_modules", "tbucket"));
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "module" }));
    writeFileSync(
      join(consumer, "good.ts"),
      `import { FakeClock, LimitSet, LimitSetLimiter, type LimitSpec, type Limiter, TokenBucket, parseByteRate, parseWindowOfKind } from "tbucket";
import { rateLimit, type RateLimitMiddleware } from "tbucket/http";
const clock = new FakeClock();
const bucket = new TokenBucket({ rate: parseByteRate("1mb"), burst: 10, clock });
const ok: boolean = bucket.allowAt(clock.now(), 5);
const limit: RateLimitMiddleware = rateLimit({ rate: 50, burst: 10, policy: "queue", maxWaitMs: 2000 });
const limits: LimitSpec[] = [{ kind: "bucket", unit: "count", rate: 10, burst: 20 }, { kind: "window", unit: "count", ...parseWindowOfKind("count", "1000/h") }];
const admitted: boolean = new LimitSet(limits, { clock }).allow({ count: 1 });
const set: Limiter = new LimitSetLimiter(limits, { unit: "count", clock });
export { ok, limit, admitted, set };
`,
    );
    writeFileSync(join(consumer, "bad.ts"), `import { TokenBucket } from "tbucket";\nconst burst: string = new TokenBucket({ rate: 1, burst: 1 }).burst;\nexport { burst };\n`);
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "--typeRoots", join(root, "node_modules", "@types"), "--types", "node"];
    // One tsc run for both files (it is slow to start): the only error is the one in bad.ts.
    const checked = run(process.execPath, [tsc, ...flags, "good.ts", "bad.ts"], { cwd: consumer });
    expect(checked.status).not.toBe(0);
    expect(String(checked.stdout).trim().split("\n")).toEqual([
      expect.stringMatching(/^bad\.ts\(2,7\): error TS2322: Type 'number' is not assignable to type 'string'\.$/),
    ]);

    const imported = run(process.execPath, ["--input-type=module", "-e", `import { TokenBucket } from "tbucket"; console.log(new TokenBucket({ rate: 2, burst: 3 }).burst)`], { cwd: consumer });
    expect(imported).toMatchObject({ status: 0, stdout: "3\n", stderr: "" });
    const middleware = run(process.execPath, ["--input-type=module", "-e", `import { rateLimit } from "tbucket/http"; import fastifyLimit from "tbucket/fastify"; import { rateLimit as fetchLimit } from "tbucket/fetch"; console.log(typeof rateLimit({ rate: 1, burst: 1 }).wrap, typeof fastifyLimit, typeof fetchLimit({ rate: 1, burst: 1 }).check)`], { cwd: consumer });
    expect(middleware).toMatchObject({ status: 0, stdout: "function function function\n", stderr: "" });
  });

  // Node 20 cannot require ESM: without the CommonJS twin, a CommonJS project type-checked cleanly and then crashed at start.
  it("loads with require() in a CommonJS TypeScript project that type-checks, compiles and runs, each module once", () => {
    const consumer = join(dir, "consumer-cjs");
    mkdirSync(join(consumer, "node_modules"), { recursive: true });
    symlinkSync(join(prefix, "lib", "node_modules", "tbucket"), join(consumer, "node_modules", "tbucket"));
    symlinkSync(join(root, "node_modules", "fastify"), join(consumer, "node_modules", "fastify"));
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "commonjs" }));
    writeFileSync(
      join(consumer, "main.ts"),
      `import { TokenBucket } from "tbucket";
import { rateLimit, RequestFunctionError, type RateLimitMiddleware } from "tbucket/http";
import * as fetchLimit from "tbucket/fetch";
import fastifyLimit = require("tbucket/fastify");
const limit: RateLimitMiddleware = rateLimit({ rate: 1, burst: 1, skip: (req) => req.url === "/health" });
const edge = fetchLimit.rateLimit({ rate: 1, burst: 1, key: (request: Request) => request.headers.get("x-key") ?? undefined });
async function main(): Promise<void> {
  const first = await edge(new Request("http://localhost/", { headers: { "x-key": "a" } }));
  const second = await edge(new Request("http://localhost/", { headers: { "x-key": "a" } }));
  console.log(new TokenBucket({ rate: 2, burst: 3 }).burst, typeof limit.wrap, first, second?.status, typeof fastifyLimit.rateLimit, fetchLimit.RequestFunctionError === RequestFunctionError);
}
void main();
`,
    );
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    const flags = ["--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--skipLibCheck", "--typeRoots", join(root, "node_modules", "@types"), "--types", "node", "--outDir", "out"];
    const compiled = run(process.execPath, [tsc, ...flags, "main.ts"], { cwd: consumer });
    expect(String(compiled.stdout) + compiled.stderr).toBe("");
    expect(compiled.status).toBe(0);
    // Compiled to require() calls, as a CommonJS project's code is.
    expect(readFileSync(join(consumer, "out", "main.js"), "utf8")).toContain('require("tbucket/http")');
    const ran = run(process.execPath, ["--require", join(root, "test", "fixtures", "record-requires.cjs"), join("out", "main.js")], { cwd: consumer });
    expect(ran).toMatchObject({ status: 0, stdout: "3 function undefined 429 function true\n" });
    // The store clients load only when a store is opened.
    expect(ran.stderr).toBe('required: ["tbucket"]\n');
  });
});
