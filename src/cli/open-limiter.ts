import type { Limiter } from "../core/limiter.js";
import { defaultBurst } from "../core/default-burst.js";
import { LimitSetLimiter } from "../core/limit-set-limiter.js";
import type { LimitSpec } from "../core/limit-spec.js";
import { humanAmount, humanDuration, humanRate } from "../core/format.js";
import { describeLimit, limitReports } from "../core/limit-report.js";
import { TokenBucket } from "../core/token-bucket.js";
import { formatByteRate, formatByteSize, formatCountRate, type RateKind } from "../core/units.js";
import { type BucketConfig, type BucketState, type BucketStore, StoreError } from "../store/bucket-store.js";
import { type KeyBucket, KeyBuckets, type SetKeyBucket } from "../store/key-buckets.js";
import type { SharedPause, SharedSlots } from "../run/job-runner.js";
import { ServerPause } from "../store/server-pause.js";
import { isLimitSetStore, type LimitLevel, type LimitSetStore, sameLimits, type SetState, specOf } from "../store/limit-set-store.js";
import { RuntimeError, UsageError } from "./errors.js";
import type { SharedBucketOptions } from "./shared-options.js";
import { describeStoreFailure } from "./store-failure.js";
import { openCommandStore, storeLocation } from "./store-opener.js";

/** What a command asks of its bucket, from its flags. */
export interface LimiterRequest {
  /** What one token is: a byte or a count (a line, a launch). */
  kind: RateKind;
  /** Tokens per second, when given on the command line. */
  rate?: number;
  /** Capacity, when given on the command line (else defaultBurst for the kind and rate). */
  burst?: number;
  /** A set of limits instead of one bucket (private, or with a key the key's set); `kind` is then its main unit. */
  limits?: readonly LimitSpec[];
  shared: SharedBucketOptions;
  /** Who asks: what stops when a shared store is lost, for the message (a stream, or launches). */
  command: "pipe" | "run";
  /** With a key shared by classes: the class every take names (`--class`), or `*` for a limiter per class (run's --class-of). */
  className?: string;
}

export interface SetReport {
  specs: readonly LimitSpec[];
  waitedMsBy(index: number): number;
  /** Items each limit refused (a wait past --max-wait). */
  refusedBy?(index: number): number;
}

export interface OpenLimiter {
  limiter: Limiter;
  /** With a key shared by classes: a limiter for each of the key's classes, by name, in the key's order. */
  byClass?: Map<string, Limiter>;
  /** With a key shared by classes: the rate its classes share, as read at the start (what a class's share is of). */
  sharedRate?: number;
  /** The same limiter, when it is a private set: for its per-limit statistics. */
  set?: LimitSetLimiter;
  /**
   * A set's limits as opened (a private set, or a shared key's set) and the
   * time of the waits each set, by index: for what a slice may hold and for
   * --stats. Undefined for one bucket.
   */
  report?: SetReport;
  /** A shared key's concurrency slots, when its set has a concurrency limit: run holds one a launch while it runs. */
  sharedSlots?: SharedSlots;
  /** A shared key's server pause (run's pushback), kept in its store for every process on it. */
  sharedPause?: SharedPause;
  /** Releases what the limiter holds (store connections, timers). */
  close(): Promise<void>;
}

/**
 * The bucket a command takes its tokens from: a private one, or with `--key`
 * the shared one in `--store` (or TBUCKET_STORE, or the default SQLite file),
 * wrapped so that a store lost mid-way fails or, with `--on-store-error local`,
 * goes on with a private bucket. `--rate`/`--burst` set the key; without them
 * the stored settings are used.
 */
export async function openLimiter(request: LimiterRequest): Promise<OpenLimiter> {
  if (request.shared.key !== undefined && request.className !== undefined) return openClassLimiter(request, request.shared.key, request.className);
  if (request.shared.key !== undefined) return openSharedLimiter(request, request.shared.key);
  if (request.limits !== undefined) {
    const set = new LimitSetLimiter(request.limits, { unit: request.kind });
    return { limiter: set, set, report: privateReport(set), close: async () => {} };
  }
  if (request.rate === undefined) throw new Error("openLimiter: a private bucket needs a rate");
  return { limiter: new TokenBucket({ rate: request.rate, burst: request.burst ?? defaultBurst(request.kind, request.rate) }), close: async () => {} };
}

async function openSharedLimiter(request: LimiterRequest, key: string): Promise<OpenLimiter> {
  const local = request.shared.onStoreError === "local";
  const location = storeLocation(request.shared.store);
  let store: BucketStore | StoreError;
  let privateSettings: BucketConfig | undefined;
  try {
    store = await openCommandStore(location);
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    const line = describeStoreFailure(error, { offerLocal: !local });
    if (!local) throw new RuntimeError(line);
    if (request.limits !== undefined) {
      warn(`${line}; going on with a private set of ${describeLimits(request.limits)}`);
      const set = new LimitSetLimiter(request.limits, { unit: request.kind });
      return { limiter: set, set, report: privateReport(set), close: async () => {} };
    }
    if (request.rate === undefined) throw new RuntimeError(`${line}; --on-store-error local needs --rate to go on with a private bucket`);
    privateSettings = { rate: request.rate, burst: request.burst ?? defaultBurst(request.kind, request.rate), kind: request.kind };
    warn(`${line}; going on with a private bucket at ${describeConfig(privateSettings)}`);
    store = error;
  }
  const setUp = store instanceof StoreError ? undefined : await keySetUp(store, key, request).catch(async (error: unknown) => {
    await store.close();
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: !local })) : error;
  });
  let limiter: KeyBucket | undefined;
  let setBucket: SetKeyBucket | undefined;
  let setLimits: LimitSpec[] | undefined;
  const waitedMsBy: number[] = [];
  const keys = keyBucketsFor(store, key, request, () => limiter);
  try {
    const setUpNoting = setUp && (async (sets: LimitSetStore) => {
      const state = await setUp(sets);
      setLimits = state.limits.map(specOf);
      return state;
    });
    limiter = setUpNoting
      ? (setBucket = await keys.openSet(key, {
          required: true,
          unit: request.kind,
          limits: request.limits ?? [],
          setUp: setUpNoting,
          onWait: (limitedBy, waitMs) => limitedBy.forEach((number) => (waitedMsBy[number - 1] = (waitedMsBy[number - 1] ?? 0) + waitMs)),
        }))
      : await keys.open(key, privateSettings ? { settings: privateSettings } : { required: true, setUp: (store) => configureKey(store, key, request) });
  } catch (error) {
    await keys.close();
    // A key shared by classes is taken from as one of them: naming none is the command line's mistake.
    if (error instanceof StoreError && error.failure === "classes") throw new UsageError(error.message);
    if (error instanceof StoreError) throw new RuntimeError(describeStoreFailure(error, { offerLocal: !local }));
    throw error;
  }
  const opened = limiter;
  const slots = setLimits?.some((limit) => limit.kind === "concurrency") ? setBucket : undefined;
  const sharedSlots: SharedSlots | undefined = slots && { acquire: (maxWaitMs, signal, costs) => slots.acquire(costs, maxWaitMs, signal) };
  // The limiter first gives back a lease still waiting, then the store closes.
  const report = setLimits && { specs: setLimits, waitedMsBy: (index: number) => waitedMsBy[index] ?? 0 };
  return { limiter: opened, report, sharedSlots, sharedPause: store instanceof StoreError ? undefined : serverPause(store, key), close: () => keys.close([opened]) };
}

function privateReport(set: LimitSetLimiter): SetReport {
  return { specs: set.set.specs, waitedMsBy: (index) => set.waitedMs(index), refusedBy: (index) => set.refusedBy[index]! };
}

/** The keys of a command's store, its outages said and handled as --on-store-error says; `current` is the key's limiter once open. */
function keyBucketsFor(store: BucketStore | StoreError, key: string, request: LimiterRequest, current: () => { rate: number; burst: number; kind: RateKind } | undefined): KeyBuckets {
  const local = request.shared.onStoreError === "local";
  const keys: KeyBuckets = new KeyBuckets({
    store,
    poll: true,
    // Mid-run the offer of a private bucket comes after what stopped; with local, both ends of an outage are said.
    ...(local && {
      onLost: (error: StoreError) => {
        const limiter = current();
        if (limiter) warn(`${describeStoreFailure(error, { offerLocal: false })}; going on with a private bucket at ${describeConfig(limiter)} until it is back`);
      },
      onBack: (lostForMs: number) => current() && say(`store ${keys.url}: back after ${humanDuration(lostForMs)}; key "${key}" is shared again`),
    }),
    keyFailure: (error) => new RuntimeError(`${describeStoreFailure(error, { offerLocal: false })}; ${STOPPED[request.command]}`),
    whileLost: local ? { mode: "local" } : { mode: "wait", timeoutMs: request.shared.storeTimeoutMs, giveUp: (error, lostForMs) => gaveUp(error, lostForMs, request.command) },
  });
  return keys;
}

/**
 * A key shared by classes, taken from as class `className` (`--key K --class
 * NAME`): the key and its classes come from the store, set by `tbucket key
 * set K --class ...`; the command line gives no limits of its own.
 */
async function openClassLimiter(request: LimiterRequest, key: string, className: string): Promise<OpenLimiter> {
  if (request.limits !== undefined || request.rate !== undefined || request.burst !== undefined) {
    throw new UsageError(`--class: the key's limits and classes are set with "tbucket key set ${key} --rate ... --class ..."; give --key ${key} --class ${className} without --rate, --burst or --window`);
  }
  let store: BucketStore;
  try {
    store = await openCommandStore(storeLocation(request.shared.store));
  } catch (error) {
    if (!(error instanceof StoreError)) throw error;
    // A private stand-in needs the key's classes, which only the store has.
    throw new RuntimeError(describeStoreFailure(error, { offerLocal: false }));
  }
  let state: SetState | undefined;
  try {
    if (!isLimitSetStore(store) || typeof store.takeClass !== "function") throw new UsageError(`--class: ${store.url} keeps no classes yet; use a SQLite store`);
    state = await store.readSet(key);
    const example = `tbucket key set ${key} --rate ${request.kind === "bytes" ? "20mb" : "10/s"} --class ${className}=${request.kind === "bytes" ? "5mb" : "2/s"}`;
    if (!state) throw new UsageError(`--key: "${key}" is not set in ${store.url}; define it and its classes first: ${example}`);
    if (!state.classes) throw new UsageError(`--class: key "${key}" has no classes; define them first: ${example}`);
    const names = state.classes.map((c) => c.name);
    if (className !== ALL_CLASSES && !names.includes(className)) {
      throw new UsageError(`--class: key "${key}" has no class "${className}"; its classes are ${names.join(", ")} (name one of them, or define it with tbucket key set ${key} --class, giving every class)`);
    }
    const share = state.limits.find((limit) => limit.kind === "bucket");
    if (share?.kind === "bucket" && share.unit !== request.kind) {
      const want = request.kind === "bytes" ? "bytes" : "a count";
      throw new UsageError(`--class: key "${key}"'s classes share ${describeLimits([share])}, which does not count ${want}; use another key`);
    }
  } catch (error) {
    await store.close();
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  }
  let limiter: KeyBucket | undefined;
  const keys = keyBucketsFor(store, key, request, () => limiter);
  const names = className === ALL_CLASSES ? state.classes!.map((c) => c.name) : [className];
  const byClass = new Map<string, KeyBucket>();
  try {
    for (const name of names) byClass.set(name, await keys.openClass(key, { unit: request.kind, className: name, state }));
  } catch (error) {
    await keys.close([...byClass.values()]);
    throw error instanceof StoreError ? new RuntimeError(describeStoreFailure(error, { offerLocal: false })) : error;
  }
  limiter = byClass.get(names[0]!)!;
  const share = state.limits.find((limit) => limit.kind === "bucket");
  return { limiter, byClass, sharedRate: share?.kind === "bucket" ? share.rate : undefined, sharedPause: serverPause(store, key), close: () => keys.close([...byClass.values()]) };
}

/**
 * The key's server pause in its store. A store that fails here is the
 * limiter's to say (its next take fails or goes local): the pause is then
 * this process's alone, never an error of its own.
 */
function serverPause(store: BucketStore, key: string): SharedPause {
  const pause = new ServerPause(store, key);
  return {
    pause: (ms) => pause.pause(ms).catch(() => {}),
    remainingMs: () => pause.remainingMs().catch(() => 0),
  };
}

/** `className` for a limiter per class of the key (run's --class-of, whose items name them). */
export const ALL_CLASSES = "*";

/** What a command did when its store was lost mid-way. */
const STOPPED: Record<LimiterRequest["command"], string> = {
  pipe: "stopped, and what was written so far is intact",
  run: "stopped launching, and the jobs already started ran to their end",
};

/** The line for a store that did not come back within --store-timeout: what failed, for how long, what stopped. */
function gaveUp(error: StoreError, lostForMs: number, command: LimiterRequest["command"]): RuntimeError {
  const line = describeStoreFailure(error, { offerLocal: false });
  // A refusal (a replica, a full memory) is not fixed by running again; the line says what is.
  const rerun = error.failure === "refused" ? "or add" : "rerun, or add";
  return new RuntimeError(`${line}; away for ${humanDuration(lostForMs)}; ${STOPPED[command]}; ${rerun} --on-store-error local to go on with a private bucket`);
}

/**
 * How a key that holds (or is to hold) a set is set up: with the command's
 * limits when it gives more than one bucket, or as the store holds it when
 * the command gives none and the stored key is a set. Undefined for a key
 * of one bucket, opened as it always was.
 */
async function keySetUp(store: BucketStore, key: string, request: LimiterRequest): Promise<((store: LimitSetStore) => Promise<SetState>) | undefined> {
  if (!isLimitSetStore(store)) {
    if (request.limits === undefined) return undefined;
    throw new UsageError(`--key: ${store.url} holds one rate and burst a key, not a set of limits; use a SQLite store for "${key}", or give --key one --rate (and --burst)`);
  }
  const limits = request.limits;
  if (limits !== undefined) {
    return async (sets) => {
      const before = await sets.readSet(key);
      const state = await sets.configureSet(key, limits);
      if (before && !sameLimits(before.limits.map(specOf), limits)) {
        process.stderr.write(`tbucket: key "${key}": limits changed from ${describeLimits(before.limits)} to ${describeLimits(limits)}; every process on this key now shares the new limits\n`);
      }
      return state;
    };
  }
  if (request.rate !== undefined || request.burst !== undefined) return undefined;
  const stored = await store.readSet(key);
  if (stored?.classes) throw new UsageError(`--key: key "${key}" is shared by classes (${stored.classes.map((c) => c.name).join(", ")}); name one with --class`);
  if (!stored || !isSet(stored.limits)) return undefined;
  if (!stored.limits.some((limit) => limit.kind !== "concurrency" && limit.unit === request.kind)) {
    const want = request.kind === "bytes" ? "bytes" : "a count";
    throw new UsageError(`--key: "${key}" holds ${describeLimits(stored.limits)}, none of which counts ${want}; use another key, or give --rate to reset it`);
  }
  return async () => stored;
}

/** A set is more than one bucket: one bucket alone is a key as it always was (opened, shown, listed so). */
export function isSet(limits: readonly LimitSpec[]): boolean {
  return limits.length > 1 || limits[0]?.kind !== "bucket";
}

/** `20/s, burst 1 and 10 in any 1.0 s and 4 at once`: a set's limits for people. */
export function describeLimits(limits: readonly LimitSpec[]): string {
  return limitReports(limits, () => 0).map(describeLimit).join(" and ");
}

/** Sets the key from --rate/--burst, or reads its stored settings; checks the kind of token. */
async function configureKey(store: BucketStore, key: string, request: LimiterRequest): Promise<BucketState> {
  // A --rate given replaces a set the key held with its one bucket.
  const stored = await store.read(key).catch((error: unknown) => {
    if (error instanceof StoreError && error.failure === "holds-a-set" && request.rate !== undefined) return undefined;
    throw error;
  });
  if (request.rate !== undefined) {
    // Pausing (rate 0) keeps the key's burst for when it resumes.
    const keepBurst = request.rate === 0 && stored?.kind === request.kind ? stored.burst : undefined;
    if (request.rate === 0 && request.kind === "bytes" && request.burst === undefined && keepBurst === undefined) throw pausedWithoutBurst();
    const burst = request.burst ?? keepBurst ?? defaultBurst(request.kind, request.rate);
    const config = await store.configure(key, { rate: request.rate, burst, kind: request.kind });
    if (stored) tellChange(key, stored, config);
    return config;
  }
  if (!stored) {
    const example = request.kind === "bytes" ? "1mb" : "5/s";
    throw new UsageError(
      `--key: "${key}" is not set in ${store.url}; give its rate once (--key ${key} --rate ${example}) or run: tbucket key set ${key} --rate ${example}`,
    );
  }
  if (stored.kind !== request.kind) {
    const want = request.kind === "bytes" ? "a byte rate" : "a count rate";
    throw new UsageError(
      `--key: "${key}" holds ${stored.kind === "bytes" ? "a byte rate" : "a count rate"} (${describeConfig(stored)}), and this needs ${want}; use another key, or give --rate to reset it`,
    );
  }
  if (request.burst !== undefined && request.burst !== stored.burst) {
    const config = await store.configure(key, { rate: stored.rate, burst: request.burst, kind: stored.kind });
    tellChange(key, stored, config);
    return config;
  }
  return stored;
}

/**
 * Other processes may be on the key: a new rate or burst given here changes
 * theirs too, so it is said, once, on standard error.
 */
function tellChange(key: string, before: BucketConfig, after: BucketConfig): void {
  const rateChanged = before.rate !== after.rate || before.kind !== after.kind;
  const burstChanged = before.burst !== after.burst || before.kind !== after.kind;
  if (!rateChanged && !burstChanged) return;
  const rate = `rate changed from ${humanRate(before.kind, before.rate)} to ${humanRate(after.kind, after.rate)}`;
  const burst = `burst${rateChanged ? "" : " changed"} from ${humanAmount(before.kind, before.burst)} to ${humanAmount(after.kind, after.burst)}`;
  const what = rateChanged && burstChanged ? "settings" : rateChanged ? "rate" : "burst";
  const changes = [rateChanged ? rate : "", burstChanged ? burst : ""].filter(Boolean).join(", ");
  process.stderr.write(`tbucket: key "${key}": ${changes}; every process on this key now shares the new ${what}\n`);
}

/** A new byte-rate key at rate 0 has no rate to size its default burst from (100 ms of it). */
export function pausedWithoutBurst(): UsageError {
  return new UsageError(`--rate: a new key paused at 0 needs --burst, since there is no rate to size it from; try "--rate 0 --burst 1mb", or give it a rate first`);
}

/** `1mib/s, burst 100kib` or `5/s, burst 1`: the exact resolved values. */
export function describeConfig(config: { rate: number; burst: number; kind: RateKind }): string {
  if (config.kind === "bytes") return `${formatByteRate(config.rate)}, burst ${formatByteSize(config.burst)}`;
  return `${formatCountRate(config.rate)}, burst ${config.burst}`;
}

function warn(message: string): void {
  process.stderr.write(`tbucket: warning: ${message}\n`);
}

function say(message: string): void {
  process.stderr.write(`tbucket: ${message}\n`);
}
