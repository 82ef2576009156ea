import { alignColumns, exactByteRate, grouped, humanAmount, humanBytes, humanRate } from "../../core/format.js";
import { defaultBurst } from "../../core/default-burst.js";
import { parseAnyRate, type RateKind } from "../../core/units.js";
import { type BucketState, type BucketStore, StoreError } from "../../store/bucket-store.js";
import { EXIT, parseOption, RuntimeError, UsageError } from "../errors.js";
import { describeLimits, isSet, pausedWithoutBurst } from "../open-limiter.js";
import { isLimitSetStore, type LimitLevel, type SetState } from "../../store/limit-set-store.js";
import { writeStandardOutput } from "../standard-streams.js";
import { describeStoreFailure } from "../store-failure.js";
import { openCommandStore, storeLocation } from "../store-opener.js";
import { type ClassTexts, type KeyRequest, parseKeyBurst, parseKeyRate } from "./options.js";
import { ClassDefinitionError } from "../../core/class-spec.js";
import type { LimitSpec } from "../../core/limit-spec.js";
import type { ClassLevel } from "../../store/class-math.js";
import type { LimitSetStore } from "../../store/limit-set-store.js";
import { parseClassOptions } from "../class-options.js";
import { describeRate } from "../../core/format.js";

/** Runs `tbucket key ...`; resolves to the exit status. */
export async function runKey(request: KeyRequest): Promise<number> {
  const location = storeLocation(request.store);
  let store: BucketStore;
  try {
    store = await openCommandStore(location);
  } catch (error) {
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  }
  try {
    return await act(store, request);
  } catch (error) {
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  } finally {
    await store.close();
  }
}

async function act(store: BucketStore, request: KeyRequest): Promise<number> {
  switch (request.action) {
    case "list": {
      const states = await store.list();
      // Keys of one bucket are listed by `list` as they always were; the others (and keys with classes) are sets.
      const sets = isLimitSetStore(store) ? (await store.listSets()).filter((set) => isSet(set.limits) || set.classes) : [];
      const rows = [...states.map((state) => ({ key: state.key, state })), ...sets.map((set) => ({ key: set.key, set }))].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      if (request.json) print(JSON.stringify(rows.map((row) => ("state" in row ? toJson(row.state, store) : setJson(row.set, store))), null, 2));
      else if (rows.length === 0) process.stderr.write(`tbucket: no shared buckets in ${store.url}; create one with: tbucket key set <key> --rate 20mb\n`);
      else print(formatTable(rows.map((row) => ("state" in row ? row.state : row.set))));
      return EXIT.ok;
    }
    case "show": {
      const set = isLimitSetStore(store) ? await store.readSet(request.key) : undefined;
      if (set && (isSet(set.limits) || set.classes)) {
        print(request.json ? JSON.stringify(setJson(set, store), null, 2) : formatSet(set, store));
        return EXIT.ok;
      }
      const state = await store.read(request.key);
      if (!state) throw notSet(request.key, store);
      print(request.json ? JSON.stringify(toJson(state, store), null, 2) : formatState(state, store));
      return EXIT.ok;
    }
    case "delete": {
      // A set's own store keys (its windows, its holders) go with it.
      const deleted = isLimitSetStore(store) ? await store.deleteSet(request.key) : await store.delete(request.key);
      if (request.json) print(JSON.stringify({ key: request.key, store: store.url, deleted }));
      if (!deleted) {
        if (!request.json) process.stderr.write(`tbucket: ${notSet(request.key, store).message}\n`);
        return EXIT.failure;
      }
      return EXIT.ok;
    }
    case "set": {
      // A key with classes is kept as a set (its classes with it): read and changed as one.
      const classed = isLimitSetStore(store) ? await store.readSet(request.key) : undefined;
      const existing = classed?.classes ? bucketOfClassedSet(classed) : await store.read(request.key);
      const kind: RateKind = request.kind ?? existing?.kind ?? (request.rate !== undefined ? parseOption("--rate", request.rate, (text) => parseAnyRate(text, { allowZero: true })).kind : "count");
      if (request.rate === undefined && !existing) {
        throw new UsageError(`--rate: a new key needs a rate; try "tbucket key set ${request.key} --rate ${kind === "bytes" ? "20mb" : "5/s"}"`);
      }
      const keepRate = existing && existing.kind === kind ? existing.rate : undefined;
      const rate = request.rate !== undefined ? parseKeyRate(request.rate, kind) : keepRate!;
      if (rate === 0 && kind === "bytes" && request.burst === undefined && keepRate === undefined) throw pausedWithoutBurst();
      // A rate change keeps the stored burst, as pv -R changes only the rate.
      const burst =
        request.burst !== undefined ? parseKeyBurst(request.burst, kind) : keepRate !== undefined ? existing!.burst : defaultBurst(kind, rate);
      const bucket: LimitSpec = { kind: "bucket", unit: kind, rate, burst };
      if (request.classes !== undefined || classed?.classes) {
        if (!isLimitSetStore(store)) throw new UsageError(`--class: ${store.url} keeps no classes; use a SQLite store`);
        const set = await setWithClasses(store, request.key, [bucket], request.classes, request.rate !== undefined || request.burst !== undefined || !existing);
        print(request.json ? JSON.stringify(setJson(set, store), null, 2) : formatSet(set, store));
        return EXIT.ok;
      }
      const state = await store.configure(request.key, { rate, burst, kind });
      print(request.json ? JSON.stringify(toJson(state, store), null, 2) : formatState(state, store));
      return EXIT.ok;
    }
    case "set-limits": {
      if (!isLimitSetStore(store)) throw new UsageError(`key set: ${store.url} holds one rate and burst a key, not a set of limits; use a SQLite store, or give one --rate (and --burst)`);
      const set = await setWithClasses(store, request.key, request.limits, request.classes, true);
      print(request.json ? JSON.stringify(setJson(set, store), null, 2) : formatSet(set, store));
      return EXIT.ok;
    }
  }
}

/** The one bucket of a key with classes, as `key set` changes a bucket; a set of more limits is changed as a set. */
function bucketOfClassedSet(set: SetState): BucketState {
  const [first, ...others] = set.limits;
  if (others.length > 0 || first?.kind !== "bucket" || (first.unit !== "bytes" && first.unit !== "count")) {
    throw new UsageError(`key set ${set.key}: the key holds a set of ${set.limits.length} limits shared by classes; give each of its limits again (--rate, --window, ...)`);
  }
  return { key: set.key, kind: first.unit === "bytes" ? "bytes" : "count", rate: first.rate, burst: first.burst, tokens: first.level, updatedAtMs: set.updatedAtMs };
}

/**
 * Sets a key's limits (when `setLimits`) and its classes (when given: null
 * drops them), classes read in the unit and against the rate of the key's
 * first bucket. Limits the kept classes no longer fit, with new classes
 * that fit them, are set with the old classes dropped first.
 */
async function setWithClasses(store: BucketStore & LimitSetStore, key: string, limits: LimitSpec[], texts: ClassTexts | undefined, setLimits: boolean): Promise<SetState> {
  if (texts !== undefined && (!store.configureClasses || !store.takeClass)) throw new UsageError(`--class: ${store.url} keeps no classes yet; use a SQLite store`);
  const share = limits.find((limit) => limit.kind === "bucket");
  const specs = texts ? (share ? parseClassOptions(texts, share.unit === "bytes" ? "bytes" : "count", share.rate) : noRateToShare()) : texts;
  let set: SetState | undefined;
  if (setLimits) {
    try {
      set = await store.configureSet(key, limits);
    } catch (error) {
      if (!(error instanceof ClassDefinitionError)) throw error;
      if (specs === undefined) {
        const kept = (await store.readSet(key))?.classes ?? [];
        const kind: RateKind = share?.unit === "bytes" ? "bytes" : "count";
        const total = kept.reduce((sum, c) => sum + c.rate, 0);
        const why = share && total > share.rate ? `the classes' guarantees add up to ${describeRate(kind, total)}, more than the rate of ${describeRate(kind, share.rate)}` : classMismatch(error);
        throw new UsageError(`key set ${key}: ${why}; lower the classes with --class, drop them with --class none, or keep a higher rate`);
      }
      await store.configureClasses!(key, null);
      set = await store.configureSet(key, limits);
    }
  }
  if (specs !== undefined) {
    try {
      set = await store.configureClasses!(key, specs);
    } catch (error) {
      if (error instanceof ClassDefinitionError) throw new UsageError(`--class: ${classMismatch(error)}`);
      throw error;
    }
  }
  if (!set) throw new RuntimeError(`key "${key}": not set in ${store.url}; give it a --rate first`);
  return set;
}

function noRateToShare(): never {
  throw new UsageError(`--class: classes share a rate, and the key has none; give it a --rate`);
}

/** The class definition's complaint as part of a line: a lower-case start, no full stop. */
function classMismatch(error: Error): string {
  return error.message.charAt(0).toLowerCase() + error.message.slice(1).replace(/\.$/, "");
}

/** `key show --json`'s limits: `{kind, unit, rate, burst | n, window | n, level}`, rates a second, windows in seconds, unlimited as null. */
function setJson(set: SetState, store: BucketStore) {
  const limits = set.limits.map((limit) => {
    if (limit.kind === "bucket") return { kind: limit.kind, unit: limit.unit, rate: limit.rate === Infinity ? null : limit.rate, burst: limit.burst, level: limit.level };
    if (limit.kind === "window") return { kind: limit.kind, unit: limit.unit, n: limit.n, window: limit.windowMs / 1000, level: limit.level };
    return { kind: limit.kind, n: limit.n, level: limit.level };
  });
  return {
    key: set.key,
    store: store.url,
    limits,
    ...(set.classes && { classes: set.classes }),
    updatedAt: new Date(set.updatedAtMs).toISOString(),
    ...(set.expiresWhenFull ? { expiresWhenFull: true } : {}),
  };
}

/** A set limit's level: a bucket's tokens, a window's room left, a concurrency limit's free slots. */
function formatLimitLevel(limit: LimitLevel): string {
  if (limit.kind === "concurrency") return `${limit.level} free`;
  const kind: RateKind = limit.unit === "bytes" ? "bytes" : "count";
  if (limit.kind === "bucket") return formatLevel({ kind, tokens: limit.level, burst: limit.burst });
  const room = Math.max(0, limit.level);
  return `${humanAmount(kind, room)} left (${room >= limit.n ? "empty" : `${Math.round((room / limit.n) * 100)}%`})`;
}

/** Each limit numbered from 1, as --stats and limitedBy number them, with its level. */
function formatSet(set: SetState, store: BucketStore): string {
  const rows: Array<[string, string]> = [
    ["key", set.key],
    ["store", store.url],
    ...set.limits.map((limit, index): [string, string] => [`limit ${index + 1}`, `${describeLimits([limit])}; level ${formatLimitLevel(limit)}`]),
    ...(set.classes ?? []).map((c): [string, string] => [`class ${c.name}`, describeClassLevel(c, set.limits)]),
    ["updated", new Date(set.updatedAtMs).toISOString()],
  ];
  return alignColumns(rows.map(([name, value]) => [`${name}:`, value]), { gap: " " }).join("\n");
}

/** A class's definition and its use: `5 MiB/s guaranteed, ceil 20 MiB/s, prio 1, weight 5 MiB/s; using 4.98 MiB/s (25%)`. */
function describeClassLevel(c: ClassLevel, limits: readonly LimitLevel[]): string {
  const share = limits.find((limit) => limit.kind === "bucket");
  const kind: RateKind = share?.kind === "bucket" && share.unit === "bytes" ? "bytes" : "count";
  const keyRate = share?.kind === "bucket" ? share.rate : Infinity;
  const percent = keyRate > 0 && Number.isFinite(keyRate) ? ` (${Math.round((c.usedRate / keyRate) * 100)}%)` : "";
  return `${humanRate(kind, c.rate)} guaranteed, ceil ${humanRate(kind, c.ceil)}, prio ${c.prio}, weight ${humanRate(kind, c.weight)}; using ${c.usedRate > 0 ? humanRate(kind, c.usedRate) : "nothing"}${percent}`;
}

function notSet(key: string, store: BucketStore): RuntimeError {
  return new RuntimeError(`key "${key}": not set in ${store.url}; see the keys with: tbucket key list`);
}

function print(text: string): void {
  writeStandardOutput(`${text}\n`);
}

/** JSON for scripts: numbers in tokens and tokens per second; an unlimited rate is null. */
function toJson(state: BucketState, store: BucketStore) {
  return {
    key: state.key,
    store: store.url,
    kind: state.kind,
    rate: state.rate === Infinity ? null : state.rate,
    burst: state.burst,
    tokens: state.tokens,
    updatedAt: new Date(state.updatedAtMs).toISOString(),
    // A key a proxy made for one client: the store forgets it once it is full again.
    ...(state.expiresWhenFull ? { expiresWhenFull: true } : {}),
  };
}

/** The rate as the progress line shows a limit; with `exact`, the bytes a second too. */
function formatRate(state: BucketState, exact: boolean): string {
  const text = humanRate(state.kind, state.rate);
  return exact && state.kind === "bytes" && state.rate >= 1024 && state.rate !== Infinity ? `${text} (${exactByteRate(state.rate)})` : text;
}

/**
 * A level below zero is a debt: a chunk larger than what was left took its
 * tokens ahead, and the next waits until the rate has paid it back.
 */
function formatLevel(state: Pick<BucketState, "kind" | "tokens" | "burst">): string {
  const owed = humanAmount(state.kind, -state.tokens);
  // A debt too small to show ("owes 0 B") reads as the empty bucket it is.
  if (state.tokens < 0 && !/^0( B)?$/.test(owed)) return `0 (owes ${owed}${state.kind === "count" ? " tokens" : ""})`;
  const tokens = Math.max(0, state.tokens);
  const percent = Math.round((tokens / state.burst) * 100);
  return `${humanAmount(state.kind, tokens)} (${tokens >= state.burst ? "full" : `${percent}%`})`;
}

function formatState(state: BucketState, store: BucketStore): string {
  const rows: Array<[string, string]> = [
    ["key", state.key],
    ["store", store.url],
    ["kind", state.kind === "bytes" ? "bytes" : "count (lines, launches)"],
    ["rate", formatRate(state, true)],
    // The exact figure where the human one rounds (1 KiB and up), as for the rate: not "10 B (10 B)".
    ["burst", state.kind === "bytes" && state.burst >= 1024 ? `${humanBytes(state.burst)} (${grouped(state.burst)} B)` : humanAmount(state.kind, state.burst)],
    ["level", formatLevel(state)],
    ["updated", new Date(state.updatedAtMs).toISOString()],
  ];
  return alignColumns(rows.map(([name, value]) => [`${name}:`, value]), { gap: " " }).join("\n");
}

/** One row a bucket; a set, one row a limit (`api #1`, `api #2`), numbered as `key show` numbers them. */
function formatTable(states: Array<BucketState | SetState>): string {
  const rows = [
    ["KEY", "KIND", "RATE", "BURST", "LEVEL", "UPDATED"],
    ...states.flatMap((state) => {
      const updated = new Date(state.updatedAtMs).toISOString();
      if (!("limits" in state)) return [[state.key, state.kind, formatRate(state, false), humanAmount(state.kind, state.burst), formatLevel(state), updated]];
      return state.limits.map((limit, index) => {
        const kind: RateKind = limit.kind !== "concurrency" && limit.unit === "bytes" ? "bytes" : "count";
        const name = `${state.key} #${index + 1}`;
        if (limit.kind === "bucket") return [name, limit.unit, humanRate(kind, limit.rate), humanAmount(kind, limit.burst), formatLimitLevel(limit), updated];
        if (limit.kind === "window") return [name, `${limit.unit} window`, describeLimits([limit]), "", formatLimitLevel(limit), updated];
        return [name, "concurrency", describeLimits([limit]), "", formatLimitLevel(limit), updated];
      });
    }),
  ];
  return alignColumns(rows).join("\n");
}
