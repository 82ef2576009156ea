import { CLASS_SCRIPT } from "./redis-class-script.js";
import { SCRIPT_PRELUDE } from "./redis-layout.js";
/**
 * The Lua script behind every Redis operation on a key's limit set
 * (redis-set-store.ts). One call per take, cancel, settle, release, renew,
 * read or configure, on the server's clock (TIME), touching only the keys
 * it is given: KEYS[1] the key's hash, KEYS[1 + i] the sorted set of its
 * i-th limit (a window's records, a concurrency limit's holders), all with
 * the key's name as their hash tag, so that on Redis Cluster they live in
 * one slot.
 *
 * It repeats the core's steps exactly (LimitSet, TokenBucket, SlidingWindow
 * in src/core/, as set-math.ts runs them for the memory and SQLite stores):
 * the same formulas in the same order, so that its answers are the core's to
 * the last bit (test/store/redis-set-script.test.ts checks it decision by
 * decision). Numbers travel as "%.17g" strings both ways.
 *
 * The hash holds either a one-bucket key as BucketStore's script keeps it
 * (fields rate, burst, kind, tokens, last: read and written as a set of one
 * bucket), or a set: "count" limits, the i-th's spec in "k<i>" (kind), "u<i>"
 * (unit), "a<i>" (rate or n), "b<i>" (burst or window ms), its state in
 * "t<i>", "l<i>", "e<i>" (a bucket's level, last update, latest time to act)
 * or "c<i>", "s<i>" (a window's present and running sum), and "slast" (the
 * set's latest time); a key with classes is always a set, and keeps them in
 * the fields "classes", "cspecs", "cdefs", "cstate" (redis-class-script.ts).
 * A window's sorted set holds one member "<cost>@<time>" per record, scored
 * by its time, read only as far as a step needs (the latest, the oldest few
 * as they leave), so a take costs the same for a window of 10 or 10,000; a
 * concurrency limit's holds its holders, scored by the end of their lease.
 *
 * ARGV[1] operation, ARGV[2] now in ms or "" for the server's clock (tests),
 * ARGV[3] idle expiry ms, ARGV[4] the same for a key made with expireWhenFull,
 * ARGV[5] how many limit keys were passed (KEYS[2..]).
 * take:      [6] max wait ms, [7] holder, [8] lease ms, [9] m, then m pairs unit, cost
 * cancel:    [6] time to act, [7] holder, [8] r, 4r spec fields, 4r numbers (amounts, rates, taken, levels by limit)
 * settle:    as cancel, then m, m pairs unit, cost
 * release:   [6] holder; renew: [6] holder, [7] lease ms
 * configure: [6] "1" for expireWhenFull, [7] count, 4 spec fields per limit, then the "cspecs" of the key's
 *            classes as the caller checked them against these limits ("" when it knows of none) and their
 *            "cdefs" resolved against them
 * class:     [6] class name, [7] m, then m pairs unit, cost (a class's ask: ClassScheduler's allowAt, and
 *            its earliestAt when refused)
 * classes:   [6] "cspecs" ("" to remove the classes), [7] names, [8] "cdefs", [9] r, the 4r spec fields
 *            of the limits they were resolved against
 * Replies (nil when the key is unknown, but for configure):
 * {"stale", count, specs...} when fewer limit keys were passed than the set
 *   has, or a reservation's set is not the key's (the caller maps it, and asks again);
 * take {"ok", ok, waitMs, timeToActMs, limitedBy "1,3", noSlot, count, specs..., [amount, rate, taken, level] per limit when ok},
 *   {"hasclasses", names} for a key with classes (a take names its class);
 * cancel {"ok"}; settle {"ok", [amount, taken, level] per limit};
 * release, renew {"ok", "1" | "0"};
 * read, configure, classes {"ok", slast, implicit, count, specs..., levels..., names ("" for none), cdefs, [level, usedRate] per class};
 * configure {"checkclasses", cspecs} when the key's classes are not those the caller checked (nothing written:
 *   it checks them against the new limits, and asks again);
 * class {"ok", ok, waitMs, path or refusal, count, specs..., cspecs}, {"noclasses"}, {"unknown", names};
 * classes {"limits", count, specs...} when the limits are not those the caller resolved against (nothing written).
 */
export const SET_SCRIPT = `${SCRIPT_PRELUDE}
local main = KEYS[1]
local passed = tonumber(ARGV[5])

-- TokenBucket's durationMsFromTokens and tokensFromDurationMs.
local function duration(tokens, rate)
  if rate <= 0 then return INF end
  local ns = (tokens / rate) * 1e9
  if ns >= 0 then ns = math.floor(ns) else ns = math.ceil(ns) end
  return ns / 1e6
end
local function gained(ms, rate)
  if not (ms > 0) or rate <= 0 then return 0 end
  return (ms / 1000) * rate
end

-- The set: specs, and each limit's state.
local count = 0
local kind, unit, A, B = {}, {}, {}, {}
local tok, blast, bevent = {}, {}, {}
local W = {}
local inuse = {}
local setLast = now
local legacy = false
local exists = false
local implicit = false
-- The classes sharing the key's rate: their names (nil: none), and the hash's other class fields as text.
local classNames = nil
local classSpecs, classDefs, classState = nil, nil, nil

local function limitKey(i) return KEYS[1 + i] end

-- A window reads its records from its sorted set only as far as a step needs (the oldest few, the
-- latest), not whole: "live" counts the records not pruned, "pruned" those pruned this step (removed
-- at save, so that a refused take changes nothing), "cache" the records read, by rank.
local function openWindow(i, clock, sum)
  W[i] = { clock = clock, sum = sum, live = redis.call("ZCARD", limitKey(i)), pruned = 0, prunedTo = nil, cache = {} }
end
local function parseRecord(member, score)
  local at = string.find(member, "@", 1, true)
  return { time = tonumber(score), cost = tonumber(string.sub(member, 1, at - 1)), member = member }
end
-- The k-th oldest record not pruned (from 1).
local function recordOf(i, k)
  local w = W[i]
  local rank = w.pruned + k - 1
  local found = w.cache[rank]
  if found then return found end
  local rows = redis.call("ZRANGE", limitKey(i), rank, rank + 31, "WITHSCORES")
  for r = 1, #rows, 2 do w.cache[rank + (r - 1) / 2] = parseRecord(rows[r], rows[r + 1]) end
  return w.cache[rank]
end
local function latestOf(i)
  local w = W[i]
  if w.live == 0 then return nil end
  return recordOf(i, w.live)
end
-- What a write changed: the records read before are read again.
local function written(i) W[i].cache = {} end

local function load()
  local h = redis.call("HMGET", main, "rate", "burst", "kind", "tokens", "last", "implicit", "count", "slast", "classes")
  if h[1] then
    legacy = true
    exists = true
    count = 1
    kind[1] = "bucket"; unit[1] = h[3]; A[1] = num(h[1]); B[1] = num(h[2])
    local t = num(h[4])
    if t > B[1] then t = B[1] end
    tok[1] = t; blast[1] = num(h[5])
    -- The debt stands for the reservations due until it is repaid, as TokenBucket takes a stored level.
    bevent[1] = blast[1]
    if t < 0 then bevent[1] = blast[1] + duration(-t, A[1]) end
    setLast = blast[1]
  elseif h[7] then
    exists = true
    count = tonumber(h[7])
    setLast = num(h[8])
    for i = 1, count do
      local f = redis.call("HMGET", main, "k" .. i, "u" .. i, "a" .. i, "b" .. i, "t" .. i, "l" .. i, "e" .. i, "c" .. i)
      kind[i] = f[1]; unit[i] = f[2]; A[i] = num(f[3]); B[i] = num(f[4])
      if kind[i] == "bucket" then
        tok[i] = num(f[5]); blast[i] = num(f[6]); bevent[i] = num(f[7])
      end
    end
  end
  implicit = exists and h[6] == "1"
  if h[9] then classNames = h[9] end
end

local function readClassFields()
  local f = redis.call("HMGET", main, "cspecs", "cdefs", "cstate")
  classSpecs, classDefs, classState = f[1], f[2], f[3]
end

local function loadLimitState(mutating)
  for i = 1, count do
    if kind[i] == "window" then
      local f = redis.call("HMGET", main, "c" .. i, "s" .. i)
      openWindow(i, num(f[1]), num(f[2]))
    elseif kind[i] == "concurrency" then
      if mutating then
        redis.call("ZREMRANGEBYSCORE", limitKey(i), "-inf", str(now))
        inuse[i] = redis.call("ZCARD", limitKey(i))
      else
        inuse[i] = redis.call("ZCOUNT", limitKey(i), "(" .. str(now), "+inf")
      end
    end
  end
end

local function specFields(i)
  if kind[i] == "concurrency" then return "concurrency", "", str(A[i]), "" end
  return kind[i], unit[i], str(A[i]), str(B[i])
end
local function pushSpecs(reply)
  table.insert(reply, tostring(count))
  for i = 1, count do
    local k, u, a, b = specFields(i)
    table.insert(reply, k); table.insert(reply, u); table.insert(reply, a); table.insert(reply, b)
  end
  return reply
end
local function stale() return pushSpecs({"stale"}) end

-- TokenBucket, limit i.
local function levelAtB(i, t)
  local v = tok[i] + gained(t - blast[i], A[i])
  if v < B[i] then return v end
  return B[i]
end
local function tokensAt(i, t)
  if blast[i] > t then t = blast[i] end
  if A[i] == INF then return B[i] end
  return levelAtB(i, t)
end
local function delayAt(i, t, n)
  if A[i] == INF then return 0 end
  if n > B[i] then return INF end
  if not (t > blast[i]) then t = blast[i] end
  local v = levelAtB(i, t) - n
  if v < 0 then return duration(-v, A[i]) end
  return 0
end
local function takeAtB(i, nowT, actMs, n)
  if A[i] == INF then return n end
  local t = nowT
  if not (nowT > blast[i]) then t = blast[i] end
  local level = levelAtB(i, t)
  local short = level - n
  local ownMs = t
  if short < 0 then ownMs = t + duration(-short, A[i]) end
  local tokens = short
  if actMs > ownMs and actMs < INF then
    local ahead = gained(actMs - t, A[i])
    if level + ahead > B[i] then tokens = B[i] - ahead - n end
  end
  blast[i] = t; tok[i] = tokens; bevent[i] = actMs
  return level - tokens
end
local function addTokensB(i, nowT, n)
  if A[i] == INF then return end
  local t = nowT
  if not (nowT > blast[i]) then t = blast[i] end
  local v = levelAtB(i, t) + n
  if v > B[i] then v = B[i] end
  tok[i] = v; blast[i] = t
end
local function cancelB(i, nowT, n, actMs, rate)
  if n == 0 or A[i] == INF then return end
  if actMs < nowT then return end
  local restore = n - gained(bevent[i] - actMs, rate)
  if restore <= 0 then return end
  local t = nowT
  if blast[i] > t then t = blast[i] end
  local v = levelAtB(i, t)
  blast[i] = t
  v = v + restore
  if v > B[i] then v = B[i] end
  tok[i] = v
  if actMs == bevent[i] then
    local previous = actMs - duration(n, rate)
    if previous >= t then bevent[i] = previous end
  end
end

-- SlidingWindow, limit i.
local function earliestW(i, nowT, c)
  local w = W[i]
  if c > A[i] then return INF end
  local latest = -INF
  local last = latestOf(i)
  if last then latest = last.time end
  local t = w.clock
  if nowT > w.clock then t = nowT end
  if latest > t then t = latest end
  if w.sum + c <= A[i] then return t end
  local remaining = w.sum
  for k = 1, w.live do
    local record = recordOf(i, k)
    remaining = remaining - record.cost
    if remaining + c <= A[i] then
      local left = record.time + B[i]
      if left > t then return left end
      return t
    end
  end
  return INF
end
local function member(cost, time) return str(cost) .. "@" .. str(time) end
-- Writes what pruneW dropped (a take that goes ahead).
local function flushPruned(i)
  local w = W[i]
  if w.prunedTo then redis.call("ZREMRANGEBYSCORE", limitKey(i), "-inf", str(w.prunedTo)) end
  w.pruned = 0
  w.prunedTo = nil
  written(i)
end
local function recordW(i, atMs, c)
  local w = W[i]
  if not (c > 0) then return end
  local last = latestOf(i)
  if last and last.time == atMs then
    redis.call("ZREM", limitKey(i), last.member)
    redis.call("ZADD", limitKey(i), str(atMs), member(last.cost + c, atMs))
  else
    redis.call("ZADD", limitKey(i), str(atMs), member(c, atMs))
    w.live = w.live + 1
  end
  w.sum = w.sum + c
  written(i)
end
local function adjustW(i, atMs, delta)
  local w = W[i]
  local rows = redis.call("ZRANGEBYSCORE", limitKey(i), str(atMs), str(atMs), "WITHSCORES")
  if not rows[1] then return end
  local record = parseRecord(rows[1], rows[2])
  local before = record.cost
  local after = before + delta
  if after < 0 then after = 0 end
  redis.call("ZREM", limitKey(i), record.member)
  redis.call("ZADD", limitKey(i), str(atMs), member(after, atMs))
  written(i)
  w.sum = w.sum + (after - before)
  -- A forgotten latest record no longer holds later items back.
  while w.live > 0 do
    local last = latestOf(i)
    if last.cost ~= 0 then break end
    redis.call("ZREM", limitKey(i), last.member)
    w.live = w.live - 1
    written(i)
  end
  if w.live == 0 or w.sum < 0 then w.sum = 0 end
end
local function remainingW(i, nowT)
  local w = W[i]
  local t = nowT
  if w.clock > t then t = w.clock end
  local held = w.sum
  for k = 1, w.live do
    local record = recordOf(i, k)
    if record.time + B[i] > t then break end
    held = held - record.cost
  end
  return A[i] - held
end
local function pruneW(i, nowT)
  local w = W[i]
  local t = w.clock
  if nowT > w.clock then t = nowT end
  w.clock = t
  while w.live > 0 do
    local record = recordOf(i, 1)
    if not (record.time + B[i] <= t) then break end
    w.sum = w.sum - record.cost
    w.prunedTo = record.time
    w.pruned = w.pruned + 1
    w.live = w.live - 1
  end
  if w.live == 0 then w.sum = 0 end
end

local function levelOf(i, t)
  if kind[i] == "bucket" then return tokensAt(i, t) end
  if kind[i] == "window" then return remainingW(i, t) end
  return A[i] - inuse[i]
end

-- LimitSet.
local cost, fromNow, fromNowWait = {}, {}, {}
local lastWait = 0
local function readCosts(at)
  local m = tonumber(ARGV[at])
  local given = {}
  for p = 1, m do given[ARGV[at + 2 * p - 1]] = tonumber(ARGV[at + 2 * p]) end
  for i = 1, count do
    if kind[i] == "concurrency" then cost[i] = 1 else cost[i] = given[unit[i]] or 0 end
  end
  return given
end
local function earliestOne(i, t)
  local c = cost[i]
  local e
  if kind[i] == "bucket" then
    local w = delayAt(i, t, c)
    e = t + w
    lastWait = w
  else
    if kind[i] == "window" then
      e = earliestW(i, t, c)
    elseif inuse[i] + 1 <= A[i] then
      e = t
    else
      e = INF
    end
    lastWait = e - t
  end
  return e
end
local function neverAdmits(i)
  local c = cost[i]
  if kind[i] == "bucket" then return c > B[i] and A[i] ~= INF end
  if kind[i] == "window" then return c > A[i] end
  return A[i] < 1
end
local function decide(nowT, maxWait)
  local t = nowT
  local setter = 0
  local refused = {}
  local blocked = false
  local noSlot = false
  for i = 1, count do
    if kind[i] == "window" then pruneW(i, nowT) end
    local e = earliestOne(i, nowT)
    fromNow[i] = e
    fromNowWait[i] = lastWait
    if e > t then t = e; setter = i end
    if neverAdmits(i) or (kind[i] == "concurrency" and e > nowT) then
      refused[i] = true
      blocked = true
      if kind[i] == "concurrency" then noSlot = true end
    end
  end
  if not blocked and not (t - nowT > maxWait) then
    local moved = t > nowT
    while moved and t ~= INF do
      moved = false
      for i = 1, count do
        if i ~= setter then
          local e = earliestOne(i, t)
          if e > t then t = e; setter = i; moved = true end
        end
      end
    end
  end
  local waitMs = 0
  if setter > 0 and t == fromNow[setter] then waitMs = fromNowWait[setter] elseif t > nowT then waitMs = t - nowT end
  local ok = not blocked and not (waitMs > maxWait)
  if not blocked then
    local any = false
    for i = 1, count do
      local hit
      if ok then hit = t > nowT and fromNow[i] >= t else hit = fromNow[i] - nowT > maxWait end
      if hit then refused[i] = true; any = true end
    end
    if not any and setter > 0 and t > nowT then refused[setter] = true end
  end
  local numbers = {}
  for i = 1, count do if refused[i] then table.insert(numbers, tostring(i)) end end
  return ok, t, waitMs, table.concat(numbers, ","), noSlot
end

-- What a window pruned goes (a step that writes the key).
local function flushWindows()
  for i = 1, count do
    if kind[i] == "window" then flushPruned(i) end
  end
end

-- LimitSet's takeAll: every limit takes the item's cost at nowT, for an item acting at act (a concurrency
-- limit's slot held by holder until leaseMs past act); what each bucket's level went down by.
local function takeAll(nowT, act, holder, leaseMs)
  local taken = {}
  setLast = nowT
  flushWindows()
  for i = 1, count do
    local c = cost[i]
    if kind[i] == "bucket" then
      taken[i] = takeAtB(i, nowT, act, c)
    elseif kind[i] == "window" then
      recordW(i, act, c)
    else
      inuse[i] = inuse[i] + 1
      local untilMs = now
      if act < INF and act > now then untilMs = act end
      redis.call("ZADD", limitKey(i), str(untilMs + leaseMs), holder)
    end
  end
  return taken
end

-- When the key is as a new one would be (set-math's fullAtMs).
local function fullAt()
  local at = setLast
  for i = 1, count do
    if kind[i] == "bucket" then
      if A[i] ~= INF and tok[i] < B[i] then
        if A[i] == 0 then at = INF else at = math.max(at, blast[i] + ((B[i] - tok[i]) / A[i]) * 1000) end
      end
    elseif kind[i] == "window" then
      local last = latestOf(i)
      if last then at = math.max(at, last.time + B[i]) end
    else
      local top = redis.call("ZRANGE", limitKey(i), -1, -1, "WITHSCORES")
      if top[2] then at = math.max(at, tonumber(top[2])) end
    end
  end
  return at
end

local function expire()
  local at = fullAt()
  local keys = { main }
  if not legacy then for i = 1, count do if kind[i] ~= "bucket" then table.insert(keys, limitKey(i)) end end end
  for _, key in ipairs(keys) do
    if at == INF then
      redis.call("PERSIST", key)
    else
      local after = idleMs
      if implicit then after = implicitIdleMs end
      redis.call("PEXPIRE", key, string.format("%d", math.max(1, math.ceil(at - now + after))))
    end
  end
end

local function save()
  if legacy then
    redis.call("HSET", main, "rate", str(A[1]), "burst", str(B[1]), "kind", unit[1], "tokens", str(tokensAt(1, setLast)), "last", str(setLast))
    tok[1] = tokensAt(1, setLast); blast[1] = setLast
  else
    redis.call("HSET", main, "slast", str(setLast))
    for i = 1, count do
      if kind[i] == "bucket" then
        redis.call("HSET", main, "t" .. i, str(tok[i]), "l" .. i, str(blast[i]), "e" .. i, str(bevent[i]))
      elseif kind[i] == "window" then
        redis.call("HSET", main, "c" .. i, str(W[i].clock), "s" .. i, str(W[i].sum))
      end
    end
  end
  expire()
end

local function dropHolder(holder)
  local found = false
  for i = 1, count do
    if kind[i] == "concurrency" and redis.call("ZREM", limitKey(i), holder) > 0 then found = true end
  end
  return found
end

-- Whether the set given from ARGV[at] (its count r, then 4r spec fields) is the key's.
local function sameSet(at)
  local r = tonumber(ARGV[at])
  if r ~= count then return false end
  for i = 1, r do
    local base = at + 4 * (i - 1)
    local k, u, a, b = ARGV[base + 1], ARGV[base + 2], num(ARGV[base + 3]), ARGV[base + 4]
    if k ~= kind[i] or A[i] ~= a then return false end
    if k ~= "concurrency" and (u ~= unit[i] or B[i] ~= num(b)) then return false end
  end
  return true
end

-- A reservation handed back: its set must be the key's (else the caller maps it and asks again).
local function readReservation()
  if not sameSet(8) then return nil end
  local r = count
  local res = { act = num(ARGV[6]), holder = ARGV[7], amounts = {}, rates = {}, taken = {}, levels = {}, next = 9 + 8 * r }
  local base = 8 + 4 * r
  for i = 1, r do
    res.amounts[i] = num(ARGV[base + i]); res.rates[i] = num(ARGV[base + r + i])
    res.taken[i] = num(ARGV[base + 2 * r + i]); res.levels[i] = num(ARGV[base + 3 * r + i])
  end
  return res
end

local function touch()
  if now > setLast then setLast = now end
  return setLast
end

-- Writes the key's hash anew from what is loaded: a one-bucket key counting bytes or counts and without
-- classes as BucketStore keeps it, any other as a set; its flag, its classes, its state.
local function writeKey()
  redis.call("DEL", main)
  legacy = count == 1 and kind[1] == "bucket" and (unit[1] == "bytes" or unit[1] == "count") and not classNames
  if not legacy then
    redis.call("HSET", main, "count", tostring(count))
    for i = 1, count do
      local k, u, a, b = specFields(i)
      redis.call("HSET", main, "k" .. i, k, "u" .. i, u, "a" .. i, a, "b" .. i, b)
    end
  end
  if implicit then redis.call("HSET", main, "implicit", "1") end
  if classNames then redis.call("HSET", main, "classes", classNames, "cspecs", classSpecs, "cdefs", classDefs, "cstate", classState) end
  save()
end
${CLASS_SCRIPT}
local function stateReply()
  local reply = { "ok", str(setLast), implicit and "1" or "0" }
  pushSpecs(reply)
  for i = 1, count do table.insert(reply, str(levelOf(i, now))) end
  if not classNames then
    table.insert(reply, "")
    return reply
  end
  table.insert(reply, classNames)
  table.insert(reply, classDefs)
  pushClassLevels(reply)
  return reply
end

if op == "configure" then
  load()
  if not legacy then loadLimitState(true) end
  local newImplicit = ARGV[6] == "1" and (not exists or implicit)
  local n = tonumber(ARGV[7])
  local nk, nu, na, nb = {}, {}, {}, {}
  for i = 1, n do
    local base = 7 + 4 * (i - 1)
    nk[i] = ARGV[base + 1]; nu[i] = ARGV[base + 2]; na[i] = num(ARGV[base + 3]); nb[i] = num(ARGV[base + 4])
  end
  -- The classes stay, resolved anew against the new limits by a caller that checked they fit them.
  if classNames then
    readClassFields()
    if ARGV[8 + 4 * n] ~= classSpecs then return { "checkclasses", classSpecs } end
    classDefs = ARGV[9 + 4 * n]
  end
  -- matchLimits: the same limit first, then one of the same kind and unit; each old limit once, in order.
  local match, matched = {}, {}
  local function pass(same)
    for i = 1, n do
      if not match[i] then
        for j = 1, count do
          if not matched[j] and same(i, j) then match[i] = j; matched[j] = true; break end
        end
      end
    end
  end
  if exists then
    pass(function(i, j)
      if nk[i] ~= kind[j] then return false end
      if nk[i] == "concurrency" then return na[i] == A[j] end
      return nu[i] == unit[j] and na[i] == A[j] and nb[i] == B[j]
    end)
    pass(function(i, j) return nk[i] == kind[j] and (nk[i] == "concurrency" or nu[i] == unit[j]) end)
  end
  -- What each new limit goes on from, read before anything is written.
  local carried = {}
  for i = 1, n do
    local j = match[i]
    if j and kind[j] == "bucket" then
      -- TokenBucket's setRateAt, then setBurstAt.
      local t = now
      if blast[j] > t then t = blast[j] end
      local level
      if A[j] == INF then level = B[j] else level = levelAtB(j, t) end
      local rate = na[i]
      if rate == INF then level = B[j] end
      if level > nb[i] then level = nb[i] end
      carried[i] = { tokens = level, last = t, event = bevent[j] }
    elseif j and kind[j] == "window" then
      carried[i] = { clock = W[j].clock, sum = W[j].sum, rows = redis.call("ZRANGE", limitKey(j), 0, -1, "WITHSCORES") }
    elseif j then
      carried[i] = { rows = redis.call("ZRANGE", limitKey(j), 0, -1, "WITHSCORES") }
    end
  end
  local lastMs = now
  if exists then lastMs = math.max(setLast, now) end
  for i = 1, passed do redis.call("DEL", limitKey(i)) end
  implicit = newImplicit
  count = n
  legacy = false
  setLast = lastMs
  for i = 1, n do
    kind[i] = nk[i]; unit[i] = nu[i]; A[i] = na[i]; B[i] = nb[i]
    local c = carried[i]
    if kind[i] == "bucket" then
      if c then tok[i] = c.tokens; blast[i] = c.last; bevent[i] = c.event else tok[i] = B[i]; blast[i] = now; bevent[i] = now end
    elseif kind[i] == "window" then
      if c then
        for r = 1, #c.rows, 2 do redis.call("ZADD", limitKey(i), c.rows[r + 1], c.rows[r]) end
        openWindow(i, c.clock, c.sum)
      else
        openWindow(i, -INF, 0)
      end
    else
      if c then for r = 1, #c.rows, 2 do redis.call("ZADD", limitKey(i), c.rows[r + 1], c.rows[r]) end end
      inuse[i] = redis.call("ZCARD", limitKey(i))
    end
  end
  writeKey()
  if classNames then loadClasses(classNames, classDefs, classState, classNames) end
  return stateReply()
end

load()
if not exists then return nil end
if not legacy and count > passed then return stale() end

if op == "read" then
  loadLimitState(false)
  if classNames then
    readClassFields()
    loadClasses(classNames, classDefs, classState, classNames)
  end
  return stateReply()
end

loadLimitState(true)

if op == "take" then
  if classNames then return { "hasclasses", classNames } end
  local maxWait = num(ARGV[6])
  local holder = ARGV[7]
  local leaseMs = tonumber(ARGV[8])
  readCosts(9)
  local nowT = setLast
  if now > setLast then nowT = now end
  local ok, act, waitMs, limitedBy, noSlot = decide(nowT, maxWait)
  local reply = { "ok", ok and "1" or "0", ok and str(waitMs) or "inf", ok and str(act) or "inf", limitedBy, noSlot and "1" or "0" }
  pushSpecs(reply)
  if not ok then return reply end
  local taken = takeAll(nowT, act, holder, leaseMs)
  for i = 1, count do table.insert(reply, str(cost[i])) end
  for i = 1, count do table.insert(reply, kind[i] == "bucket" and str(A[i]) or "0") end
  for i = 1, count do table.insert(reply, kind[i] == "bucket" and str(taken[i]) or "0") end
  for i = 1, count do table.insert(reply, kind[i] == "bucket" and str(tokensAt(i, act)) or "0") end
  save()
  return reply
elseif op == "cancel" or op == "settle" then
  local res = readReservation()
  if not res then return stale() end
  local t = touch()
  if op == "cancel" then
    local due = res.act < t
    for i = 1, count do
      if kind[i] == "bucket" then
        if res.taken[i] > 0 then cancelB(i, t, res.taken[i], res.act, res.rates[i]) end
      elseif kind[i] == "window" then
        if not due and res.amounts[i] > 0 then adjustW(i, res.act, -res.amounts[i]) end
      end
    end
    if res.holder ~= "" then dropHolder(res.holder) end
    save()
    return { "ok" }
  end
  local m = tonumber(ARGV[res.next])
  local given = {}
  for p = 1, m do given[ARGV[res.next + 2 * p - 1]] = tonumber(ARGV[res.next + 2 * p]) end
  for i = 1, count do
    local actual = nil
    if kind[i] ~= "concurrency" then actual = given[unit[i]] end
    if actual ~= nil then
      local delta = actual - res.amounts[i]
      if delta ~= 0 then
        res.amounts[i] = actual
        if kind[i] == "window" then
          adjustW(i, res.act, delta)
        elseif delta > 0 then
          addTokensB(i, t, -delta)
          res.taken[i] = res.taken[i] + delta
          res.levels[i] = res.levels[i] - delta
        else
          local sinceMs = 0
          if t > res.act then sinceMs = t - res.act end
          local gain = INF
          if res.rates[i] ~= INF then gain = (sinceMs / 1000) * res.rates[i] end
          local room = B[i] - res.levels[i] - gain
          if not (room > 0) then room = 0 end
          local refund = math.min(-delta, room)
          if refund > 0 then addTokensB(i, t, refund) end
          res.levels[i] = res.levels[i] + refund
          res.taken[i] = math.max(0, res.taken[i] - refund)
        end
      end
    end
  end
  save()
  local reply = { "ok" }
  for i = 1, count do table.insert(reply, str(res.amounts[i])) end
  for i = 1, count do table.insert(reply, str(res.taken[i])) end
  for i = 1, count do table.insert(reply, str(res.levels[i])) end
  return reply
elseif op == "class" then
  if not classNames then return { "noclasses" } end
  readClassFields()
  loadClasses(classNames, classDefs, classState, classNames)
  local c = nil
  for j = 1, ncls do
    if cnames[j] == ARGV[6] then c = j end
  end
  if not c then return { "unknown", classNames } end
  readCosts(7)
  -- The scheduler goes on from the latest time of the classes and of the set.
  if setLast > classLast then classLast = setLast end
  local ok, how = classAllowAt(now, c)
  local waitMs = 0
  if not ok then waitMs = math.max(0, classEarliestAt(now, c) - now) end
  flushWindows()
  save()
  redis.call("HSET", main, "cstate", classStateText())
  local reply = { "ok", ok and "1" or "0", str(waitMs), how }
  pushSpecs(reply)
  table.insert(reply, classSpecs)
  return reply
elseif op == "classes" then
  if ARGV[6] == "" then
    if classNames then
      classNames = nil
      writeKey()
    end
    return stateReply()
  end
  if not sameSet(9) then return pushSpecs({ "limits" }) end
  local before = classNames
  if before then readClassFields() end
  loadClasses(ARGV[7], ARGV[8], classState, before)
  classNames, classSpecs, classDefs = ARGV[7], ARGV[6], ARGV[8]
  classState = classStateText()
  writeKey()
  return stateReply()
elseif op == "release" then
  local found = dropHolder(ARGV[6])
  if found then expire() end
  return { "ok", found and "1" or "0" }
elseif op == "renew" then
  local found = false
  for i = 1, count do
    if kind[i] == "concurrency" and redis.call("ZSCORE", limitKey(i), ARGV[6]) then
      redis.call("ZADD", limitKey(i), str(now + tonumber(ARGV[7])), ARGV[6])
      found = true
    end
  end
  if found then expire() end
  return { "ok", found and "1" or "0" }
end
return redis.error_reply("tbucket: unknown operation " .. tostring(op))
`;
