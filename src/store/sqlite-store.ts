import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import type BetterSqlite3 from "better-sqlite3";
import type { Clock } from "../core/clock.js";
import type { RateKind } from "../core/units.js";
import {
  type BucketConfig,
  type BucketState,
  type BucketStore,
  checkCancel,
  checkConfig,
  checkTake,
  type ConfigureOptions,
  FULL_KEY_MARGIN_MS,
  StoreError,
  type StoreFailure,
  type StoreReservation,
  type TakeOptions,
  type TakeResult,
} from "./bucket-store.js";
import { cancelAt, configureAt, type StoredBucket, takeAt } from "./bucket-math.js";
import { checkLimitSpecs, type Costs, type LimitSpec } from "../core/limit-spec.js";
import {
  checkLease,
  checkSetReservation,
  checkSetTake,
  heldAsSetError,
  type LimitSetStore,
  type SetReservation,
  type SetState,
  type SetTakeOptions,
  type SetTakeResult,
} from "./limit-set-store.js";
import { stateOf, wallClock } from "./memory-store.js";
import {
  bucketOfSet,
  cancelSetAt,
  configureSetAt,
  fullAtMs,
  releaseSetAt,
  renewSetAt,
  setOfBucket,
  setStateOf,
  settleSetAt,
  type StoredSet,
  takeSetAt,
} from "./set-math.js";
import type { ClassSpec } from "../core/class-spec.js";
import { classesError, type ClassTakeResult, configureClassesAt, type StoredClasses, takeClassAt } from "./class-math.js";

/**
 * The schema this release writes; a file with a higher version came from a
 * newer tbucket. 2: limit sets (the limit_sets table), which a release
 * before them would not see, so it must refuse the file rather than make a
 * one-bucket key of the same name beside a set.
 */
export const SQLITE_SCHEMA_VERSION = 2;

export interface SqliteStoreOptions {
  /** How the user named the store, for messages; `sqlite:<path>` by default. */
  url?: string;
  /** How long a take waits for another process's transaction before giving up. */
  busyTimeoutMs?: number;
  /** The store's clock: wall-clock ms, shared by every process on the machine. */
  clock?: Clock;
  /**
   * Where better-sqlite3's compiled addon is, when it is not beside the
   * package (the standalone executable carries its own). A function is asked
   * only when a file is opened, so that it may write the addon out then.
   */
  nativeBinding?: string | (() => string);
  /** How long a key made with `expireWhenFull` stays once full (tests shorten it). */
  fullKeyMarginMs?: number;
  /** How often to check that the path still names the file opened (default 1 s; tests use 0). */
  fileCheckMs?: number;
}

interface Row {
  key: string;
  kind: RateKind;
  rate: number;
  burst: number;
  tokens: number;
  last_ms: number;
}

interface MarkedRow extends Row {
  expire_when_full: number;
}

/** A key of any set other than one bucket counting bytes or counts: its limits, their state and the slots' holders, as JSON. */
interface SetRow {
  key: string;
  limits: string;
  state: string;
  holders: string;
  /** When the key is as a new one would be (fullAtMs): a key made with expireWhenFull may be swept from then on. */
  full_at_ms: number;
  expire_when_full: number;
  /** The classes sharing the key's rate (StoredClasses as JSON), or null. */
  classes: string | null;
}

/** A key as a set step finds it, in either table, and whether it was made with expireWhenFull. */
interface FoundSet {
  stored: StoredSet;
  marked: boolean;
}

/**
 * Buckets in one SQLite file, shared by the processes of one machine. WAL
 * lets readers go on while one process writes; every change is one
 * `BEGIN IMMEDIATE` transaction (the write lock is taken before reading, so
 * two processes never compute from the same level), and a busy timeout makes
 * concurrent takes queue instead of failing.
 */
export class SqliteStore implements BucketStore, LimitSetStore {
  readonly url: string;
  /** The file open now: another one, once the path names a new file (see #checkFile). */
  #db!: BetterSqlite3.Database;
  readonly #connect: () => BetterSqlite3.Database;
  readonly #clock: Clock;
  readonly #busyTimeoutMs: number;
  #select!: BetterSqlite3.Statement<[string], MarkedRow>;
  #upsert!: BetterSqlite3.Statement<[Row]>;
  #take!: (key: string, n: number, options: TakeOptions | undefined) => TakeResult | undefined;
  #configure!: (key: string, config: BucketConfig, options: ConfigureOptions | undefined) => BucketState;
  #cancel!: (key: string, reservation: StoreReservation) => number | undefined;
  #selectSet!: BetterSqlite3.Statement<[string], SetRow>;
  /** Runs a set step in one IMMEDIATE transaction. */
  #inTransaction!: <T>(step: () => T) => T;
  #saveSet!: (key: string, next: StoredSet, marked: boolean) => void;
  #sweep!: (nowMs: number) => void;
  readonly #fullKeyMarginMs: number;
  /** When this process last swept keys made with `expireWhenFull` that are full again. */
  #lastSweepMs = -Infinity;
  /** The file opened, to notice when its path names it no more; undefined for ":memory:". */
  #file: OpenFile | undefined;
  /** The new file at the path, once said lost for: the next call opens it. */
  #replacement: { dev: number; ino: number } | undefined;
  #lastFileCheckMs = -Infinity;
  /** Set once a call found the file locked past the busy timeout, until one succeeds. */
  #locked = false;

  private constructor(connect: () => BetterSqlite3.Database, url: string, clock: Clock, busyTimeoutMs: number, fullKeyMarginMs: number) {
    this.#connect = connect;
    this.url = url;
    this.#clock = clock;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#fullKeyMarginMs = fullKeyMarginMs;
    this.#use(connect());
  }

  /** Takes `db` as the file to work on, with its statements. */
  #use(db: BetterSqlite3.Database): void {
    this.#db = db;
    this.#select = db.prepare<[string], MarkedRow>("SELECT key, kind, rate, burst, tokens, last_ms, expire_when_full FROM buckets WHERE key = ?");
    const mark = db.prepare<[number, string]>("UPDATE buckets SET expire_when_full = ? WHERE key = ?");
    // Full since the cutoff: the level it had at `last_ms`, refilled up to the cutoff, reached the burst.
    const sweep = db.prepare<{ cutoff: number }>(
      `DELETE FROM buckets WHERE expire_when_full = 1 AND last_ms <= @cutoff
         AND (rate >= 9e999 OR (rate > 0 AND tokens + ((@cutoff - last_ms) / 1000.0) * rate >= burst))`,
    );
    this.#upsert = db.prepare<[Row]>(
      `INSERT INTO buckets (key, kind, rate, burst, tokens, last_ms) VALUES (@key, @kind, @rate, @burst, @tokens, @last_ms)
       ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, rate = excluded.rate, burst = excluded.burst,
         tokens = excluded.tokens, last_ms = excluded.last_ms`,
    );
    this.#selectSet = db.prepare<[string], SetRow>("SELECT key, limits, state, holders, full_at_ms, expire_when_full, classes FROM limit_sets WHERE key = ?");
    const upsertSet = db.prepare<[SetRow]>(
      `INSERT INTO limit_sets (key, limits, state, holders, full_at_ms, expire_when_full, classes)
       VALUES (@key, @limits, @state, @holders, @full_at_ms, @expire_when_full, @classes)
       ON CONFLICT (key) DO UPDATE SET limits = excluded.limits, state = excluded.state, holders = excluded.holders,
         full_at_ms = excluded.full_at_ms, expire_when_full = excluded.expire_when_full, classes = excluded.classes`,
    );
    const deleteSet = db.prepare<[string]>("DELETE FROM limit_sets WHERE key = ?");
    const deleteBucket = db.prepare<[string]>("DELETE FROM buckets WHERE key = ?");
    const sweepSets = db.prepare<{ cutoff: number }>("DELETE FROM limit_sets WHERE expire_when_full = 1 AND full_at_ms <= @cutoff");
    // Keys made per client are what grows the tables: making one also sweeps those full again, at most once a margin.
    this.#sweep = (nowMs) => {
      if (nowMs - this.#lastSweepMs < this.#fullKeyMarginMs) return;
      this.#lastSweepMs = nowMs;
      sweep.run({ cutoff: nowMs - this.#fullKeyMarginMs });
      sweepSets.run({ cutoff: nowMs - this.#fullKeyMarginMs });
    };
    this.#saveSet = (key, next, marked) => {
      const bucket = bucketOfSet(next);
      if (bucket) {
        this.#upsert.run(rowOf(key, bucket));
        mark.run(marked ? 1 : 0, key);
        deleteSet.run(key);
        return;
      }
      upsertSet.run({ key, ...setRowOf(next), full_at_ms: fullAtMs(next), expire_when_full: marked ? 1 : 0 });
      deleteBucket.run(key);
    };
    const inTransaction = db.transaction((step: () => unknown) => step());
    this.#inTransaction = <T>(step: () => T) => inTransaction.immediate(step) as T;
    const take = db.transaction((key: string, n: number, options: TakeOptions | undefined) => {
      const row = this.#select.get(key);
      if (!row) return this.#refuseSet(key);
      const { result, next } = takeAt(storedOf(row), this.#clock.now(), n, options);
      if (next) this.#upsert.run(rowOf(key, next));
      return result;
    });
    this.#take = (key, n, options) => take.immediate(key, n, options);
    const cancel = db.transaction((key: string, reservation: StoreReservation) => {
      const row = this.#select.get(key);
      if (!row) return this.#refuseSet(key);
      const { restored, next } = cancelAt(storedOf(row), this.#clock.now(), reservation);
      if (next) this.#upsert.run(rowOf(key, next));
      return restored;
    });
    this.#cancel = (key, reservation) => cancel.immediate(key, reservation);
    const configure = db.transaction((key: string, config: BucketConfig, options: ConfigureOptions | undefined) => {
      const row = this.#select.get(key);
      const nowMs = this.#clock.now();
      const next = configureAt(row && storedOf(row), nowMs, config);
      const expiresWhenFull = Boolean(options?.expireWhenFull) && (!row || row.expire_when_full === 1);
      this.#upsert.run(rowOf(key, next));
      mark.run(expiresWhenFull ? 1 : 0, key);
      deleteSet.run(key);
      if (expiresWhenFull) this.#sweep(nowMs);
      return stateOf(key, next, nowMs, expiresWhenFull);
    });
    this.#configure = (key, config, options) => configure.immediate(key, config, options);
  }

  /** Opens (creating if need be) the file at `path`; failures are StoreErrors with one-line messages. */
  static async open(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const url = options.url ?? `sqlite:${path}`;
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    const { default: Database } = await import("better-sqlite3");
    let db: BetterSqlite3.Database | undefined;
    try {
      const existing = path === ":memory:" ? undefined : statSync(path, { throwIfNoEntry: false });
      if (existing?.isDirectory()) {
        throw new StoreError("not-a-store", `store ${url}: is a directory; name a file in it, as in sqlite:${join(path, "buckets.db")}`, { storeUrl: url });
      }
      if (existing && !existing.isFile()) {
        throw new StoreError("not-a-store", `store ${url}: not a regular file (a device, a pipe or a socket); name a file, as in sqlite:/path/buckets.db`, {
          storeUrl: url,
        });
      }
      if (path !== ":memory:") makeDirectory(dirname(path));
      const nativeBinding = typeof options.nativeBinding === "function" ? options.nativeBinding() : options.nativeBinding;
      // Also what opens a new file at the path mid-run, where a file that is no database must not stay open.
      const connectOnce = (): BetterSqlite3.Database => {
        const opened = new Database(path, { timeout: busyTimeoutMs, ...(nativeBinding === undefined ? {} : { nativeBinding }) });
        try {
          opened.pragma("journal_mode = WAL");
          opened.pragma("synchronous = NORMAL");
          migrate(opened, url);
        } catch (error) {
          opened.close();
          throw error;
        }
        db = opened;
        return opened;
      };
      // Two processes making a new file at once: SQLite may answer one's switch to WAL busy at once, without
      // its busy wait (seen: `run` and `key show` started together, one of them failing in 100 ms in 1 of 20).
      // Tried again for as long as the busy timeout, the file is made by then.
      const connect = (): BetterSqlite3.Database => {
        const deadlineMs = Date.now() + busyTimeoutMs;
        for (let attempt = 0; ; attempt++) {
          try {
            return connectOnce();
          } catch (error) {
            if (!isBusy(error) || Date.now() >= deadlineMs) throw error;
            sleepSync(Math.min(5 * 2 ** attempt, 100, Math.max(1, deadlineMs - Date.now())));
          }
        }
      };
      const store = new SqliteStore(connect, url, options.clock ?? wallClock, busyTimeoutMs, options.fullKeyMarginMs ?? FULL_KEY_MARGIN_MS);
      if (path !== ":memory:") {
        const { dev, ino } = statSync(path);
        store.#file = { path, dev, ino, checkEveryMs: options.fileCheckMs ?? FILE_CHECK_MS };
      }
      return store;
    } catch (error) {
      db?.close();
      throw sqliteStoreError(error, url, busyTimeoutMs);
    }
  }

  async take(key: string, n: number, options?: TakeOptions): Promise<TakeResult | undefined> {
    checkTake(n, options);
    return this.#guard(() => this.#take(key, n, options));
  }

  async cancel(key: string, reservation: StoreReservation): Promise<number | undefined> {
    checkCancel(reservation);
    return this.#guard(() => this.#cancel(key, reservation));
  }

  async read(key: string): Promise<BucketState | undefined> {
    return this.#guard(() => {
      const row = this.#select.get(key);
      if (!row) return this.#refuseSet(key);
      return stateOf(key, storedOf(row), this.#clock.now(), row.expire_when_full === 1);
    });
  }

  async configure(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState> {
    checkConfig(config);
    return this.#guard(() => this.#configure(key, config, options));
  }

  async list(): Promise<BucketState[]> {
    return this.#guard(() => {
      const rows = this.#db.prepare<[], MarkedRow>("SELECT key, kind, rate, burst, tokens, last_ms, expire_when_full FROM buckets ORDER BY key").all();
      const nowMs = this.#clock.now();
      return rows.map((row) => stateOf(row.key, storedOf(row), nowMs, row.expire_when_full === 1));
    });
  }

  async delete(key: string): Promise<boolean> {
    return this.#guard(() =>
      this.#inTransaction(() => {
        const set = this.#db.prepare("DELETE FROM limit_sets WHERE key = ?").run(key).changes > 0;
        return this.#db.prepare("DELETE FROM buckets WHERE key = ?").run(key).changes > 0 || set;
      }),
    );
  }

  /** BucketStore's answer for a key it has no bucket for: unknown, or held as a set it cannot take from. */
  #refuseSet(key: string): undefined {
    const set = this.#selectSet.get(key);
    if (!set) return undefined;
    const stored = storedSetOf(set);
    throw stored.classes ? classesError(this.url, key, stored.classes.specs.map((c) => c.name)) : heldAsSetError(this.url, key, stored.limits.length);
    return undefined;
  }

  /** The key as a set, from whichever table holds it. */
  #findSet(key: string): FoundSet | undefined {
    const row = this.#select.get(key);
    if (row) return { stored: setOfBucket(storedOf(row)), marked: row.expire_when_full === 1 };
    const set = this.#selectSet.get(key);
    return set && { stored: storedSetOf(set), marked: set.expire_when_full === 1 };
  }

  /** One set step on a key that exists, in one IMMEDIATE transaction: what it answers, and the set to store (undefined: unchanged). */
  #setStep<T>(key: string, step: (stored: StoredSet, nowMs: number) => { value: T; next: StoredSet | undefined }): T | undefined {
    return this.#guard(() =>
      this.#inTransaction(() => {
        const found = this.#findSet(key);
        if (!found) return undefined;
        const { value, next } = step(found.stored, this.#clock.now());
        if (next) this.#saveSet(key, next, found.marked);
        return value;
      }),
    );
  }

  async configureSet(key: string, limits: readonly LimitSpec[], options?: ConfigureOptions): Promise<SetState> {
    checkLimitSpecs(limits);
    return this.#guard(() =>
      this.#inTransaction(() => {
        const found = this.#findSet(key);
        const nowMs = this.#clock.now();
        const next = configureSetAt(found?.stored, nowMs, limits);
        const marked = Boolean(options?.expireWhenFull) && (!found || found.marked);
        this.#saveSet(key, next, marked);
        if (marked) this.#sweep(nowMs);
        return setStateOf(key, next, nowMs, marked);
      }),
    );
  }

  async takeSet(key: string, costs: Costs, options?: SetTakeOptions): Promise<SetTakeResult | undefined> {
    checkSetTake(costs, options);
    return this.#setStep(key, (stored, nowMs) => {
      if (stored.classes) throw classesError(this.url, key, stored.classes.specs.map((c) => c.name));
      const { result, next } = takeSetAt(stored, nowMs, costs, options);
      return { value: result, next };
    });
  }

  async configureClasses(key: string, classes: readonly ClassSpec[] | null): Promise<SetState | undefined> {
    return this.#guard(() =>
      this.#inTransaction(() => {
        const found = this.#findSet(key);
        if (!found) return undefined;
        const nowMs = this.#clock.now();
        const next = configureClassesAt(found.stored, nowMs, classes);
        this.#saveSet(key, next, found.marked);
        return setStateOf(key, next, nowMs, found.marked);
      }),
    );
  }

  async takeClass(key: string, className: string, costs: Costs): Promise<ClassTakeResult | undefined> {
    checkSetTake(costs, undefined);
    return this.#setStep(key, (stored, nowMs) => {
      const taken = takeClassAt(stored, nowMs, className, costs);
      if (!taken) throw classesError(this.url, key, undefined);
      return { value: taken.result, next: taken.next };
    });
  }

  async cancelSet(key: string, reservation: SetReservation): Promise<true | undefined> {
    checkSetReservation(reservation);
    return this.#setStep(key, (stored, nowMs) => ({ value: true as const, next: cancelSetAt(stored, nowMs, reservation) }));
  }

  async settleSet(key: string, reservation: SetReservation, actualCosts: Costs): Promise<SetReservation | undefined> {
    checkSetReservation(reservation);
    checkSetTake(actualCosts, undefined);
    return this.#setStep(key, (stored, nowMs) => {
      const settled = settleSetAt(stored, nowMs, reservation, actualCosts);
      return { value: settled.reservation, next: settled.next };
    });
  }

  async releaseSet(key: string, reservation: SetReservation): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    return this.#setStep(key, (stored, nowMs) => {
      const { released, next } = releaseSetAt(stored, nowMs, reservation);
      return { value: released, next };
    });
  }

  async renewSet(key: string, reservation: SetReservation, leaseMs?: number): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    checkLease(leaseMs);
    return this.#setStep(key, (stored, nowMs) => {
      const { renewed, next } = renewSetAt(stored, nowMs, reservation, leaseMs);
      return { value: renewed, next };
    });
  }

  async readSet(key: string): Promise<SetState | undefined> {
    return this.#guard(() => {
      const found = this.#findSet(key);
      return found && setStateOf(key, found.stored, this.#clock.now(), found.marked);
    });
  }

  async listSets(): Promise<SetState[]> {
    return this.#guard(() => {
      const nowMs = this.#clock.now();
      const buckets = this.#db.prepare<[], MarkedRow>("SELECT key, kind, rate, burst, tokens, last_ms, expire_when_full FROM buckets").all();
      const sets = this.#db.prepare<[], SetRow>("SELECT key, limits, state, holders, full_at_ms, expire_when_full, classes FROM limit_sets").all();
      const states = [
        ...buckets.map((row) => setStateOf(row.key, setOfBucket(storedOf(row)), nowMs, row.expire_when_full === 1)),
        ...sets.map((row) => setStateOf(row.key, storedSetOf(row), nowMs, row.expire_when_full === 1)),
      ];
      return states.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    });
  }

  async deleteSet(key: string): Promise<boolean> {
    return this.delete(key);
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  /**
   * A file deleted or replaced while open goes on working for this process
   * alone: the others open a new file at the path, and the buckets are no
   * longer shared. That is a lost store, said as such (at most once a second it is checked).
   * Once said, a new file at the path is opened by the next call: the others
   * share that one now, as they would a Redis restarted empty.
   */
  #checkFile(): void {
    const file = this.#file;
    if (!file) return;
    const nowMs = performance.now();
    if (nowMs - this.#lastFileCheckMs < file.checkEveryMs) return;
    const now = statSync(file.path, { throwIfNoEntry: false });
    // Only a check passed counts: while the path names another file, or none, every call looks again (it may be put back).
    if (now && now.dev === file.dev && now.ino === file.ino) {
      this.#lastFileCheckMs = nowMs;
      return;
    }
    if (now && this.#replacement?.dev === now.dev && this.#replacement.ino === now.ino) {
      this.#reopen(file);
      return;
    }
    this.#replacement = now && now.isFile() ? { dev: now.dev, ino: now.ino } : undefined;
    throw new StoreError("lost", `store ${this.url}: the file was ${now ? "replaced" : "deleted"} while in use, so its buckets are no longer shared`, { storeUrl: this.url });
  }

  /** Opens the new file at the path in place of the old one; a failure to is the store's, as at the start. */
  #reopen(file: OpenFile): void {
    let db: BetterSqlite3.Database;
    try {
      db = this.#connect();
    } catch (error) {
      throw sqliteStoreError(error, this.url, this.#busyTimeoutMs);
    }
    this.#db.close();
    this.#use(db);
    const { dev, ino } = statSync(file.path);
    Object.assign(file, { dev, ino });
    this.#replacement = undefined;
    this.#locked = false;
    this.#lastFileCheckMs = performance.now();
  }

  #guard<T>(operation: () => T): T {
    this.#checkFile();
    try {
      const result = operation();
      if (this.#locked) this.#setLocked(false);
      return result;
    } catch (error) {
      const failure = sqliteStoreError(error, this.url, this.#busyTimeoutMs);
      if (failure instanceof StoreError && failure.failure === "locked" && !this.#locked) this.#setLocked(true);
      throw failure;
    }
  }

  /**
   * A file found locked past the busy timeout is not waited on in full again
   * until it answers: each call (a StoreWatch's probe) then waits at most
   * LOCKED_BUSY_MS, since SQLite's wait holds the whole process still.
   */
  #setLocked(locked: boolean): void {
    this.#locked = locked;
    this.#db.pragma(`busy_timeout = ${locked ? Math.min(LOCKED_BUSY_MS, this.#busyTimeoutMs) : this.#busyTimeoutMs}`);
  }
}

/** The file a store opened, as its path named it then. */
interface OpenFile {
  path: string;
  dev: number;
  ino: number;
  checkEveryMs: number;
}

/** How long a call waits for a file already found locked. */
const LOCKED_BUSY_MS = 50;

/** How often the store checks that its path still names the file it opened. */
const FILE_CHECK_MS = 1000;

/**
 * mkdir -p, one level at a time: Node 20's recursive mkdirSync spins forever
 * on some paths it cannot create (under /proc, for one).
 */
function makeDirectory(directory: string): void {
  if (existsSync(directory)) return;
  const parent = dirname(directory);
  if (parent !== directory) makeDirectory(parent);
  try {
    mkdirSync(directory, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
}

/** Creates the tables in a new file; refuses a file from a newer release. */
function migrate(db: BetterSqlite3.Database, url: string): void {
  db.transaction(() => {
    db.exec("CREATE TABLE IF NOT EXISTS tbucket_schema (version INTEGER NOT NULL)");
    const row = db.prepare<[], { version: number }>("SELECT max(version) AS version FROM tbucket_schema").get();
    const version = row?.version ?? 0;
    if (version > SQLITE_SCHEMA_VERSION) {
      throw new StoreError("newer-schema", `store ${url}: written by a newer tbucket (schema ${version}, this one knows ${SQLITE_SCHEMA_VERSION}); upgrade tbucket`, {
        storeUrl: url,
      });
    }
    if (version < 1) {
      // Times are wall-clock ms; rate is tokens per second (Infinity: no limit).
      db.exec(`CREATE TABLE buckets (
        key TEXT PRIMARY KEY NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('bytes', 'count')),
        rate REAL NOT NULL,
        burst REAL NOT NULL,
        tokens REAL NOT NULL,
        last_ms REAL NOT NULL
      )`);
    }
    if (version < 2) {
      // JSON with non-finite numbers as strings (setRowOf); full_at_ms may be Infinity (a bucket paused below full).
      db.exec(`CREATE TABLE limit_sets (
        key TEXT PRIMARY KEY NOT NULL,
        limits TEXT NOT NULL,
        state TEXT NOT NULL,
        holders TEXT NOT NULL,
        full_at_ms REAL NOT NULL,
        expire_when_full INTEGER NOT NULL DEFAULT 0
      )`);
    }
    if (version < SQLITE_SCHEMA_VERSION) db.prepare("INSERT INTO tbucket_schema (version) VALUES (?)").run(SQLITE_SCHEMA_VERSION);
    // Added beside schema 1 rather than as schema 2: a release without it names its columns, and goes on using the file.
    const columns = db.prepare<[], { name: string }>("PRAGMA table_info(buckets)").all();
    if (!columns.some((column) => column.name === "expire_when_full")) {
      db.exec("ALTER TABLE buckets ADD COLUMN expire_when_full INTEGER NOT NULL DEFAULT 0");
    }
    // Classes the same way: a release before them takes from such a key as from its set, and keeps the column.
    const setColumns = db.prepare<[], { name: string }>("PRAGMA table_info(limit_sets)").all();
    if (!setColumns.some((column) => column.name === "classes")) db.exec("ALTER TABLE limit_sets ADD COLUMN classes TEXT");
  }).immediate();
}

/** JSON keeps no Infinity: a non-finite number is written as {"#": "Infinity"} (no string a user gives, a unit or a holder, is mistaken for one), and read back. */
function encode(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "number" && !Number.isFinite(v) ? { "#": String(v) } : v));
}

function decode<T>(text: string): T {
  return JSON.parse(text, (_key, v: unknown) => {
    const infinite = typeof v === "object" && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 ? (v as { "#"?: unknown })["#"] : undefined;
    return infinite === "Infinity" ? Infinity : infinite === "-Infinity" ? -Infinity : v;
  }) as T;
}

function setRowOf(stored: StoredSet): Pick<SetRow, "limits" | "state" | "holders" | "classes"> {
  return { limits: encode(stored.limits), state: encode(stored.state), holders: encode(stored.holders), classes: stored.classes ? encode(stored.classes) : null };
}

function storedSetOf(row: SetRow): StoredSet {
  const stored: StoredSet = { limits: decode<LimitSpec[]>(row.limits), state: decode<StoredSet["state"]>(row.state), holders: decode<StoredSet["holders"]>(row.holders) };
  if (row.classes) stored.classes = decode<StoredClasses>(row.classes);
  return stored;
}

function storedOf(row: Row): StoredBucket {
  return { kind: row.kind, rate: row.rate, burst: row.burst, tokens: row.tokens, lastMs: row.last_ms };
}

function rowOf(key: string, stored: StoredBucket): Row {
  return { key, kind: stored.kind, rate: stored.rate, burst: stored.burst, tokens: stored.tokens, last_ms: stored.lastMs };
}

/** One line a user can act on, for whatever SQLite or the file system threw; the failure says which kind. */
/** SQLITE_BUSY and its extended codes, and SQLITE_LOCKED: another connection holds the file. */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_") || code.startsWith("SQLITE_LOCKED"));
}

/** Blocks the thread for `ms`, as SQLite's own busy wait does; only while a store is being opened. */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export function sqliteStoreError(error: unknown, url: string, busyTimeoutMs: number): Error {
  if (error instanceof StoreError) return error;
  if (error instanceof RangeError || error instanceof TypeError) return error;
  const code = String((error as { code?: unknown }).code ?? "");
  // One line: a failed require of the addon appends its require stack.
  const detail = ((error as Error).message ?? String(error)).split("\n")[0]!;
  let failure: StoreFailure;
  let why: string;
  if (isBusy(error)) {
    [failure, why] = ["locked", `the file is locked by another program (still busy after ${busyTimeoutMs / 1000} s); try again`];
  } else if (code === "SQLITE_NOTADB" || code.startsWith("SQLITE_CORRUPT")) {
    [failure, why] = ["corrupt", `not a tbucket database, or corrupted (${detail}); move the file away (a new one is made)`];
  } else if (code.startsWith("SQLITE_READONLY") || code === "EACCES" || code === "EPERM" || code === "EROFS") {
    [failure, why] = ["read-only", `cannot write the file (${detail}); fix its permissions`];
  } else if (code.startsWith("SQLITE_CANTOPEN") || code === "ENOTDIR" || code === "ENOENT" || code === "EEXIST") {
    [failure, why] = ["cannot-open", `cannot open the file (${detail}); check the path and its directory's permissions`];
  } else {
    [failure, why] = ["failed", `${detail}${code ? ` (${code})` : ""}`];
  }
  return new StoreError(failure, `store ${url}: ${why}`, { storeUrl: url, cause: error });
}
