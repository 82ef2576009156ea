import { SCRIPT_PRELUDE } from "./redis-layout.js";

/** A key's expiry is set this fraction of its idle expiry beyond what its rule needs, so that it need not be moved on every take. */
export const EXPIRY_SLACK_DIVISOR = 16;
/**
 * The one Lua script behind every Redis operation that reads or changes a
 * bucket. It touches only KEYS[1], the key's name in a hash tag (so it runs
 * on Redis Cluster too), and on a standalone Redis KEYS[2], where releases
 * before hash tags kept the key, to move it to KEYS[1] on first use; it reads
 * the server's clock with TIME (so clients with skewed clocks agree), and
 * repeats TokenBucket's formulas (src/core/token-bucket.ts) exactly:
 *   level(t) = min(tokens + ((t - last) / 1000) * rate, burst), t clamped to >= last
 *   wait     = trunc((debt / rate) * 1e9) / 1e6   (whole nanoseconds, in ms; "inf" at rate 0)
 * Numbers travel as "%.17g" strings both ways: Redis would truncate a Lua
 * number in a reply, and print only 14 digits of one in HSET.
 *
 * ARGV[1] operation: "take" | "cancel" | "read" | "configure" | "open"
 * ARGV[2] now in ms, or "" for the server's clock (tests pass a fake time)
 * ARGV[3] idle expiry in ms: the key is forgotten this long after it is full (and at most
 *         1/EXPIRY_SLACK_DIVISOR of it later: see save)
 * ARGV[4] the same for a key made with expireWhenFull (hash field "implicit" = "1")
 * take:      ARGV[5] n, ARGV[6] max wait ms ("inf"), ARGV[7] "1" to allow n above the burst, and again
 *            from ARGV[8] for each further take: several takes of one key in one call (a batch),
 *            answered in order, each exactly as if made alone right after the one before
 * cancel:    ARGV[5] n, ARGV[6] the reservation's time to act in ms
 * configure: ARGV[5] rate ("inf"), ARGV[6] burst, ARGV[7] kind, ARGV[8] "1" for expireWhenFull
 * open:      as configure; a read instead when the key holds tokens of that kind (one call, not two)
 * Replies: take "rate burst kind ok waitMs tokens timeToActMs ...", one string, the last four words
 * once per take (ok "1" or "0");
 * cancel {restored}; read/configure/open {rate, burst, kind, tokens, lastMs, implicit};
 * nil when the key is unknown.
 * cancel repeats TokenBucket.cancelAt on a bucket rebuilt from the hash: a
 * negative level is owed to reservations due until last + wait(debt), so
 *   restore = n - ((that time - time to act) / 1000) * rate
 */
export const BUCKET_SCRIPT = `${SCRIPT_PRELUDE}
local key = KEYS[1]

local h = redis.call("HMGET", key, "rate", "burst", "kind", "tokens", "last", "implicit", "expires")
if (h[1] == false or h[1] == nil) and KEYS[2] and redis.call("EXISTS", KEYS[2]) == 1 then
  -- Kept by a release before hash tags (KEYS[2], a standalone Redis only): moved to its name now, expiry and all.
  redis.call("RENAME", KEYS[2], key)
  h = redis.call("HMGET", key, "rate", "burst", "kind", "tokens", "last", "implicit", "expires")
end
local exists = h[1] ~= false and h[1] ~= nil
-- A set of several limits (redis-set-script.ts) keeps no rate: not a bucket to take from, but one to set anew.
local setLimits = (not exists) and redis.call("HGET", key, "count")
if setLimits and op ~= "configure" then
  -- A set with classes says so: a take names its class.
  local classes = redis.call("HGET", key, "classes")
  if classes then return redis.error_reply("TBUCKET_CLASSES " .. classes) end
  return redis.error_reply("TBUCKET_SET " .. setLimits)
end
if op == "open" then
  -- Read when held with tokens of the wanted kind (the settings it holds stand), else made as configure makes it.
  if exists and h[3] == ARGV[7] then op = "read" else op = "configure" end
end
if setLimits then redis.call("DEL", key) end
local implicit = exists and h[6] == "1"
local rate, burst, kind, tokens, last
if exists then
  rate = num(h[1]); burst = num(h[2]); kind = h[3]; tokens = num(h[4]); last = num(h[5])
  if tokens > burst then tokens = burst end
end

-- A take changes the level and its time only: the settings it read stand, and are not written again.
-- The expiry moves only when it would come too soon, and then by some slack more, so that most takes of a
-- busy key write no PEXPIRE: a key is forgotten at most that slack later than its rule says, never sooner.
-- "expires" (the script's clock) is when the expiry last set runs out; "0" when the key is kept for good.
local function save(t, level, settingsStand, tText, levelText)
  tText = tText or str(t)
  levelText = levelText or str(level)
  if rate == 0 and level < burst then
    -- Paused below full: it never fills, and must not be forgotten.
    redis.call("HSET", key, "rate", str(rate), "burst", str(burst), "kind", kind, "tokens", levelText, "last", tText, "expires", "0")
    redis.call("PERSIST", key)
    return
  end
  local fullInMs = 0
  if rate ~= INF and level < burst then fullInMs = ((burst - level) / rate) * 1000 end
  local afterFullMs = idleMs
  if implicit then afterFullMs = implicitIdleMs end
  local ttl = math.max(1, math.ceil(fullInMs + afterFullMs))
  local expires = tonumber(h[7] or "")
  if settingsStand and expires and expires > 0 and expires >= now + ttl then
    -- Every take of a busy key comes this way: two fields, one command.
    redis.call("HSET", key, "tokens", levelText, "last", tText)
    return
  end
  ttl = ttl + math.floor(afterFullMs / ${EXPIRY_SLACK_DIVISOR})
  if settingsStand then
    redis.call("HSET", key, "tokens", levelText, "last", tText, "expires", str(now + ttl))
  else
    redis.call("HSET", key, "rate", str(rate), "burst", str(burst), "kind", kind, "tokens", levelText, "last", tText, "expires", str(now + ttl))
  end
  redis.call("PEXPIRE", key, string.format("%d", ttl))
end

if op == "take" then
  -- Several takes, one after the other at the same instant, each as one take would be; one save for all.
  -- Every decision comes this way, so it makes no closure (each costs about as much as a command):
  -- advance(now) is written out here, and the functions the other operations use come after it.
  if not exists then return nil end
  -- t is the same for every take of the call (the first takes at t, so the next starts there).
  local t = now
  if t < last then t = last end
  local level = burst
  if rate ~= INF then
    level = tokens
    if t > last then level = tokens + ((t - last) / 1000) * rate end
    if level > burst then level = burst end
  end
  local tText = str(t)
  -- One string: the settings once (as stored: the client reads them as it would a number it wrote), then four
  -- words per take (one reply to decode, not seven per take). Each number is formatted once: it costs the most here.
  local replies = {h[1], h[2], kind}
  local taken = false
  local tokensText
  for i = 5, #ARGV, 3 do
    local n = tonumber(ARGV[i])
    local maxWait = num(ARGV[i + 1])
    local overBurst = ARGV[i + 2] == "1"
    if rate == INF then
      tokens = burst; last = t; taken = true
      tokensText = h[2]
      replies[#replies + 1] = "1 0 " .. tokensText .. " " .. tText
    else
      local after = level - n
      local wait = 0
      if after < 0 then wait = math.floor((-after / rate) * 1e9) / 1e6 end
      if (n > burst and not overBurst) or wait > maxWait then
        replies[#replies + 1] = "0 inf " .. str(level) .. " inf"
      else
        tokens = after; last = t; level = after; taken = true
        tokensText = str(after)
        if wait == 0 then
          replies[#replies + 1] = "1 0 " .. tokensText .. " " .. tText
        else
          replies[#replies + 1] = "1 " .. str(wait) .. " " .. tokensText .. " " .. str(t + wait)
        end
      end
    end
  end
  if taken then save(last, tokens, true, tText, tokensText) end
  return table.concat(replies, " ")
end

local function advance(t)
  if t < last then t = last end
  if rate == INF then return t, burst end
  local gained = 0
  if t - last > 0 then gained = ((t - last) / 1000) * rate end
  local level = tokens + gained
  if level > burst then level = burst end
  return t, level
end

local function mark()
  if implicit then
    redis.call("HSET", key, "implicit", "1")
  else
    redis.call("HDEL", key, "implicit")
  end
end
local function flag() if implicit then return "1" end return "0" end

if op == "cancel" then
  if not exists then return nil end
  local n = tonumber(ARGV[5])
  local due = num(ARGV[6])
  if n == 0 or rate == INF or due < now then return {"0"} end
  local lastEvent = last
  if tokens < 0 then lastEvent = last + math.floor((-tokens / rate) * 1e9) / 1e6 end
  local later = 0
  if rate > 0 and lastEvent - due > 0 then later = ((lastEvent - due) / 1000) * rate end
  local restore = n - later
  if restore <= 0 then return {"0"} end
  local t, level = advance(now)
  local after = level + restore
  if after > burst then after = burst end
  save(t, after, true)
  return {str(after - level)}
elseif op == "read" then
  if not exists then return nil end
  local t, level = advance(now)
  return {str(rate), str(burst), kind, str(level), str(last), flag()}
elseif op == "configure" then
  local newRate = num(ARGV[5]); local newBurst = num(ARGV[6]); local newKind = ARGV[7]
  -- Only a new key, or one already made implicitly, is made implicitly; a configure without the flag keeps the key.
  implicit = ARGV[8] == "1" and (not exists or implicit)
  mark()
  if not exists or kind ~= newKind then
    rate = newRate; burst = newBurst; kind = newKind
    save(now, burst)
    return {str(rate), str(burst), kind, str(burst), str(now), flag()}
  end
  local t, level = advance(now)
  rate = newRate
  if level > newBurst then level = newBurst end
  burst = newBurst
  if rate == INF then level = burst end
  save(t, level)
  return {str(rate), str(burst), kind, str(level), str(t), flag()}
end
return redis.error_reply("tbucket: unknown operation " .. tostring(op))
`;

