import type { Cluster, Redis as RedisClient } from "ioredis";

/**
 * What every tbucket script in Redis shares: where a key lives (one hash tag
 * per tbucket key, so all of its Redis keys share a Cluster slot), how long
 * an idle key stays, and what a refusal from the server means.
 */

/** Every key tbucket writes starts with this, so a shared Redis stays tidy. */
export const REDIS_KEY_PREFIX = "tbucket:";

/**
 * The Redis key of a tbucket key: `tbucket:{NAME}`. The name is a hash tag,
 * so every Redis key that one tbucket key uses (`tbucket:{NAME}...`) lives
 * in one Redis Cluster slot, and one script may touch them all.
 */
export function redisKeyOf(key: string): string {
  return `${REDIS_KEY_PREFIX}{${key}}`;
}

/** Where releases before hash tags kept a key (`tbucket:NAME`): moved to redisKeyOf on first use. */
export function legacyRedisKeyOf(key: string): string {
  return REDIS_KEY_PREFIX + key;
}

/** The tbucket key a Redis key found by SCAN stands for, in either layout. */
export function keyOfRedisKey(redisKey: string): string {
  const name = redisKey.slice(REDIS_KEY_PREFIX.length);
  return name.startsWith("{") && name.endsWith("}") ? name.slice(1, -1) : name;
}

/**
 * Every tbucket key in the store, sorted: a cluster's keys are shared out
 * among its masters, so each is asked for its own.
 */
export async function scanTbucketKeys(client: RedisClient | Cluster): Promise<string[]> {
  const keys = new Set<string>();
  const servers = "nodes" in client ? client.nodes("master") : [client];
  for (const server of servers) {
    let cursor = "0";
    do {
      const [next, found] = await server.scan(cursor, "MATCH", `${REDIS_KEY_PREFIX}*`, "COUNT", 1000);
      for (const name of found) keys.add(keyOfRedisKey(name));
      cursor = next;
    } while (cursor !== "0");
  }
  return [...keys].sort();
}

/** A bucket full and untouched this long is forgotten, settings included (Redis only). */
export const DEFAULT_IDLE_EXPIRY_MS = 7 * 24 * 3600 * 1000;

/**
 * What to say when Redis answered but refused to run the bucket's script:
 * the server is there, so this is not a lost store, and running again does
 * not help; the message names what the server said and what to change.
 */
export function writeRefusal(error: unknown): string | undefined {
  const message = reason(error);
  if (/^READONLY\b/.test(message)) return `Redis is a read-only replica and refused the write (${message}); point the address at the primary`;
  if (/^OOM\b/.test(message)) {
    return `Redis is out of memory and refused the write (${message}); free memory on it, raise its maxmemory, or choose a maxmemory-policy that evicts`;
  }
  if (/^(MOVED|ASK|CLUSTERDOWN|CROSSSLOT|TRYAGAIN)\b/.test(message)) {
    return `Redis Cluster could not serve the key (${message}); check that every slot is served (redis-cli --cluster check HOST:PORT)`;
  }
  return undefined;
}

/** ioredis's message, made short: it speaks of its own options. */
export function reason(error: unknown): string {
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
  if (message.startsWith("Reached the max retries per request limit")) return "connection lost, retries exhausted";
  if (message.startsWith("Connection is closed")) return "connection closed";
  if (message.startsWith("Command timed out")) return "no answer in time";
  // An error raised inside the script names the script's hash and line: noise to the user.
  return message.replace(/\. script: .*$/, "").replace(/\.$/, "");
}

/**
 * What both scripts begin with: the numbers as text ("inf" for infinity, 17
 * digits so that a level survives the round trip), and the time, from the
 * caller (ARGV[2], tests) or else the server's own clock (TIME).
 */
export const SCRIPT_PRELUDE = `-- Before Redis 5 a script that reads TIME must ask to replicate its effects; 7 and later (REDIS_VERSION_NUM) do nothing else.
if not redis.REDIS_VERSION_NUM and redis.replicate_commands then pcall(redis.replicate_commands) end
local INF = math.huge
local function num(s) if s == "inf" then return INF elseif s == "-inf" then return -INF end return tonumber(s) end
local function str(x) if x == INF then return "inf" elseif x == -INF then return "-inf" end return string.format("%.17g", x) end
local op = ARGV[1]
local now
if ARGV[2] ~= "" then
  now = tonumber(ARGV[2])
else
  local time = redis.call("TIME")
  now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
end
local idleMs = tonumber(ARGV[3])
local implicitIdleMs = tonumber(ARGV[4])
`;
