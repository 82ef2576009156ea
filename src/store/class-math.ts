import { type ClassPath, type ClassRefusal, ClassScheduler, type ClassState } from "../core/class-scheduler.js";
import { ClassDefinitionError, type ClassSpec } from "../core/class-spec.js";
import type { Clock } from "../core/clock.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";
import { StoreError } from "./bucket-store.js";
import type { LimitSetState } from "../core/limit-set.js";

/**
 * Classes kept on a shared key (design section 12), as the memory and
 * SQLite stores keep them beside the key's set: the definitions as given,
 * and each class's state (ClassScheduler's). A step loads a ClassScheduler
 * over the key's set and the classes, asks it at the store's time and keeps
 * the state after, so that every process sharing the key is served by one
 * scheduler, one atomic step per ask (the Redis script re-expresses the same
 * step in Lua).
 */
export interface StoredClasses {
  specs: ClassSpec[];
  lastMs: number;
  states: ClassState[];
}

/** What of a key's stored set the classes use (set-math's StoredSet, which holds them). */
interface StoredSet {
  limits: LimitSpec[];
  state: LimitSetState;
  classes?: StoredClasses;
}

/** A class as `key show` and readSet report it: its definition, resolved, and its use now. */
export interface ClassLevel {
  name: string;
  rate: number;
  ceil: number;
  prio: number;
  weight: number;
  burst: number;
  /** Its guarantee bucket's level. */
  level: number;
  /** What it was admitted lately, in the key's units a second. */
  usedRate: number;
}

/** What a class's ask answers. */
export interface ClassTakeResult {
  ok: boolean;
  /** Refused: how long until the class could be served if nothing else were taken (ask again then); Infinity never. 0 when ok. */
  waitMs: number;
  /** How it was served (ok), or why not. */
  path?: ClassPath;
  refusal?: ClassRefusal;
  /** The key's limits and classes at the ask, so that callers follow live changes. */
  limits: LimitSpec[];
  classes: ClassSpec[];
}

function standingAt(nowMs: number): Clock {
  return { now: () => nowMs, sleep: () => Promise.resolve() };
}

/** The key's scheduler standing at its stored state at `nowMs`. */
function schedulerAt(stored: StoredSet, classes: StoredClasses, nowMs: number): ClassScheduler {
  return new ClassScheduler(stored.limits, classes.specs, {
    clock: standingAt(nowMs),
    state: { lastMs: Math.max(classes.lastMs, stored.state.lastMs), parent: stored.state, classes: classes.states },
  });
}

/**
 * Checks that a set can carry classes: a bucket first to share, no concurrency limit (its slots are not the
 * classes'). The scheduler they make on it, with the classes resolved (what the Redis store keeps).
 */
export function checkClassesOn(limits: readonly LimitSpec[], specs: readonly ClassSpec[]): ClassScheduler {
  if (limits.some((spec) => spec.kind === "concurrency")) {
    throw new ClassDefinitionError("Classes share rates and windows; a key with a concurrency limit cannot have classes");
  }
  // The scheduler resolves them against the key's rate: Σ guarantees, ceils, names.
  return new ClassScheduler(limits, specs, { clock: standingAt(0) });
}

/**
 * The key's set with `classes` defined (null: none), at `nowMs`: a class
 * already defined keeps its state, a new one starts full. Throws
 * ClassDefinitionError for classes that do not fit the key's limits.
 */
export function configureClassesAt<S extends StoredSet>(stored: S, nowMs: number, classes: readonly ClassSpec[] | null): S {
  if (classes === null) {
    const { classes: _dropped, ...rest } = stored;
    return rest as S;
  }
  checkClassesOn(stored.limits, classes);
  const specs = classes.map((spec) => ({ ...spec }));
  const before = stored.classes;
  if (!before) return { ...stored, classes: { specs, lastMs: nowMs, states: [] } };
  const scheduler = new ClassScheduler(stored.limits, specs, {
    clock: standingAt(nowMs),
    state: { lastMs: Math.max(before.lastMs, stored.state.lastMs), parent: stored.state, classes: before.states },
  });
  const state = scheduler.state();
  return { ...stored, classes: { specs, lastMs: state.lastMs, states: state.classes } };
}

/** Checks that the classes a key keeps still fit its new limits (a key set with a lower rate): a ClassDefinitionError if not. */
export function checkKeptClasses(stored: StoredSet): void {
  if (stored.classes) checkClassesOn(stored.limits, stored.classes.specs);
}

/**
 * Class `name`'s ask for `costs` at `nowMs`: admitted within its guarantee
 * or as a loan, or refused with how long until it could be. The set to
 * store either way (a refusal leaves the class's mark). Throws
 * UnknownClassError for a class the key does not define; undefined when the
 * key has no classes.
 */
export function takeClassAt<S extends StoredSet>(stored: S, nowMs: number, name: string, costs: Costs): { result: ClassTakeResult; next: S } | undefined {
  const classes = stored.classes;
  if (!classes) return undefined;
  const scheduler = schedulerAt(stored, classes, nowMs);
  const c = scheduler.classIndex(name);
  const ok = scheduler.allowAt(nowMs, c, costs);
  const waitMs = ok ? 0 : Math.max(0, scheduler.earliestAt(nowMs, c, costs) - nowMs);
  const state = scheduler.state();
  const result: ClassTakeResult = {
    ok,
    waitMs,
    ...(ok ? { path: scheduler.lastPath } : { refusal: scheduler.lastRefusal }),
    limits: stored.limits.map((spec) => ({ ...spec })),
    classes: classes.specs.map((spec) => ({ ...spec })),
  };
  const next: S = { ...stored, state: state.parent, classes: { specs: classes.specs, lastMs: state.lastMs, states: state.classes } };
  return { result, next };
}

/** Each class of the key and its use at `nowMs`; undefined without classes. */
export function classLevelsOf(stored: StoredSet, nowMs: number): ClassLevel[] | undefined {
  if (!stored.classes) return undefined;
  const scheduler = schedulerAt(stored, stored.classes, nowMs);
  const t = Math.max(nowMs, stored.classes.lastMs, stored.state.lastMs);
  return scheduler.classes.map((c, i) => ({
    name: c.name,
    rate: c.rate,
    ceil: c.ceil,
    prio: c.prio,
    weight: c.weight,
    burst: c.burst,
    level: scheduler.guaranteeLevelAt(t, i),
    usedRate: scheduler.usedRateAt(t, i),
  }));
}

/** What a take that names no class gets from a key with classes, and an ask naming a class from a key without. */
export function classesError(storeUrl: string, key: string, defined: readonly string[] | undefined): StoreError {
  const why =
    defined === undefined
      ? `key ${key} has no classes; define them with tbucket key set ${key} --class NAME=RATE, or take without --class`
      : `key ${key} is shared by classes (${defined.join(", ")}); name one with --class`;
  return new StoreError("classes", `store ${storeUrl}: ${why}`, { storeUrl, key });
}
