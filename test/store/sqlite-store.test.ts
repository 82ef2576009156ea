import { mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/core/clock.js";
import { StoreError } from "../../src/store/bucket-store.js";
import { SQLITE_SCHEMA_VERSION, SqliteStore } from "../../src/store/sqlite-store.js";

/** Where a descriptor points, or "" for one closed meanwhile. */
function readlinkSafe(link: string): string {
  try {
    return readlinkSync(link);
  } catch {
    return "";
  }
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "tbucket-sqlite-"));
}

describe("SqliteStore: keys made per client (expireWhenFull)", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("sweeps those full again for the margin when another is made, and keeps the rest", async () => {
    const clock = new FakeClock();
    clock.set(1_700_000_000_000);
    const store = await SqliteStore.open(join(dir, "buckets.db"), { clock, fullKeyMarginMs: 1000 });
    const perClient = { expireWhenFull: true };
    await store.configure("p:down:10.0.0.1", { rate: 10, burst: 10, kind: "bytes" }, perClient);
    await store.take("p:down:10.0.0.1", 10);
    await store.configure("p:down:10.0.0.2", { rate: 1, burst: 10, kind: "bytes" }, perClient);
    await store.take("p:down:10.0.0.2", 10);
    await store.configure("p:down:free", { rate: Infinity, burst: 10, kind: "bytes" }, perClient);
    await store.configure("p:down:paused", { rate: 10, burst: 10, kind: "bytes" }, perClient);
    await store.take("p:down:paused", 5);
    await store.configure("p:down:paused", { rate: 0, burst: 10, kind: "bytes" }, perClient);
    await store.configure("set", { rate: 10, burst: 10, kind: "bytes" });
    // 10.0.0.1 is full after 1 s, then the margin; 10.0.0.2 needs 10 s; paused never fills; "set" was set by a user.
    await clock.advance(2500);
    await store.configure("p:down:10.0.0.3", { rate: 10, burst: 10, kind: "bytes" }, perClient);
    expect((await store.list()).map((state) => state.key)).toEqual(["p:down:10.0.0.2", "p:down:10.0.0.3", "p:down:paused", "set"]);
    // At most one sweep a margin.
    await clock.advance(500);
    await store.configure("p:down:10.0.0.4", { rate: 10, burst: 10, kind: "bytes" }, perClient);
    expect((await store.list()).length).toBe(5);
    await clock.advance(20_000);
    await store.configure("p:down:10.0.0.5", { rate: 10, burst: 10, kind: "bytes" }, perClient);
    expect((await store.list()).map((state) => state.key)).toEqual(["p:down:10.0.0.5", "p:down:paused", "set"]);
    await store.close();
  });

  it("says the store is lost when its file is deleted or replaced while in use (the buckets would silently stop being shared)", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path, { fileCheckMs: 0 });
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    rmSync(path);
    const error = await store.take("k", 1).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(StoreError);
    expect(error).toMatchObject({ failure: "lost", message: `store sqlite:${path}: the file was deleted while in use, so its buckets are no longer shared` });
    await store.close();
    const other = await SqliteStore.open(path, { fileCheckMs: 0 });
    await other.configure("k", { rate: 10, burst: 10, kind: "count" });
    const first = await SqliteStore.open(path, { fileCheckMs: 0 });
    rmSync(path);
    await (await SqliteStore.open(path)).close();
    await expect(first.read("k")).rejects.toThrow("the file was replaced while in use");
    await first.close();
    await other.close();
  });

  // The file made again at the path (by `tbucket key set`, or any other process) is the one shared now: a proxy said 503 until restarted.
  it("opens the new file at the path once it has said the old one was lost, and answers from it", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path, { fileCheckMs: 0 });
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    rmSync(path);
    await expect(store.take("k", 0)).rejects.toMatchObject({ failure: "lost" });
    const other = await SqliteStore.open(path);
    await other.configure("k", { rate: 5, burst: 3, kind: "count" });
    await expect(store.take("k", 0)).rejects.toThrow("the file was replaced while in use");
    expect(await store.take("k", 3)).toMatchObject({ ok: true });
    expect(await other.read("k")).toMatchObject({ rate: 5, burst: 3 });
    expect((await other.read("k"))!.tokens).toBeLessThan(1);
    await other.close();
    await store.close();
  });

  it("keeps no file open for a new file at the path that is no database, and says what it is", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path, { fileCheckMs: 0 });
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    // As `rm buckets.db*` does: a write-ahead log left beside the new file would be read as its content.
    for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
    writeFileSync(path, "not a database, but long enough to be read as one's header".repeat(100));
    await expect(store.take("k", 0)).rejects.toMatchObject({ failure: "lost" });
    const openOnPath = (): number => readdirSync("/proc/self/fd").filter((fd) => readlinkSafe(`/proc/self/fd/${fd}`) === path).length;
    const before = openOnPath();
    for (let i = 0; i < 5; i++) await expect(store.take("k", 0)).rejects.toMatchObject({ failure: "corrupt" });
    expect(openOnPath()).toBe(before);
    await store.close();
  });

  // A check failed was not repeated for a second: a probe in that second found the file "back" while its path named none.
  it("looks again at every call while the path names another file or none, and answers again once the file is put back", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path);
    await store.configure("k", { rate: 10, burst: 10, kind: "count" });
    renameSync(path, `${path}.away`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await expect(store.take("k", 0)).rejects.toMatchObject({ failure: "lost" });
    await expect(store.take("k", 0)).rejects.toMatchObject({ failure: "lost" });
    renameSync(`${path}.away`, path);
    expect(await store.take("k", 1)).toMatchObject({ ok: true });
    await store.close();
  });

  it("adds its column to a file made before it, which an older release goes on using", async () => {
    const path = join(dir, "old.db");
    const old = new Database(path);
    old.exec("CREATE TABLE tbucket_schema (version INTEGER NOT NULL); INSERT INTO tbucket_schema VALUES (1)");
    old.exec("CREATE TABLE buckets (key TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL, rate REAL NOT NULL, burst REAL NOT NULL, tokens REAL NOT NULL, last_ms REAL NOT NULL)");
    old.prepare("INSERT INTO buckets VALUES ('kept', 'bytes', 10, 20, 20, 0)").run();
    old.close();
    const store = await SqliteStore.open(path);
    expect(await store.read("kept")).toMatchObject({ rate: 10, burst: 20 });
    expect((await store.read("kept"))?.expiresWhenFull).toBeUndefined();
    await store.close();
    const reopened = new Database(path);
    expect(reopened.prepare("SELECT max(version) AS version FROM tbucket_schema").get()).toEqual({ version: SQLITE_SCHEMA_VERSION });
    reopened.close();
  });
});

describe("SqliteStore: the file", () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("loads SQLite's addon from the nativeBinding option, asking a function only when a file opens (no global)", async () => {
    const addon = createRequire(import.meta.url).resolve("better-sqlite3/build/Release/better_sqlite3.node");
    let asked = 0;
    const store = await SqliteStore.open(join(dir, "b.db"), { nativeBinding: () => (asked++, addon) });
    expect(asked).toBe(1);
    await store.configure("k", { rate: 1, burst: 1, kind: "count" });
    await store.close();
    expect("TBUCKET_SQLITE_NATIVE_BINDING" in globalThis).toBe(false);
    // A wrong path fails to open, in one line: the option is what is used.
    const error = await SqliteStore.open(join(dir, "c.db"), { nativeBinding: join(dir, "missing.node") }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).not.toContain("\n");
  });

  it("creates its directory, uses WAL and records the schema version", async () => {
    const path = join(dir, "state", "tbucket", "buckets.db");
    const store = await SqliteStore.open(path);
    await store.configure("k", { rate: 1, burst: 1, kind: "count" });
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.prepare("SELECT version FROM tbucket_schema").all()).toEqual([{ version: SQLITE_SCHEMA_VERSION }]);
    db.close();
  });

  it("keeps one bucket for two connections: each take sees the other's", async () => {
    const path = join(dir, "buckets.db");
    const clock = new FakeClock(1_700_000_000_000);
    const first = await SqliteStore.open(path, { clock });
    const second = await SqliteStore.open(path, { clock });
    await first.configure("k", { rate: 10, burst: 2, kind: "count" });
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) waits.push((await (i % 2 ? first : second).take("k", 1))!.waitMs);
    expect(waits).toEqual([0, 0, 100, 200, 300, 400]);
    await first.close();
    await second.close();
  });

  it("refuses a file from a newer release, naming both schema versions", async () => {
    const path = join(dir, "buckets.db");
    (await SqliteStore.open(path)).close();
    const db = new Database(path);
    db.prepare("INSERT INTO tbucket_schema (version) VALUES (99)").run();
    db.close();
    await expect(SqliteStore.open(path)).rejects.toMatchObject({
      message: `store sqlite:${path}: written by a newer tbucket (schema 99, this one knows ${SQLITE_SCHEMA_VERSION}); upgrade tbucket`,
      failure: "newer-schema",
      storeUrl: `sqlite:${path}`,
    });
  });

  it("takes a file of the release before limit sets (schema 1) as it is: its buckets read and take as before, and as sets of one", async () => {
    const path = join(dir, "buckets.db");
    const db = new Database(path);
    db.exec(`CREATE TABLE tbucket_schema (version INTEGER NOT NULL); INSERT INTO tbucket_schema VALUES (1);
      CREATE TABLE buckets (key TEXT PRIMARY KEY NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('bytes', 'count')),
        rate REAL NOT NULL, burst REAL NOT NULL, tokens REAL NOT NULL, last_ms REAL NOT NULL);
      INSERT INTO buckets VALUES ('old', 'count', 10, 5, 2, 1000);`);
    db.close();
    const clock = new FakeClock(1000);
    const store = await SqliteStore.open(path, { clock });
    expect(await store.read("old")).toEqual({ key: "old", rate: 10, burst: 5, kind: "count", tokens: 2, updatedAtMs: 1000 });
    expect(await store.readSet("old")).toEqual({ key: "old", limits: [{ kind: "bucket", unit: "count", rate: 10, burst: 5, level: 2 }], updatedAtMs: 1000 });
    expect(await store.take("old", 3)).toMatchObject({ ok: true, waitMs: 100, tokens: -1 });
    await store.close();
    const after = new Database(path, { readonly: true });
    expect(after.prepare("SELECT max(version) AS v FROM tbucket_schema").get()).toEqual({ v: SQLITE_SCHEMA_VERSION });
    after.close();
  });

  it("keeps a set in one row, its windows' records pruned as they slide and its dead holders dropped", async () => {
    const path = join(dir, "buckets.db");
    const clock = new FakeClock(1_700_000_000_000);
    const store = await SqliteStore.open(path, { clock });
    await store.configureSet("api", [
      { kind: "window", unit: "count", n: 4, windowMs: 1000 },
      { kind: "concurrency", n: 50 },
    ]);
    const db = new Database(path, { readonly: true });
    const row = () => db.prepare<[], { state: string; holders: string }>("SELECT state, holders FROM limit_sets WHERE key = 'api'").get()!;
    let most = 0;
    for (let i = 0; i < 60; i++) {
      clock.set(1_700_000_000_000 + i * 137);
      await store.takeSet("api", { count: 1 }, { maxWaitMs: 0, leaseMs: 500 });
      most = Math.max(most, (JSON.parse(row().state) as { limits: Array<{ times?: number[] }> }).limits[0]!.times!.length);
      expect((JSON.parse(row().holders) as unknown[][])[1]!.length).toBeLessThanOrEqual(4);
    }
    expect(most).toBe(4);
    expect(await store.list()).toEqual([]);
    db.close();
    await store.close();
  });

  it("says a corrupted file is not a tbucket database, in one line", async () => {
    const path = join(dir, "buckets.db");
    writeFileSync(path, "this is not sqlite, just some text that is long enough to be read as a header ".repeat(20));
    const error = await SqliteStore.open(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(new RegExp(`^store sqlite:${path}: not a tbucket database, or corrupted \\(.*\\); move the file away`));
    expect((error as Error).message).not.toContain("\n");
  });

  it("says a path it cannot create cannot be opened", async () => {
    const blocker = join(dir, "file");
    writeFileSync(blocker, "");
    const error = await SqliteStore.open(join(blocker, "buckets.db")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/^store sqlite:.*file\/buckets\.db: cannot (open|write) the file/);
  });

  it("says a directory given as the store is a directory, naming a file to use", async () => {
    await expect(SqliteStore.open(dir)).rejects.toMatchObject({
      message: `store sqlite:${dir}: is a directory; name a file in it, as in sqlite:${join(dir, "buckets.db")}`,
      failure: "not-a-store",
    });
  });

  it("says a device given as the store is not a regular file (it said only: disk I/O error)", async () => {
    await expect(SqliteStore.open("/dev/null")).rejects.toMatchObject({
      message: "store sqlite:/dev/null: not a regular file (a device, a pipe or a socket); name a file, as in sqlite:/path/buckets.db",
      failure: "not-a-store",
    });
  });

  it("fails, not spins, on a directory it cannot create (Node 20's recursive mkdirSync loops under /proc)", async () => {
    await expect(SqliteStore.open("/proc/tbucket-nope/buckets.db")).rejects.toThrow(
      /^store sqlite:\/proc\/tbucket-nope\/buckets\.db: cannot open the file \(ENOENT/,
    );
  });

  // SQLite's wait holds the whole process still: a proxy probing a locked file froze for the busy timeout each time.
  it("once a file was found locked, waits for it only briefly until it answers, then the whole busy timeout again", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path, { busyTimeoutMs: 1000 });
    await store.configure("k", { rate: 1, burst: 1, kind: "count" });
    const holder = new Database(path);
    const timed = async () => {
      const startMs = performance.now();
      const answer = await store.take("k", 0).catch((error: unknown) => error);
      return { ms: performance.now() - startMs, failure: (answer as StoreError).failure };
    };
    try {
      holder.exec("BEGIN EXCLUSIVE");
      const first = await timed();
      expect(first.failure).toBe("locked");
      expect(first.ms).toBeGreaterThanOrEqual(900);
      const again = await timed();
      expect(again.failure).toBe("locked");
      expect(again.ms).toBeLessThan(500);
      holder.exec("COMMIT");
      expect((await timed()).failure).toBeUndefined();
      holder.exec("BEGIN EXCLUSIVE");
      expect((await timed()).ms).toBeGreaterThanOrEqual(900);
    } finally {
      if (holder.inTransaction) holder.exec("ROLLBACK");
      holder.close();
      await store.close();
    }
  });

  it("opens a new file while another process holds a write in it: SQLite's answer to the switch to WAL is busy at once, so it is tried again", async () => {
    // Seen as `run` and `key show` started together on a new store, one failing in about 20 ms.
    const path = join(dir, "buckets.db");
    const holderScript = `
      const db = new (require(${JSON.stringify(createRequire(import.meta.url).resolve("better-sqlite3"))}))(process.argv[1]);
      db.exec("CREATE TABLE held (x)"); db.exec("BEGIN IMMEDIATE"); db.exec("INSERT INTO held VALUES (1)");
      process.stdout.write("held\\n");
      setTimeout(() => { db.exec("COMMIT"); db.close(); }, 400);`;
    const holder = spawn(process.execPath, ["-e", holderScript, path], { stdio: ["ignore", "pipe", "inherit"] });
    await once(holder.stdout!, "data");
    const startedMs = performance.now();
    const store = await SqliteStore.open(path, { busyTimeoutMs: 5000 });
    try {
      // Open once the other process let go (400 ms), not refused at once.
      expect(performance.now() - startedMs).toBeGreaterThan(250);
      await store.configure("k", { rate: 1, burst: 1, kind: "count" });
      expect(await store.take("k", 1)).toMatchObject({ ok: true });
    } finally {
      await store.close();
      await once(holder, "exit");
    }
  });

  it("says a file locked by another program is busy, after the busy timeout", async () => {
    const path = join(dir, "buckets.db");
    const store = await SqliteStore.open(path, { busyTimeoutMs: 100 });
    await store.configure("k", { rate: 1, burst: 1, kind: "count" });
    const holder = new Database(path);
    holder.exec("BEGIN EXCLUSIVE");
    try {
      await expect(store.take("k", 1)).rejects.toMatchObject({
        message: `store sqlite:${path}: the file is locked by another program (still busy after 0.1 s); try again`,
        failure: "locked",
      });
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
      await store.close();
    }
  });
});
