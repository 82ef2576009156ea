import type { ClassScheduler } from "../core/class-scheduler.js";
import type { ClassLevel } from "./class-math.js";

/**
 * Classes on a shared key in Redis (design section 12): ClassScheduler's
 * step (src/core/class-scheduler.ts) in Lua, which SET_SCRIPT
 * (redis-set-script.ts) embeds after the set's own functions, so that a
 * class's ask is one call of that script, atomic, on the server's clock,
 * with the key's limits taking as LimitSet does (the set script's `decide`
 * and `takeAll`). The same formulas in the same order as the core, so the
 * answers are the core's (test/store/class-conformance.ts plays the two side
 * by side).
 *
 * The classes live in the key's hash, beside its set (so in its slot):
 * - "classes": the class names in order, comma-joined (names hold no comma);
 *   its presence is what makes the key one with classes;
 * - "cspecs": the classes as given, as JSON (read by the client only: what a
 *   take answers, and what is checked again when the key's limits change);
 * - "cdefs": the classes resolved against the key's limits by the client
 *   (ClassScheduler's own resolution, so the script applies no defaults):
 *   activeMs, decayMs, then per class rate, burst, ceil, ceilBurst, prio,
 *   weight, space-separated;
 * - "cstate": the scheduler's lastMs, then per class its guarantee bucket's
 *   level and last update, its ceiling's, its last ask, its mark and the
 *   mark's cost, its borrowed counter and time, its used counter and time,
 *   space-separated ("%.17g", "-inf" for never).
 * The script keeps a class's state by name when the classes change (one new
 * to them starts full), and caps a bucket whose burst shrank at load, as
 * ClassScheduler's constructor does.
 */

/** Numbers of state kept per class in "cstate". */
const STATE_FIELDS = 11;
/** Numbers of a resolved class in "cdefs". */
const DEF_FIELDS = 6;

export const CLASS_SCRIPT = `
-- Classes: the scheduler's settings and state (see redis-class-script.ts).
local EPSILON = 1e-9
local ncls = 0
local cnames = {}
local crate, cburst, cceil, cceilBurst, cprio, cweight = {}, {}, {}, {}, {}, {}
local activeMs, decayMs = 1000, 1000
local asked, mark, markCost, borrowed, borrowedMs, used, usedMs = {}, {}, {}, {}, {}, {}, {}
-- The scheduler's latest time, and the limit whose rate the classes share (the set's first bucket).
local classLast = -INF
local keyIndex = 0

local function wordsOf(text, pattern)
  local list = {}
  for w in string.gmatch(text or "", pattern) do list[#list + 1] = w end
  return list
end

-- A class's guarantee and ceiling buckets are TokenBuckets too: they take the indices after the set's
-- limits in the bucket arrays, so that the bucket functions above serve them.
local function guaranteeOf(j) return count + 2 * j - 1 end
local function ceilingOf(j) return count + 2 * j end
local function classBucket(i, rate, burst, tokens, last)
  A[i] = rate; B[i] = burst
  -- A class whose burst shrank (the key's did, or its own) keeps at most its new burst.
  if tokens > burst then tokens = burst end
  tok[i] = tokens; blast[i] = last; bevent[i] = last
end

-- Loads classes: names (comma-joined), resolved settings, and the state text of the classes \`before\` (by
-- name: one not in it starts afresh now, one no longer named is dropped); no state at all: all afresh.
local function loadClasses(names, defsText, stateText, before)
  cnames = wordsOf(names, "[^,]+")
  ncls = #cnames
  local d = wordsOf(defsText, "%S+")
  activeMs = num(d[1]); decayMs = num(d[2])
  for j = 1, ncls do
    local b = 2 + ${DEF_FIELDS} * (j - 1)
    crate[j] = num(d[b + 1]); cburst[j] = num(d[b + 2]); cceil[j] = num(d[b + 3])
    cceilBurst[j] = num(d[b + 4]); cprio[j] = num(d[b + 5]); cweight[j] = num(d[b + 6])
  end
  local kept = {}
  local s = wordsOf(stateText, "%S+")
  if s[1] then
    classLast = num(s[1])
    for k, name in ipairs(wordsOf(before, "[^,]+")) do
      local b = 1 + ${STATE_FIELDS} * (k - 1)
      if s[b + ${STATE_FIELDS}] then kept[name] = b end
    end
  else
    classLast = now
  end
  for j = 1, ncls do
    local b = kept[cnames[j]]
    if b then
      classBucket(guaranteeOf(j), crate[j], cburst[j], num(s[b + 1]), num(s[b + 2]))
      classBucket(ceilingOf(j), cceil[j], cceilBurst[j], num(s[b + 3]), num(s[b + 4]))
      asked[j] = num(s[b + 5]); mark[j] = num(s[b + 6]); markCost[j] = num(s[b + 7])
      borrowed[j] = num(s[b + 8]); borrowedMs[j] = num(s[b + 9]); used[j] = num(s[b + 10]); usedMs[j] = num(s[b + 11])
    else
      classBucket(guaranteeOf(j), crate[j], cburst[j], cburst[j], now)
      classBucket(ceilingOf(j), cceil[j], cceilBurst[j], cceilBurst[j], now)
      asked[j] = -INF; mark[j] = -INF; markCost[j] = 0
      borrowed[j] = 0; borrowedMs[j] = 0; used[j] = 0; usedMs[j] = 0
    end
  end
  keyIndex = 0
  for i = 1, count do
    if kind[i] == "bucket" then keyIndex = i; break end
  end
end

local function classStateText()
  local out = { str(classLast) }
  for j = 1, ncls do
    local g, c = guaranteeOf(j), ceilingOf(j)
    for _, x in ipairs({ tok[g], blast[g], tok[c], blast[c], asked[j], mark[j], markCost[j], borrowed[j], borrowedMs[j], used[j], usedMs[j] }) do
      out[#out + 1] = str(x)
    end
  end
  return table.concat(out, " ")
end

local function decayed(amount, sinceMs, t)
  if amount == 0 then return 0 end
  return amount * math.exp(-math.max(0, t - sinceMs) / decayMs)
end
local function borrowedAt(t, j) return decayed(borrowed[j], borrowedMs[j], t) end
local function useClass(t, j, n)
  used[j] = decayed(used[j], usedMs[j], t) + n
  usedMs[j] = t
end
-- TokenBucket.earliestAt.
local function bucketEarliest(i, t, n)
  if not (t > blast[i]) then t = blast[i] end
  return t + delayAt(i, t, n)
end
local function keyLevelAt(t) return tokensAt(keyIndex, t) end

-- What the parent holds beyond the guarantee buckets of the classes asking: what may be lent at t.
local function surplusAt(t)
  local held = 0
  for d = 1, ncls do
    if not (t - asked[d] > activeMs) then
      local level = tokensAt(guaranteeOf(d), t)
      if level > 0 then held = held + level end
    end
  end
  return keyLevelAt(t) - held
end

-- The asks of the classes marked lately, able to take them, and before class c (#aheadOf).
local function aheadOf(t, c, n)
  local myRatio = (borrowedAt(t, c) + n / 2) / cweight[c]
  local ahead = 0
  for d = 1, ncls do
    if d ~= c and not (t - mark[d] > activeMs) then
      local before = cprio[d] < cprio[c] or (cprio[d] == cprio[c] and (borrowedAt(t, d) + markCost[d] / 2) / cweight[d] < myRatio)
      if before and tokensAt(ceilingOf(d), t) >= markCost[d] - EPSILON then ahead = ahead + markCost[d] end
    end
  end
  return ahead
end

-- The first instant from fromMs on at which a loan of n to c would pass the surplus rule (#loanAt).
local function loanAt(fromMs, c, n)
  local t = fromMs
  for round = 1, 32 do
    local deficit = n + aheadOf(t, c, n) - surplusAt(t)
    if deficit <= EPSILON then return t end
    local growth = 0
    if keyLevelAt(t) < B[keyIndex] then growth = A[keyIndex] end
    local nextChangeMs = INF
    for d = 1, ncls do
      local askedUntil = asked[d] + activeMs
      local markedUntil = mark[d] + activeMs
      if askedUntil >= t then
        local level = tokensAt(guaranteeOf(d), t)
        if level < cburst[d] then
          if level >= 0 then growth = growth - crate[d] end
          nextChangeMs = math.min(nextChangeMs, bucketEarliest(guaranteeOf(d), t, cburst[d]))
        end
        if askedUntil > t then nextChangeMs = math.min(nextChangeMs, askedUntil + 1e-6) end
      end
      if d ~= c and markedUntil > t then
        nextChangeMs = math.min(nextChangeMs, markedUntil + 1e-6)
        local ableMs = bucketEarliest(ceilingOf(d), t, markCost[d])
        if ableMs > t then nextChangeMs = math.min(nextChangeMs, ableMs) end
      end
    end
    local byGrowthMs = INF
    if growth > 0 then byGrowthMs = t + (deficit / growth) * 1000 end
    local nextMs = math.min(byGrowthMs, nextChangeMs)
    if nextMs == INF then return INF end
    if nextMs > t then t = nextMs else t = t + 1e-3 end
  end
  return t
end

-- The parent (the key's set): LimitSet.allowAt and earliestAt, for the costs read.
local function parentAllowAt(t)
  if setLast > t then t = setLast end
  local ok, act = decide(t, 0)
  if ok then takeAll(t, act, "", 0) end
  return ok
end
local function parentEarliestAt(t)
  if setLast > t then t = setLast end
  local ok, at = decide(t, INF)
  if ok then return at end
  return INF
end

-- ClassScheduler.allowAt: admitted within the guarantee or as a loan, or refused (and why).
local function classAllowAt(nowMs, c)
  if nowMs > classLast then classLast = nowMs end
  local t = classLast
  local n = cost[keyIndex]
  asked[c] = t
  local ceiling, guarantee = ceilingOf(c), guaranteeOf(c)
  if tokensAt(ceiling, t) < n - EPSILON then return false, "ceil" end
  if tokensAt(guarantee, t) >= n - EPSILON and parentAllowAt(t) then
    takeAtB(guarantee, t, t, n)
    takeAtB(ceiling, t, t, n)
    useClass(t, c, n)
    return true, "guarantee"
  end
  -- A borrowing ask marks the class, taken or not: those behind it leave its ask in the surplus.
  mark[c] = t
  markCost[c] = n
  if surplusAt(t) - n < aheadOf(t, c, n) - EPSILON then return false, "lending" end
  if not parentAllowAt(t) then return false, "parent" end
  takeAtB(ceiling, t, t, n)
  borrowed[c] = borrowedAt(t, c) + n
  borrowedMs[c] = t
  useClass(t, c, n)
  return true, "borrow"
end

-- ClassScheduler.earliestAt: when class c's take would succeed if nothing else happened.
local function classEarliestAt(nowMs, c)
  local t0 = classLast
  if nowMs > t0 then t0 = nowMs end
  local n = cost[keyIndex]
  local own = math.max(bucketEarliest(ceilingOf(c), t0, n), parentEarliestAt(t0))
  if own == INF then return INF end
  local guaranteeMs = math.max(own, bucketEarliest(guaranteeOf(c), t0, n))
  return math.min(guaranteeMs, loanAt(own, c, n))
end

-- Each class's guarantee level and used rate, as class-math's classLevelsOf reads them.
local function pushClassLevels(reply)
  local t = now
  if classLast > t then t = classLast end
  if setLast > t then t = setLast end
  for j = 1, ncls do
    table.insert(reply, str(tokensAt(guaranteeOf(j), t)))
    table.insert(reply, str((decayed(used[j], usedMs[j], t) * 1000) / decayMs))
  end
end
`;

/** "cdefs": the classes as the scheduler resolved them against the key's limits. */
export function classDefsText(scheduler: ClassScheduler): string {
  const numbers = [scheduler.activeMs, scheduler.decayMs, ...scheduler.classes.flatMap((c) => [c.rate, c.burst, c.ceil, c.ceilBurst, c.prio, c.weight])];
  return numbers.map(String).join(" ");
}

/** The class names as "classes" keeps them. */
export function classNamesText(scheduler: ClassScheduler): string {
  return scheduler.classes.map((c) => c.name).join(",");
}

/** The classes in a state reply from `at`: names ("" for none), "cdefs", then each class's level and used rate. */
export function classLevelsOfReply(reply: readonly string[], at: number): ClassLevel[] | undefined {
  const names = reply[at];
  if (!names) return undefined;
  const defs = reply[at + 1]!.split(" ").map(Number);
  return names.split(",").map((name, j): ClassLevel => {
    const [rate, burst, ceil, , prio, weight] = defs.slice(2 + DEF_FIELDS * j, 2 + DEF_FIELDS * (j + 1)) as number[];
    return { name, rate: rate!, ceil: ceil!, prio: prio!, weight: weight!, burst: burst!, level: Number(reply[at + 2 + 2 * j]), usedRate: Number(reply[at + 3 + 2 * j]) };
  });
}
