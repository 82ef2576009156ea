import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startCli } from "../helpers/cli.js";
import { startRedisServer } from "../helpers/redis-server.js";

let dir: string;
let store: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tbucket-shared-errors-"));
  // Whatever a command falls back to, it is never the user's own store.
  process.env.XDG_STATE_HOME = join(dir, "state");
  process.env.TBUCKET_STORE = "";
  store = `sqlite:${join(dir, "buckets.db")}`;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Bytes that show any reordering, duplication or loss. */
function patterned(bytes: number): Buffer {
  const buffer = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i += 4) buffer.writeUInt32BE(i / 4, i);
  return buffer;
}

describe("--key settings", () => {
  it("refuses a key never configured when --rate is missing (usage, exit 2)", async () => {
    const result = await runCli(["--key", "fresh", "--store", store], { input: "data" });
    expect(result.stderr).toBe(
      `tbucket: --key: "fresh" is not set in ${store}; give its rate once (--key fresh --rate 1mb) or run: tbucket key set fresh --rate 1mb\n`,
    );
    expect([result.code, result.stdout.length]).toEqual([2, 0]);
  });

  it("uses the stored settings when --rate is not given", async () => {
    expect((await runCli(["key", "set", "stored", "--store", store, "--rate", "100k", "--burst", "20k"])).code).toBe(0);
    const input = patterned(4096);
    const result = await runCli(["--key", "stored", "--store", store, "--stats-format", "json"], { input });
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
    expect(JSON.parse(result.stderr)).toMatchObject({ rate: 102400, burst: 20480 });
  });

  it("sets the key from --rate and --burst given with --key", async () => {
    const result = await runCli(["--key", "given", "--store", store, "--rate", "3mb", "--burst", "1mb"], { input: "x" });
    expect(result.code).toBe(0);
    const show = await runCli(["key", "show", "given", "--store", store, "--json"]);
    expect(JSON.parse(show.stdout.toString())).toMatchObject({ kind: "bytes", rate: 3 * 1024 * 1024, burst: 1024 * 1024 });
  });

  it("refuses a key holding the other kind of rate", async () => {
    await runCli(["key", "set", "launches", "--store", store, "--rate", "5/s"]);
    const result = await runCli(["--key", "launches", "--store", store], { input: "x" });
    expect(result.stderr).toBe(
      `tbucket: --key: "launches" holds a count rate (5/s, burst 1), and this needs a byte rate; use another key, or give --rate to reset it\n`,
    );
    expect(result.code).toBe(2);
  });

  it("takes the store from TBUCKET_STORE, and refuses a bad one naming it", async () => {
    await runCli(["key", "set", "env", "--store", store, "--rate", "1mb"]);
    const ok = await runCli(["--key", "env"], { input: "abc", env: { TBUCKET_STORE: store } });
    expect([ok.code, ok.stdout.toString(), ok.stderr]).toEqual([0, "abc", ""]);
    const bad = await runCli(["--key", "env", "--rate", "1mb"], { input: "abc", env: { TBUCKET_STORE: "mysql://x" } });
    expect(bad.stderr).toBe(`tbucket: TBUCKET_STORE: "mysql://x" is not a store; try "sqlite:", "sqlite:/path/buckets.db" or "redis://host:6379"\n`);
    expect(bad.code).toBe(2);
  });
});

describe("Redis addresses", () => {
  // `--store redis://HOST:PORT/16` exited 0 writing to database 0; `/x` crashed with ioredis's ReplyError stack trace.
  it("a database the server does not have: one line, exit 1, nothing written", async () => {
    const server = await startRedisServer();
    try {
      const [pipe, set] = await Promise.all([
        runCli(["--key", "k", "--store", `${server.url}/16`, "--rate", "1mb"], { input: "x" }),
        runCli(["key", "set", "k", "--store", `${server.url}/16`, "--rate", "1mb"]),
      ]);
      const message = `tbucket: store ${server.url}/16: Redis has no database 16 (ERR DB index is out of range); use one the server has: 0 to its "databases" setting less 1 (0 to 15 by default)\n`;
      expect([pipe.code, pipe.stdout.toString(), pipe.stderr]).toEqual([1, "", message]);
      expect([set.code, set.stderr]).toEqual([1, message]);
      const list = await runCli(["key", "list", "--store", server.url, "--json"]);
      expect(JSON.parse(list.stdout.toString())).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  it.each([
    ["/x", `"x" is not a database number; write a whole number from 0 after the host, as in redis://127.0.0.1:6379/0`],
    ["/-1", `"-1" is not a database number; write a whole number from 0 after the host, as in redis://127.0.0.1:6379/0`],
    ["/1.5", `"1.5" is not a database number; write a whole number from 0 after the host, as in redis://127.0.0.1:6379/0`],
    ["/99999999999", `database 99999999999 is out of range; Redis numbers its databases from 0 (16 of them by default: 0 to 15), as in redis://127.0.0.1:6379/0`],
    ["/2?db=3", `options after "?" are not read; write the address alone, as in redis://:PASSWORD@host:6379/0`],
  ])("a database path %s: a usage error naming it, exit 2", async (path, why) => {
    const store = `redis://127.0.0.1:6379${path}`;
    const result = await runCli(["--key", "k", "--store", store, "--rate", "1mb"], { input: "x" });
    expect([result.code, result.stdout.toString(), result.stderr]).toEqual([2, "", `tbucket: --store: "${store}": ${why}\n`]);
  });

  it("a port out of range, and a SQLite path with options: usage errors, exit 2", async () => {
    const port = await runCli(["key", "list", "--store", "redis://127.0.0.1:99999"]);
    expect([port.code, port.stderr]).toEqual([2, `tbucket: --store: "redis://127.0.0.1:99999": the port "99999" is not a number from 1 to 65535; write one, as in redis://127.0.0.1:6379\n`]);
    const options = await runCli(["key", "list", "--store", `sqlite:${dir}/x.db?mode=ro`]);
    expect([options.code, options.stderr]).toEqual([2, `tbucket: --store: "sqlite:${dir}/x.db?mode=ro": options after "?" are not read; name the file alone, as in sqlite:${dir}/x.db\n`]);
  });

  it("a directory as the SQLite store: one line naming a file in it, exit 1", async () => {
    const result = await runCli(["key", "list", "--store", `sqlite:${dir}`]);
    expect([result.code, result.stderr]).toEqual([1, `tbucket: store sqlite:${dir}: is a directory; name a file in it, as in sqlite:${join(dir, "buckets.db")}\n`]);
  });

  // These said "cannot reach Redis ... check the address".
  it("a password refused or missing: says so, and how to give it, exit 1", async () => {
    const server = await startRedisServer(["--requirepass", "s3cret"]);
    try {
      const host = `127.0.0.1:${server.port}`;
      const forms = "redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port for an ACL user";
      const [wrong, missing, right] = await Promise.all([
        runCli(["--key", "k", "--store", `redis://:wrong@${host}`, "--rate", "1mb"], { input: "x" }),
        runCli(["key", "list", "--store", `redis://${host}`]),
        runCli(["--key", "k", "--store", `redis://:s3cret@${host}`, "--rate", "1mb"], { input: "x" }),
      ]);
      expect([wrong.code, wrong.stdout.toString(), wrong.stderr]).toEqual([
        1,
        "",
        `tbucket: store redis://:***@${host}: Redis refused the password (WRONGPASS invalid username-password pair or user is disabled); check the password in the address: ${forms}\n`,
      ]);
      expect([missing.code, missing.stderr]).toEqual([1, `tbucket: store redis://${host}: Redis asks for a password; give it in the address: ${forms}\n`]);
      expect([right.code, right.stdout.toString(), right.stderr]).toEqual([0, "x", ""]);
    } finally {
      await server.stop();
    }
  });
});

describe("when the store fails", () => {
  it("a corrupted SQLite file: one line, exit 1", async () => {
    const path = join(dir, "corrupt.db");
    writeFileSync(path, "not a database at all; ".repeat(100));
    const result = await runCli(["--key", "k", "--store", `sqlite:${path}`, "--rate", "1mb"], { input: "x" });
    expect(result.stderr).toMatch(new RegExp(`^tbucket: store sqlite:${path}: not a tbucket database, or corrupted \\(.*\\); move the file away \\(a new one is made\\), or use another --store sqlite:<file>\\n$`));
    expect([result.code, result.stdout.length]).toEqual([1, 0]);
  });

  it("Redis unreachable at the start: one line, exit 1", async () => {
    const result = await runCli(["--key", "k", "--store", "redis://127.0.0.1:1", "--rate", "1mb"], { input: "x" });
    expect(result.stderr).toBe(
      "tbucket: store redis://127.0.0.1:1: cannot reach Redis (connect ECONNREFUSED 127.0.0.1:1); check the address and that Redis runs there, or use --on-store-error local\n",
    );
    expect([result.code, result.stdout.length]).toEqual([1, 0]);
  });

  it("Redis unreachable with --on-store-error local: a warning, then a private bucket", async () => {
    const input = patterned(10_000);
    const result = await runCli(["--key", "k", "--store", "redis://127.0.0.1:1", "--rate", "1mb", "--on-store-error", "local"], { input });
    expect(result.stderr).toBe(
      "tbucket: warning: store redis://127.0.0.1:1: cannot reach Redis (connect ECONNREFUSED 127.0.0.1:1); check the address and that Redis runs there; going on with a private bucket at 1mib/s, burst 104857\n",
    );
    expect(result.code).toBe(0);
    expect(result.stdout.equals(input)).toBe(true);
  });

  it("Redis lost mid-run and not back within --store-timeout: the pipe stops with what it wrote intact, one line saying for how long, exit 1", async () => {
    const server = await startRedisServer();
    try {
      const input = patterned(4 * 1024 * 1024);
      const pipe = startCli(["--key", "lost", "--store", server.url, "--rate", "256k", "--store-timeout", "1s"], { input });
      await pipe.waitForBytes(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.stop();
      const stoppedMs = performance.now();
      const result = await pipe.exited;
      expect(performance.now() - stoppedMs).toBeGreaterThanOrEqual(1000);
      expect(result.stderr).toMatch(
        new RegExp(
          `^tbucket: store ${server.url.replace(/\./g, "\\.")}: lost Redis \\(.*\\); away for 1\\.\\d s; stopped, and what was written so far is intact; rerun, or add --on-store-error local to go on with a private bucket\\n$`,
        ),
      );
      expect(result.code).toBe(1);
      expect(result.stdout.length).toBeGreaterThan(0);
      expect(result.stdout.length).toBeLessThan(input.length);
      expect(result.stdout.equals(input.subarray(0, result.stdout.length))).toBe(true);
    } finally {
      await server.stop();
    }
  });

  // The client gave up after about 3 s of retries, and nothing ever reconnected.
  it("Redis killed mid-run and started again 5 s later (empty): the pipe waits, then goes on from the shared key, and delivers every byte, silently", async () => {
    const server = await startRedisServer();
    try {
      const input = patterned(2 * 1024 * 1024);
      const pipe = startCli(["--key", "back", "--store", server.url, "--rate", "256k", "--burst", "64k"], { input });
      await pipe.waitForBytes(1);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await server.stop("SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, 5000));
      await server.start();
      const result = await pipe.exited;
      expect([result.code, result.stderr]).toEqual([0, ""]);
      expect(result.stdout.equals(input)).toBe(true);
      // The key was made again in the empty Redis, with the pipe's settings, and the pipe took from it.
      const { RedisStore } = await import("../../src/store/redis-store.js");
      const store = await RedisStore.open(server.url);
      expect(await store.read("back")).toMatchObject({ rate: 256 * 1024, burst: 64 * 1024, kind: "bytes" });
      await store.close();
    } finally {
      await server.stop();
    }
  }, 30_000);

  // A lost store during `run` used the pipe's wording ("what was written so far") and skipped --stats.
  it("Redis lost mid-run and not back within --store-timeout: run stops launching, prints its --stats, then one line about launches, exit 1", async () => {
    const server = await startRedisServer();
    try {
      const run = startCli(["run", "--key", "lost-run", "--store", server.url, "--rate", "20/s", "--count", "1000", "--store-timeout", "500ms", "--stats-format", "json", "--", "echo", "hi"]);
      await run.waitForBytes(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.stop();
      const result = await run.exited;
      const [statsLine, message, ...rest] = result.stderr.split("\n");
      expect(message).toMatch(
        new RegExp(
          `^tbucket: store ${server.url.replace(/\./g, "\\.")}: lost Redis \\(.*\\); away for \\d+ ms; stopped launching, and the jobs already started ran to their end; rerun, or add --on-store-error local to go on with a private bucket$`,
        ),
      );
      expect(rest).toEqual([""]);
      const stats = JSON.parse(statsLine!) as { started: number; succeeded: number; launches: number; rate: number };
      const launched = result.stdout.toString().split("\n").filter(Boolean).length;
      expect(stats).toMatchObject({ started: launched, succeeded: launched, launches: launched, rate: 20 });
      expect(launched).toBeGreaterThan(0);
      expect(launched).toBeLessThan(1000);
      expect(result.code).toBe(1);
    } finally {
      await server.stop();
    }
  });

  it("a SQLite file locked by another program past the busy timeout mid-run: the pipe waits, then goes on from the file once it is free, silently", async () => {
    const path = join(dir, "locked.db");
    const input = patterned(1024 * 1024);
    const pipe = startCli(["--key", "locked", "--store", `sqlite:${path}`, "--rate", "256k"], { input });
    await pipe.waitForBytes(1);
    const { default: Database } = await import("better-sqlite3");
    const holder = new Database(path);
    try {
      holder.exec("BEGIN EXCLUSIVE");
      // Past the 5 s busy timeout, so that the store is found locked and asked again.
      await new Promise((resolve) => setTimeout(resolve, 6500));
      holder.exec("COMMIT");
      const result = await pipe.exited;
      expect([result.code, result.stderr]).toEqual([0, ""]);
      expect(result.stdout.equals(input)).toBe(true);
    } finally {
      if (holder.inTransaction) holder.exec("ROLLBACK");
      holder.close();
    }
  }, 30_000);

  // A private bucket was for good: the store was never asked again.
  it("Redis lost mid-run with --on-store-error local and back 3 s later: a private bucket meanwhile, then the shared key again, each said in one line", async () => {
    const server = await startRedisServer();
    try {
      const input = patterned(2 * 1024 * 1024);
      const pipe = startCli(["--key", "again", "--store", server.url, "--rate", "256k", "--on-store-error", "local"], { input });
      await pipe.waitForBytes(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.stop("SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await server.start();
      const result = await pipe.exited;
      const shown = server.url.replace(/\./g, "\\.");
      expect(result.stderr).toMatch(
        new RegExp(
          `^tbucket: warning: store ${shown}: lost Redis \\(.*\\); going on with a private bucket at 256kib/s, burst 26214 until it is back\ntbucket: store ${shown}: back after \\d\\.\\d s; key "again" is shared again\n$`,
        ),
      );
      expect(result.code).toBe(0);
      expect(result.stdout.equals(input)).toBe(true);
      const { RedisStore } = await import("../../src/store/redis-store.js");
      const store = await RedisStore.open(server.url);
      // Made again in the restarted (empty) Redis: the pipe went back to it.
      expect(await store.read("again")).toMatchObject({ rate: 256 * 1024, burst: 26214, kind: "bytes" });
      await store.close();
    } finally {
      await server.stop();
    }
  }, 30_000);

  // These were "lost Redis (...); ... rerun": the server was there, and running again could not help.
  it("a Redis replica (READONLY) at the start: one line naming what the server said and pointing at the primary, exit 1", async () => {
    const primary = await startRedisServer();
    const replica = await startRedisServer(["--replicaof", "127.0.0.1", String(primary.port)]);
    try {
      const result = await runCli(["--key", "k", "--store", replica.url, "--rate", "1mb"], { input: "x" });
      expect(result.stderr).toBe(
        `tbucket: store ${replica.url}: Redis is a read-only replica and refused the write (READONLY You can't write against a read only replica); point the address at the primary\n`,
      );
      expect([result.code, result.stdout.length]).toEqual([1, 0]);
    } finally {
      await replica.stop();
      await primary.stop();
    }
  });

  it("Redis out of memory mid-run (OOM under noeviction): the pipe waits --store-timeout, then one line naming it and what frees it, exit 1", async () => {
    const server = await startRedisServer(["--maxmemory-policy", "noeviction"]);
    const { Redis } = await import("ioredis");
    const admin = new Redis(server.url);
    try {
      const input = patterned(1024 * 1024);
      const pipe = startCli(["--key", "full", "--store", server.url, "--rate", "256k", "--store-timeout", "500ms"], { input });
      await pipe.waitForBytes(1);
      await admin.config("SET", "maxmemory", "1");
      const result = await pipe.exited;
      expect(result.stderr).toMatch(
        new RegExp(
          `^tbucket: store ${server.url.replace(/\./g, "\\.")}: Redis is out of memory and refused the write \\(OOM [^)]*\\); free memory on it, raise its maxmemory, or choose a maxmemory-policy that evicts; away for \\d+ ms; stopped, and what was written so far is intact; or add --on-store-error local to go on with a private bucket\\n$`,
        ),
      );
      expect(result.code).toBe(1);
      expect(result.stdout.equals(input.subarray(0, result.stdout.length))).toBe(true);
    } finally {
      await admin.quit();
      await server.stop();
    }
  });

  it("Redis lost mid-run with --on-store-error local: warns once and finishes on a private bucket", async () => {
    const server = await startRedisServer();
    try {
      const input = patterned(640 * 1024);
      const pipe = startCli(["--key", "lost", "--store", server.url, "--rate", "256k", "--on-store-error", "local"], { input });
      await pipe.waitForBytes(1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.stop();
      const result = await pipe.exited;
      expect(result.stderr).toMatch(/^tbucket: warning: store redis:\/\/127\.0\.0\.1:\d+: lost Redis \(.*\); going on with a private bucket at 256kib\/s, burst 26214 until it is back\n$/);
      expect(result.code).toBe(0);
      expect(result.stdout.equals(input)).toBe(true);
    } finally {
      await server.stop();
    }
  });
});

