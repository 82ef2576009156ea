import { createHash, randomUUID } from "node:crypto";
import type { Cluster, Redis as RedisClient } from "ioredis";
import type { ClassPath, ClassRefusal } from "../core/class-scheduler.js";
import { type ClassSpec, UnknownClassError } from "../core/class-spec.js";
import type { Clock } from "../core/clock.js";
import { checkLimitSpecs, type Costs, type LimitSpec, MAX_LIMITS } from "../core/limit-spec.js";
import { type ConfigureOptions, FULL_KEY_MARGIN_MS, StoreError } from "./bucket-store.js";
import { checkClassesOn, classesError, type ClassTakeResult } from "./class-math.js";
import {
  checkLease,
  checkSetReservation,
  checkSetTake,
  DEFAULT_SLOT_LEASE_MS,
  type LimitLevel,
  type LimitSetStore,
  matchLimits,
  sameLimits,
  type SetReservation,
  type SetState,
  type SetTakeOptions,
  type SetTakeResult,
} from "./limit-set-store.js";
import { classDefsText, classLevelsOfReply, classNamesText } from "./redis-class-script.js";
import { SET_SCRIPT } from "./redis-set-script.js";
import { DEFAULT_IDLE_EXPIRY_MS, redisKeyOf, scanTbucketKeys, writeRefusal } from "./redis-layout.js";

/** Where a key's windows and concurrency holders live: one sorted set per limit, the key's name their hash tag. */
const LIMIT_KEY_PREFIX = "tbucket-set:";

/**
 * The sorted set of a key's i-th limit (from 1): `tbucket-set:{NAME}:i`, in
 * the slot of `tbucket:{NAME}`, and outside the `tbucket:*` keys that
 * BucketStore's `list` reads as buckets.
 */
export function limitRedisKeyOf(key: string, index: number): string {
  return `${LIMIT_KEY_PREFIX}{${key}}:${index}`;
}

export interface RedisSetStoreOptions {
  /** The store's address as messages show it (password hidden). */
  url: string;
  /** A fake clock for tests; by default the script reads the server's clock. */
  clock?: Clock;
  /** A key full and untouched this long is forgotten (RedisStore's idleExpiryMs). */
  idleExpiryMs?: number;
  /** The same for keys made with `expireWhenFull`. */
  fullKeyMarginMs?: number;
  /** The hash of a key: where the store's BucketStore keeps a one-bucket key (`tbucket:{NAME}` by default). */
  keyOf?: (key: string) => string;
}

/** A script reply that asks again: the key's set, which the caller did not know. */
interface Stale {
  stale: LimitSpec[];
}

/**
 * Limit sets in Redis (LimitSetStore): every operation one call of
 * SET_SCRIPT (EVALSHA, the whole script after NOSCRIPT) on the key's hash
 * and its limits' sorted sets, on the server's clock. A caller knows a
 * key's number of limits only from an earlier answer, so a call may pass too
 * few limit keys (a key it has not seen, a set changed since): the script
 * then answers with the set, and the call is made again, once. It shares
 * the connection of the store's RedisStore.
 */
export class RedisSetStore implements LimitSetStore {
  readonly url: string;
  readonly #client: RedisClient | Cluster;
  readonly #clock: Clock | undefined;
  readonly #idleExpiryMs: number;
  readonly #fullKeyMarginMs: number;
  readonly #keyOf: (key: string) => string;
  readonly #sha = createHash("sha1").update(SET_SCRIPT).digest("hex");
  /** How many limits each key was last seen with: the limit keys to pass. */
  readonly #sizes = new Map<string, number>();

  constructor(client: RedisClient | Cluster, options: RedisSetStoreOptions) {
    this.#client = client;
    this.url = options.url;
    this.#clock = options.clock;
    this.#idleExpiryMs = options.idleExpiryMs ?? DEFAULT_IDLE_EXPIRY_MS;
    this.#fullKeyMarginMs = options.fullKeyMarginMs ?? FULL_KEY_MARGIN_MS;
    this.#keyOf = options.keyOf ?? redisKeyOf;
  }

  /**
   * Sets the key's limits. A key with classes keeps them: the script names them (nothing written), they
   * are checked against the new limits here (a ClassDefinitionError when they no longer fit), and the
   * call is made again with them resolved, the script writing only if the classes are still those.
   */
  async configureSet(key: string, limits: readonly LimitSpec[], options?: ConfigureOptions): Promise<SetState> {
    checkLimitSpecs(limits);
    let classes = ["", ""];
    for (let attempt = 0; ; attempt++) {
      const reply = (await this.#run(key, MAX_LIMITS, ["configure", options?.expireWhenFull ? "1" : "0", String(limits.length), ...specFields(limits), ...classes])) as string[];
      if (reply[0] !== "checkclasses") return this.#stateOf(key, reply);
      if (attempt > 2) throw this.#failed(key, "its classes kept changing while its limits were set");
      const specs = reply[1]!;
      classes = [specs, classDefsText(checkClassesOn(limits, JSON.parse(specs) as ClassSpec[]))];
    }
  }

  /**
   * Defines the key's classes (null: none). They are resolved against the key's limits, which the
   * script names first (nothing written); it writes them only if the limits are still those.
   */
  async configureClasses(key: string, classes: readonly ClassSpec[] | null): Promise<SetState | undefined> {
    if (classes === null) {
      const reply = await this.#ask(key, () => ["classes", ""]);
      return reply && this.#stateOf(key, reply);
    }
    const specs = JSON.stringify(classes);
    let args = ["classes", specs, "", "", "0"];
    for (let attempt = 0; ; attempt++) {
      const reply = await this.#ask(key, () => args);
      if (reply === undefined) return undefined;
      if (reply[0] !== "limits") return this.#stateOf(key, reply);
      if (attempt > 2) throw this.#failed(key, "its limits kept changing while its classes were set");
      const { limits } = specsOf(reply, 1);
      const scheduler = checkClassesOn(limits, classes);
      args = ["classes", specs, classNamesText(scheduler), classDefsText(scheduler), String(limits.length), ...specFields(limits)];
    }
  }

  async takeClass(key: string, className: string, costs: Costs): Promise<ClassTakeResult | undefined> {
    checkSetTake(costs, undefined);
    const reply = await this.#ask(key, () => ["class", className, ...costFields(costs)]);
    if (reply === undefined) return undefined;
    if (reply[0] === "noclasses") throw classesError(this.url, key, undefined);
    if (reply[0] === "unknown") throw new UnknownClassError(className, reply[1]!.split(","));
    const [, ok, waitMs, how] = reply;
    const { limits, next } = specsOf(reply, 4);
    const served = ok === "1" ? { path: how as ClassPath } : { refusal: how as ClassRefusal };
    return { ok: ok === "1", waitMs: numberOf(waitMs!), ...served, limits, classes: JSON.parse(reply[next]!) as ClassSpec[] };
  }

  async takeSet(key: string, costs: Costs, options: SetTakeOptions = {}): Promise<SetTakeResult | undefined> {
    checkSetTake(costs, options);
    const holder = options.holder ?? randomUUID();
    const args = ["take", numberText(options.maxWaitMs ?? Infinity), holder, String(options.leaseMs ?? DEFAULT_SLOT_LEASE_MS), ...costFields(costs)];
    const reply = await this.#ask(key, () => args);
    if (reply === undefined) return undefined;
    if (reply[0] === "hasclasses") throw classesError(this.url, key, reply[1]!.split(","));
    const [, ok, waitMs, timeToActMs, limitedBy, noSlot] = reply;
    const { limits, next } = specsOf(reply, 6);
    const result: SetTakeResult = {
      ok: ok === "1",
      waitMs: numberOf(waitMs!),
      timeToActMs: numberOf(timeToActMs!),
      limitedBy: limitedBy === "" ? [] : limitedBy!.split(",").map(Number),
      noSlot: noSlot === "1",
      limits,
    };
    if (!result.ok) return result;
    const column = (c: number) => limits.map((_, i) => numberOf(reply[next + c * limits.length + i]!));
    result.reservation = { timeToActMs: result.timeToActMs, limits, amounts: column(0), bucketRates: column(1), bucketTaken: column(2), bucketLevels: column(3) };
    if (limits.some((spec) => spec.kind === "concurrency")) result.reservation.holder = holder;
    return result;
  }

  async cancelSet(key: string, reservation: SetReservation): Promise<true | undefined> {
    checkSetReservation(reservation);
    return (await this.#handBack(key, reservation, "cancel", [])) && true;
  }

  async settleSet(key: string, reservation: SetReservation, actualCosts: Costs): Promise<SetReservation | undefined> {
    checkSetReservation(reservation);
    checkSetTake(actualCosts, undefined);
    const answer = await this.#handBack(key, reservation, "settle", costFields(actualCosts));
    if (!answer) return undefined;
    const { reply, from } = answer;
    const count = from.length;
    const settled: SetReservation = { ...reservation, amounts: [...reservation.amounts], bucketTaken: [...reservation.bucketTaken], bucketLevels: [...reservation.bucketLevels] };
    from.forEach((j, i) => {
      if (j < 0) return;
      settled.amounts[j] = numberOf(reply[1 + i]!);
      settled.bucketTaken[j] = numberOf(reply[1 + count + i]!);
      settled.bucketLevels[j] = numberOf(reply[1 + 2 * count + i]!);
    });
    return settled;
  }

  async releaseSet(key: string, reservation: SetReservation): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    const reply = await this.#ask(key, () => ["release", reservation.holder ?? ""]);
    return reply && reply[1] === "1";
  }

  async renewSet(key: string, reservation: SetReservation, leaseMs = DEFAULT_SLOT_LEASE_MS): Promise<boolean | undefined> {
    checkSetReservation(reservation);
    checkLease(leaseMs);
    const reply = await this.#ask(key, () => ["renew", reservation.holder ?? "", String(leaseMs)]);
    return reply && reply[1] === "1";
  }

  async readSet(key: string): Promise<SetState | undefined> {
    const reply = await this.#ask(key, () => ["read"]);
    return reply && this.#stateOf(key, reply);
  }

  async listSets(): Promise<SetState[]> {
    let keys: string[];
    try {
      keys = await scanTbucketKeys(this.#client);
    } catch (error) {
      throw this.#error(error);
    }
    const states = await Promise.all(keys.map((key) => this.readSet(key)));
    return states.filter((state): state is SetState => state !== undefined);
  }

  async deleteSet(key: string): Promise<boolean> {
    this.#sizes.delete(key);
    const limitKeys = Array.from({ length: MAX_LIMITS }, (_, i) => limitRedisKeyOf(key, i + 1));
    try {
      // Two calls, not one DEL: the hash and the sorted sets share a slot only where the hash carries the tag.
      const deleted = await this.#client.del(this.#keyOf(key));
      await this.#client.del(...limitKeys);
      return deleted > 0;
    } catch (error) {
      throw this.#error(error);
    }
  }

  /**
   * Cancels or settles: the reservation's set must be the key's; when the
   * key's set changed since the take, the reservation is moved onto it
   * (matchLimits, as the memory and SQLite stores do) and asked again. The
   * reply, and for each limit of the key's set the index in `reservation`.
   */
  async #handBack(key: string, reservation: SetReservation, op: "cancel" | "settle", tail: string[]): Promise<{ reply: string[]; from: number[] } | undefined> {
    let limits = reservation.limits;
    let from = limits.map((_, i) => i);
    for (let attempt = 0; ; attempt++) {
      const pick = (values: number[]) => from.map((j) => numberText(j < 0 ? 0 : values[j]!));
      const numbers = [...pick(reservation.amounts), ...pick(reservation.bucketRates), ...pick(reservation.bucketTaken), ...pick(reservation.bucketLevels)];
      const args = [op, numberText(reservation.timeToActMs), reservation.holder ?? "", String(limits.length), ...specFields(limits), ...numbers, ...tail];
      const reply = await this.#run(key, Math.max(limits.length, this.#sizes.get(key) ?? 0), args);
      if (reply === null) return undefined;
      if (!isStale(reply)) return { reply: reply as string[], from };
      const stale = specsOf(reply as string[], 1).limits;
      this.#sizes.set(key, stale.length);
      if (attempt > 0 && sameLimits(stale, limits)) throw this.#failed(key, "the script refused the key's own set");
      limits = stale;
      from = matchLimits(reservation.limits, stale);
    }
  }

  /** Runs an operation on a key, asking again once with the key's size when the script says it passed too few limit keys. */
  async #ask(key: string, args: () => string[]): Promise<string[] | undefined> {
    for (let attempt = 0; ; attempt++) {
      const size = this.#sizes.get(key);
      const reply = await this.#run(key, size ?? MAX_LIMITS, args());
      if (reply === null) return undefined;
      if (!isStale(reply)) return reply as string[];
      const stale = specsOf(reply as string[], 1).limits.length;
      if (attempt > 0 || stale === size) throw this.#failed(key, "the script asked again for limits it was given");
      this.#sizes.set(key, stale);
    }
  }

  /** One script call on the key's hash and its first `limits` limit keys. */
  async #run(key: string, limits: number, args: string[]): Promise<unknown> {
    const [operation, ...rest] = args;
    const keys = [this.#keyOf(key), ...Array.from({ length: limits }, (_, i) => limitRedisKeyOf(key, i + 1))];
    const argv = [operation!, this.#clock ? numberText(this.#clock.now()) : "", String(this.#idleExpiryMs), String(this.#fullKeyMarginMs), String(limits), ...rest];
    let reply: unknown;
    try {
      try {
        reply = await this.#client.evalsha(this.#sha, keys.length, ...keys, ...argv);
      } catch (error) {
        if (!String((error as Error).message).startsWith("NOSCRIPT")) throw error;
        reply = await this.#client.eval(SET_SCRIPT, keys.length, ...keys, ...argv);
      }
    } catch (error) {
      throw this.#error(error, key);
    }
    // Takes, reads and configures answer with the key's set: its size is what to pass next time.
    const sizeAt = operation === "take" ? 6 : operation === "class" ? 4 : operation === "read" || operation === "configure" || operation === "classes" ? 3 : undefined;
    if (sizeAt !== undefined && Array.isArray(reply) && reply[0] === "ok") this.#remember(key, Number(reply[sizeAt]));
    return reply;
  }

  #remember(key: string, size: number): void {
    if (!Number.isInteger(size) || size < 1) return;
    // Bounded: a proxy's per-client keys would grow it for ever; forgetting costs one call asked again.
    if (this.#sizes.size >= SIZES_KEPT && !this.#sizes.has(key)) this.#sizes.clear();
    this.#sizes.set(key, size);
  }

  #stateOf(key: string, reply: string[]): SetState {
    const [, lastMs, implicit] = reply;
    const { limits, next } = specsOf(reply, 3);
    const state: SetState = {
      key,
      limits: limits.map((spec, i): LimitLevel => ({ ...spec, level: numberOf(reply[next + i]!) })),
      updatedAtMs: numberOf(lastMs!),
    };
    if (implicit === "1") state.expiresWhenFull = true;
    const classes = classLevelsOfReply(reply, next + limits.length);
    if (classes) state.classes = classes;
    return state;
  }

  #error(error: unknown, key?: string): StoreError {
    const refused = writeRefusal(error);
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!.replace(/\. script: .*$/, "");
    if (refused) return new StoreError("refused", `store ${this.url}: ${refused}`, { storeUrl: this.url, key, cause: error });
    return new StoreError("lost", `store ${this.url}: lost Redis (${message})`, { storeUrl: this.url, key, cause: error });
  }

  #failed(key: string, why: string): StoreError {
    return new StoreError("failed", `store ${this.url}: key ${key}: ${why}`, { storeUrl: this.url, key });
  }
}

/** How many keys' sizes a store remembers. */
const SIZES_KEPT = 10_000;

function isStale(reply: unknown): reply is string[] {
  return Array.isArray(reply) && reply[0] === "stale";
}

/** An item's costs as the script reads them: how many, then unit and cost. */
function costFields(costs: Costs): string[] {
  const pairs = Object.entries(costs).flatMap(([unit, cost]) => [unit, numberText(cost!)]);
  return [String(pairs.length / 2), ...pairs];
}

/** A set as the script takes and gives it: four fields a limit (kind, unit, rate or n, burst or window ms). */
function specFields(limits: readonly LimitSpec[]): string[] {
  return limits.flatMap((spec) => {
    if (spec.kind === "bucket") return ["bucket", spec.unit, numberText(spec.rate), numberText(spec.burst)];
    if (spec.kind === "window") return ["window", spec.unit, numberText(spec.n), numberText(spec.windowMs)];
    return ["concurrency", "", numberText(spec.n), ""];
  });
}

/** The set in a reply from `at` (its count, then four fields a limit), and where the reply goes on. */
function specsOf(reply: string[], at: number): { limits: LimitSpec[]; next: number } {
  const count = Number(reply[at]);
  const limits: LimitSpec[] = [];
  for (let i = 0; i < count; i++) {
    const [kind, unit, a, b] = reply.slice(at + 1 + 4 * i, at + 5 + 4 * i) as [string, string, string, string];
    if (kind === "bucket") limits.push({ kind, unit, rate: numberOf(a), burst: numberOf(b) });
    else if (kind === "window") limits.push({ kind, unit, n: numberOf(a), windowMs: numberOf(b) });
    else limits.push({ kind: "concurrency", n: numberOf(a) });
  }
  return { limits, next: at + 1 + 4 * count };
}

function numberText(value: number): string {
  return value === Infinity ? "inf" : value === -Infinity ? "-inf" : String(value);
}

function numberOf(text: string): number {
  return text === "inf" ? Infinity : text === "-inf" ? -Infinity : Number(text);
}
