import { createHash } from "node:crypto";
import type { Cluster, Redis as RedisClient, RedisOptions } from "ioredis";
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
  type StoreReservation,
  type TakeOptions,
  type TakeRequest,
  type TakeResult,
} from "./bucket-store.js";
import type { ClassSpec } from "../core/class-spec.js";
import type { Costs, LimitSpec } from "../core/limit-spec.js";
import { classesError, type ClassTakeResult } from "./class-math.js";
import { heldAsSetError, type LimitSetStore, type SetReservation, type SetState, type SetTakeOptions, type SetTakeResult } from "./limit-set-store.js";
import { BUCKET_SCRIPT } from "./redis-script.js";
import { DEFAULT_IDLE_EXPIRY_MS, legacyRedisKeyOf, reason, redisKeyOf, scanTbucketKeys, writeRefusal } from "./redis-layout.js";
import { RedisSetStore } from "./redis-set-store.js";
import { parseRedisUrl, redactUrl } from "./redis-url.js";

export { redactUrl };
export { DEFAULT_IDLE_EXPIRY_MS, keyOfRedisKey, REDIS_KEY_PREFIX, redisKeyOf, writeRefusal } from "./redis-layout.js";


export interface RedisStoreOptions {
  /** A fake clock for tests; by default the script reads the server's clock. */
  clock?: Clock;
  idleExpiryMs?: number;
  /** The same for keys made with `expireWhenFull` (tests shorten it). */
  fullKeyMarginMs?: number;
  /** How long to try to reach the server at the start. */
  connectTimeoutMs?: number;
  /** How long one operation may take before the store counts as lost. */
  commandTimeoutMs?: number;
}

/**
 * Buckets in Redis, shared by processes on many machines. Every operation is
 * one Lua script on one key (EVALSHA, running the script whole after
 * NOSCRIPT), run on the server's clock; several takes of one key may share
 * one call (`takeMany`). An address of a Redis Cluster node (INFO says
 * cluster_enabled:1) opens the whole cluster: each key goes to the master
 * of its slot, and `list` asks every master.
 */
export class RedisStore implements BucketStore, LimitSetStore {
  readonly url: string;
  readonly #client: RedisClient | Cluster;
  readonly #cluster: boolean;
  readonly #clock: Clock | undefined;
  readonly #idleExpiryMs: number;
  readonly #fullKeyMarginMs: number;
  readonly #sha = createHash("sha1").update(BUCKET_SCRIPT).digest("hex");
  /** The limit sets, one script call each, on the same connection. */
  readonly #sets: RedisSetStore;

  /** False for a client the caller gave (fromClient): it stays theirs to quit. */
  readonly #ownsClient: boolean;

  private constructor(client: RedisClient | Cluster, url: string, options: RedisStoreOptions, ownsClient = true) {
    this.#client = client;
    this.#ownsClient = ownsClient;
    this.#cluster = "nodes" in client;
    this.url = url;
    this.#clock = options.clock;
    this.#idleExpiryMs = options.idleExpiryMs ?? DEFAULT_IDLE_EXPIRY_MS;
    this.#fullKeyMarginMs = options.fullKeyMarginMs ?? FULL_KEY_MARGIN_MS;
    this.#sets = new RedisSetStore(client, { url, clock: options.clock, idleExpiryMs: this.#idleExpiryMs, fullKeyMarginMs: this.#fullKeyMarginMs });
  }

  /**
   * Connects to `redis://` or `rediss://`, selects the database the path
   * names and loads the script; a malformed URL is a StoreUrlError, every
   * other failure a one-line StoreError.
   */
  static async open(url: string, options: RedisStoreOptions = {}): Promise<RedisStore> {
    const shown = redactUrl(url);
    const address = parseRedisUrl(url);
    const { Redis } = await import("ioredis");
    const connectTimeoutMs = options.connectTimeoutMs ?? 3000;
    let connected = false;
    const clientOptions = {
      connectTimeout: connectTimeoutMs,
      commandTimeout: options.commandTimeoutMs ?? 3000,
      maxRetriesPerRequest: 2,
      // After a failed connection the socket never closes again, and ioredis would keep a 2 s timer waiting for it.
      disconnectTimeout: 100,
    };
    // At the start, fail at once; mid-run, reconnect for as long as the store is open, at most
    // RECONNECT_MAX_MS apart, so a Redis back from a restart is found within that (StoreWatch probes meanwhile).
    const retryStrategy = (times: number): number | null => (!connected ? null : Math.min(times * 100, RECONNECT_MAX_MS));
    const client = new Redis(address.serverUrl, { ...clientOptions, lazyConnect: true, retryStrategy });
    // Failures reach callers through rejected commands; without a listener ioredis prints them.
    let lastError: unknown;
    client.on("error", (error: unknown) => (lastError = error));
    const failed = (error: unknown, refused: string | undefined, problem: string): StoreError => {
      const why = refused ?? `${problem}; check the address and that Redis runs there`;
      return new StoreError(refused ? "refused" : "unreachable", `store ${shown}: ${why}`, { storeUrl: shown, cause: error });
    };
    try {
      await client.connect();
      connected = true;
    } catch (error) {
      client.disconnect();
      throw failed(error, refusal(lastError ?? error), `cannot reach Redis (${reason(lastError ?? error)})`);
    }
    let cluster: Cluster | undefined;
    try {
      if (await isClusterNode(client)) {
        if (address.database !== 0) {
          throw new StoreError("refused", `store ${shown}: Redis Cluster has database 0 only; write the address without a database, as in ${redactUrl(address.serverUrl)}`, {
            storeUrl: shown,
          });
        }
        const state = /^cluster_state:(\w+)/m.exec(String(await client.cluster("INFO")))?.[1];
        if (state !== "ok") {
          throw new StoreError(
            "unreachable",
            `store ${shown}: Redis Cluster is not serving (cluster_state:${state ?? "unknown"}); check that every slot is served (redis-cli --cluster check HOST:PORT)`,
            { storeUrl: shown },
          );
        }
        cluster = await openCluster(address.serverUrl, clientOptions);
      } else {
        // Asked here, not left to the client's handshake: that one ignores a refused SELECT and stays on database 0.
        if (address.database !== 0) await client.select(address.database);
        await client.script("LOAD", BUCKET_SCRIPT);
      }
    } catch (error) {
      client.disconnect();
      if (error instanceof StoreError) throw error;
      throw failed(error, databaseRefusal(error, address.database) ?? refusal(error), reason(error));
    }
    if (cluster) client.disconnect();
    return new RedisStore(cluster ?? client, shown, options);
  }

  /**
   * A store on a client of the caller's own (an ioredis Redis, or a Cluster,
   * or one made for Sentinel): its connection, options and retries are
   * theirs, and `close()` leaves it open. Waits for it to be ready, and
   * loads the script (on every master of a cluster). Give the client a
   * `commandTimeout` (and a small `maxRetriesPerRequest`), or a lost Redis
   * holds requests as long as the client queues them instead of failing them.
   */
  static async fromClient(client: RedisClient | Cluster, options: Omit<RedisStoreOptions, "connectTimeoutMs" | "commandTimeoutMs"> = {}): Promise<RedisStore> {
    const cluster = "nodes" in client;
    const shown = clientUrl(client);
    // What the connection met: a refused connection shows as "connection closed" to the caller of connect().
    let lastError: unknown;
    const onError = (error: unknown) => (lastError = error);
    client.on("error", onError);
    try {
      // Ended (quit or disconnected by its owner) it will never be ready: said at once rather than waited for.
      if (client.status === "end" || client.status === "close") throw new Error(`the client's connection is closed (status ${client.status})`);
      if (client.status === "wait") await client.connect();
      else if (client.status !== "ready") await new Promise<void>((resolve, reject) => {
        const ready = () => {
          client.off("end", ended);
          resolve();
        };
        const ended = () => {
          client.off("ready", ready);
          reject(new Error("the client's connection ended"));
        };
        client.once("ready", ready);
        client.once("end", ended);
      });
      if (cluster) await Promise.all(client.nodes("master").map((node) => node.script("LOAD", BUCKET_SCRIPT)));
      else await client.script("LOAD", BUCKET_SCRIPT);
    } catch (error) {
      throw new StoreError("unreachable", `store ${shown}: the Redis client given is not ready (${reason(lastError ?? error)}); check its address, or wait for its "ready" event`, {
        storeUrl: shown,
        cause: error,
      });
    } finally {
      client.off("error", onError);
    }
    return new RedisStore(client, shown, options, false);
  }

  take(key: string, n: number, options?: TakeOptions): Promise<TakeResult | undefined> {
    return this.takeMany(key, [{ n, options }]).then((results) => results?.[0]);
  }

  /** Several takes in one script call (one EVALSHA, one save), answered in order. */
  takeMany(key: string, takes: readonly TakeRequest[]): Promise<TakeResult[] | undefined> {
    const args = ["take"];
    try {
      for (const { n, options } of takes) {
        checkTake(n, options);
        args.push(String(n), numberText(options?.maxWaitMs ?? Infinity), options?.overBurst ? "1" : "0");
      }
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#run(key, args, takeResults);
  }

  async cancel(key: string, reservation: StoreReservation): Promise<number | undefined> {
    checkCancel(reservation);
    return this.#run(key, ["cancel", String(reservation.n), numberText(reservation.timeToActMs)], (reply: string[]) => numberOf(reply[0]!));
  }

  async read(key: string): Promise<BucketState | undefined> {
    return this.#run(key, ["read"], (reply: string[]) => stateOf(key, reply));
  }

  configure(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState> {
    return this.#configure("configure", key, config, options);
  }

  /** The key as the store holds it in `config`'s kind, else made as configure makes it: one script call, where reading and then configuring were two. */
  open(key: string, config: BucketConfig, options?: ConfigureOptions): Promise<BucketState> {
    return this.#configure("open", key, config, options);
  }

  async #configure(operation: "configure" | "open", key: string, config: BucketConfig, options: ConfigureOptions | undefined): Promise<BucketState> {
    checkConfig(config);
    const state = await this.#run(key, [operation, numberText(config.rate), numberText(config.burst), config.kind, options?.expireWhenFull ? "1" : "0"], (reply: string[]) =>
      stateOf(key, reply),
    );
    return state!;
  }

  async list(): Promise<BucketState[]> {
    let keys: string[];
    try {
      keys = await scanTbucketKeys(this.#client);
    } catch (error) {
      throw this.#error(error);
    }
    // A key holding a set of several limits, or classes, is listed by listSets, not here.
    const setsOnly = (error: unknown) => error instanceof StoreError && (error.failure === "holds-a-set" || error.failure === "classes");
    const readBucket = (key: string) => this.read(key).catch((error) => (setsOnly(error) ? undefined : Promise.reject(error)));
    const states = await Promise.all(keys.map(readBucket));
    return states.filter((state): state is BucketState => state !== undefined);
  }

  async delete(key: string): Promise<boolean> {
    try {
      const deleted = (await this.#client.del(...this.#redisKeys(key))) > 0;
      // A set's windows and holders too.
      return (await this.#sets.deleteSet(key)) || deleted;
    } catch (error) {
      throw error instanceof StoreError ? error : this.#error(error);
    }
  }

  configureSet(key: string, limits: readonly LimitSpec[], options?: ConfigureOptions): Promise<SetState> {
    return this.#sets.configureSet(key, limits, options);
  }

  takeSet(key: string, costs: Costs, options?: SetTakeOptions): Promise<SetTakeResult | undefined> {
    return this.#sets.takeSet(key, costs, options);
  }

  cancelSet(key: string, reservation: SetReservation): Promise<true | undefined> {
    return this.#sets.cancelSet(key, reservation);
  }

  settleSet(key: string, reservation: SetReservation, actualCosts: Costs): Promise<SetReservation | undefined> {
    return this.#sets.settleSet(key, reservation, actualCosts);
  }

  releaseSet(key: string, reservation: SetReservation): Promise<boolean | undefined> {
    return this.#sets.releaseSet(key, reservation);
  }

  renewSet(key: string, reservation: SetReservation, leaseMs?: number): Promise<boolean | undefined> {
    return this.#sets.renewSet(key, reservation, leaseMs);
  }

  configureClasses(key: string, classes: readonly ClassSpec[] | null): Promise<SetState | undefined> {
    return this.#sets.configureClasses(key, classes);
  }

  takeClass(key: string, className: string, costs: Costs): Promise<ClassTakeResult | undefined> {
    return this.#sets.takeClass(key, className, costs);
  }

  readSet(key: string): Promise<SetState | undefined> {
    return this.#sets.readSet(key);
  }

  listSets(): Promise<SetState[]> {
    return this.#sets.listSets();
  }

  deleteSet(key: string): Promise<boolean> {
    return this.delete(key);
  }

  /** The key's Redis key, and on a standalone Redis where an earlier release kept it (two slots: not on a cluster). */
  #redisKeys(key: string): string[] {
    return this.#cluster ? [redisKeyOf(key)] : [redisKeyOf(key), legacyRedisKeyOf(key)];
  }

  async close(): Promise<void> {
    if (!this.#ownsClient) return;
    // A client still reconnecting to a lost server would queue the QUIT until the server is back.
    if (this.#client.status !== "ready") {
      this.#client.disconnect();
      return;
    }
    try {
      await this.#client.quit();
    } catch {
      this.#client.disconnect();
    }
  }

  /**
   * Runs the script on one key, whole if the server lost it (restart, SCRIPT
   * FLUSH, a new master): EVAL caches it again. `parse` reads a reply that is
   * not nil. One promise on the client's: this is every decision's path.
   */
  #run<T>(key: string, args: string[], parse: (reply: never) => T): Promise<T | undefined> {
    const [operation, ...rest] = args;
    const argv = [operation!, this.#clock ? numberText(this.#clock.now()) : "", String(this.#idleExpiryMs), String(this.#fullKeyMarginMs), ...rest];
    // A take finds a key in use at its name; one kept by an older release is moved there by the open or
    // configure that a take of a missing key leads to, so a take need not name (nor send) where it was.
    const keys = operation === "take" ? [redisKeyOf(key)] : this.#redisKeys(key);
    const answered = (reply: unknown): T | undefined => (reply === null ? undefined : parse(reply as never));
    const answeredAfterRestart = (reply: unknown): T | undefined => {
      // A server without the script has restarted: a key in use missing from it was lost with it, not deleted
      // (a restart quicker than the client's retries shows no other sign), so its users make it again.
      if (reply === null && operation !== "read") {
        throw new StoreError("restarted", `store ${this.url}: lost Redis (it restarted without the key)`, { storeUrl: this.url, key });
      }
      return answered(reply);
    };
    const failed = (error: unknown): never => {
      const held = /^TBUCKET_SET (\d+)/.exec(String((error as Error)?.message));
      if (held) throw heldAsSetError(this.url, key, Number(held[1]));
      const shared = /^TBUCKET_CLASSES (\S+)/.exec(String((error as Error)?.message));
      if (shared) throw classesError(this.url, key, shared[1]!.split(","));
      throw this.#error(error);
    };
    return this.#client.evalsha(this.#sha, keys.length, ...keys, ...argv).then(answered, (error: unknown) => {
      if (!String((error as Error)?.message).startsWith("NOSCRIPT")) return failed(error);
      return this.#client.eval(BUCKET_SCRIPT, keys.length, ...keys, ...argv).then(answeredAfterRestart, failed);
    });
  }

  #error(error: unknown): StoreError {
    const refused = writeRefusal(error);
    if (refused) return new StoreError("refused", `store ${this.url}: ${refused}`, { storeUrl: this.url, cause: error });
    return new StoreError("lost", `store ${this.url}: lost Redis (${reason(error)})`, { storeUrl: this.url, cause: error });
  }
}

/** The longest pause between two attempts to reconnect to a Redis lost mid-run. */
const RECONNECT_MAX_MS = 250;

/** Whether the server is a Redis Cluster node; a user who may not run INFO is taken to be on a standalone Redis. */
/** How a client given by the caller is named in messages: its first node's address, without a password. */
function clientUrl(client: RedisClient | Cluster): string {
  if ("nodes" in client) {
    const first = client.nodes("master")[0]?.options;
    return `redis://${first?.host ?? "127.0.0.1"}:${first?.port ?? 6379} (cluster)`;
  }
  const { host = "127.0.0.1", port = 6379, db = 0 } = client.options;
  return `redis://${host}:${port}${db ? `/${db}` : ""}`;
}

async function isClusterNode(client: RedisClient): Promise<boolean> {
  let info: string;
  try {
    info = await client.info("cluster");
  } catch (error) {
    if (/^NOPERM\b/.test(reason(error))) return false;
    throw error;
  }
  return /^cluster_enabled:1\b/m.test(info);
}

/** Connects to the cluster that the node at `serverUrl` belongs to, and loads the script on every master. */
async function openCluster(serverUrl: string, clientOptions: RedisOptions): Promise<Cluster> {
  const { Cluster } = await import("ioredis");
  const url = new URL(serverUrl);
  let connected = false;
  const cluster = new Cluster([{ host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 6379) }], {
    lazyConnect: true,
    // As for one server: fail at once at the start, reconnect for as long as the store is open.
    clusterRetryStrategy: (times) => (!connected ? null : Math.min(times * 100, RECONNECT_MAX_MS)),
    slotsRefreshTimeout: clientOptions.connectTimeout,
    redisOptions: {
      ...clientOptions,
      username: decodeURIComponent(url.username) || undefined,
      password: decodeURIComponent(url.password) || undefined,
      tls: url.protocol === "rediss:" ? {} : undefined,
    },
  });
  cluster.on("error", () => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The cluster client may wait for slots without end: the start is bounded as one server's connection is.
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the cluster in ${clientOptions.connectTimeout} ms`)), clientOptions.connectTimeout);
  });
  try {
    await Promise.race([
      (async () => {
        await cluster.connect();
        await Promise.all(cluster.nodes("master").map((node) => node.script("LOAD", BUCKET_SCRIPT)));
      })(),
      late,
    ]);
    connected = true;
  } catch (error) {
    cluster.disconnect();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return cluster;
}


/** A take's reply, one string: the key's settings, then four words per take (redis-script.ts). */
function takeResults(reply: string): TakeResult[] {
  const words = reply.split(" ");
  const rate = numberOf(words[0]!);
  const burst = numberOf(words[1]!);
  const kind = words[2] as RateKind;
  const results: TakeResult[] = [];
  for (let i = 3; i < words.length; i += 4) {
    results.push({ ok: words[i] === "1", waitMs: numberOf(words[i + 1]!), timeToActMs: numberOf(words[i + 3]!), tokens: numberOf(words[i + 2]!), rate, burst, kind });
  }
  return results;
}

function stateOf(key: string, reply: string[]): BucketState {
  const [rate, burst, kind, tokens, lastMs, implicit] = reply;
  const state: BucketState = { key, rate: numberOf(rate!), burst: numberOf(burst!), kind: kind as RateKind, tokens: numberOf(tokens!), updatedAtMs: numberOf(lastMs!) };
  if (implicit === "1") state.expiresWhenFull = true;
  return state;
}

function numberText(value: number): string {
  return value === Infinity ? "inf" : String(value);
}

function numberOf(text: string): number {
  return text === "inf" ? Infinity : Number(text);
}


const PASSWORD_FORMS = "redis://:PASSWORD@host:port, or redis://USER:PASSWORD@host:port for an ACL user";

/** What to say when Redis refused us rather than could not be reached: a password, a permission. */
function refusal(error: unknown): string | undefined {
  const message = reason(error);
  if (/^NOAUTH\b/.test(message)) return `Redis asks for a password; give it in the address: ${PASSWORD_FORMS}`;
  if (/^WRONGPASS\b|^ERR invalid (password|username-password)/i.test(message)) {
    return `Redis refused the password (${message}); check the password in the address: ${PASSWORD_FORMS}`;
  }
  if (/^NOPERM\b/.test(message)) {
    return `the Redis user may not run what tbucket needs (${message}); allow it EVALSHA, SCRIPT, SCAN and DEL on keys tbucket:*, or use another user`;
  }
  return undefined;
}

/** What to say when SELECT was refused: the database is not on that server. */
function databaseRefusal(error: unknown, database: number): string | undefined {
  const message = reason(error);
  if (!/DB index is out of range|invalid DB index|value is not an integer or out of range|SELECT is not allowed/i.test(message)) return undefined;
  return `Redis has no database ${database} (${message}); use one the server has: 0 to its "databases" setting less 1 (0 to 15 by default)`;
}


