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
