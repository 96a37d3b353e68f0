-- Managing groups (crates/lanemq-redis/src/groups.rs; the keys are described in lua/README.md,
-- "Groups", and the helpers in lua/includes/common.lua). ARGV = now, max_events, op, then:
--   "defaults", limits text   the queue's defaults ("" clears them): META `group_defaults`
--   "limits", group, text     the group's overrides ("" clears them): `groups:limits`
--   "get_limits", group       {overrides text or ""}; group "" reads the defaults
--   "pause", group / "resume", group / "paused", group
--   "counts", group           {count per state code 0..5}
--   "list", start, count      {total, then per group: name, paused (0/1), its 6 counts}
--   "ids", group, states      the ids of the group's jobs in those state codes ("012..."),
--                             sorted by id (its jobs' set is scored 0: sorted by bytes)
-- A limits text is "concurrency,rate max,rate duration,max_size", each empty for none.
-- Every change that may make a group claimable puts it in the turns (group_enqueue, which
-- wakes idle workers); one that holds it back takes effect at the next claim.
local op = ARGV[3]

-- Whether the group is listed: it holds jobs, is paused or has overrides.
local function keep_known(g)
  if redis.call("EXISTS", group_key(g, ":jobs")) == 1
      or redis.call("SISMEMBER", groups_key("paused"), g) == 1
      or redis.call("HEXISTS", groups_key("limits"), g) == 1 then
    redis.call("ZADD", groups_key("known"), "NX", "0", g)
  else
    redis.call("ZREM", groups_key("known"), g)
  end
end

-- The group's jobs per state code (1-based: index state + 1).
local function counts_of(g)
  local out = {0, 0, 0, 0, 0, 0}
  for _, id in ipairs(redis.call("ZRANGE", group_key(g, ":jobs"), 0, -1)) do
    local state = tonumber(get("state", id))
    if state then out[state + 1] = out[state + 1] + 1 end
  end
  return out
end

if op == "defaults" then
  if ARGV[4] == "" then redis.call("HDEL", META, "group_defaults")
  else redis.call("HSET", META, "group_defaults", ARGV[4]) end
  -- A raised limit makes held groups claimable again: every group is looked at (this call's
  -- cost is O(groups), a claim's is not).
  for _, g in ipairs(redis.call("ZRANGE", groups_key("known"), 0, -1)) do group_enqueue(g) end
  return {"ok"}
elseif op == "limits" then
  local g = ARGV[4]
  if ARGV[5] == "" then redis.call("HDEL", groups_key("limits"), g)
  else redis.call("HSET", groups_key("limits"), g, ARGV[5]) end
  keep_known(g)
  group_enqueue(g)
  return {"ok"}
elseif op == "get_limits" then
  if ARGV[4] == "" then return {redis.call("HGET", META, "group_defaults") or ""} end
  return {redis.call("HGET", groups_key("limits"), ARGV[4]) or ""}
elseif op == "pause" then
  local g = ARGV[4]
  redis.call("SADD", groups_key("paused"), g)
  redis.call("ZREM", groups_key("turns"), g)
  keep_known(g)
  return {"ok"}
elseif op == "resume" then
  local g = ARGV[4]
  redis.call("SREM", groups_key("paused"), g)
  keep_known(g)
  group_enqueue(g)
  return {"ok"}
elseif op == "paused" then
  return {redis.call("SISMEMBER", groups_key("paused"), ARGV[4])}
elseif op == "counts" then
  return counts_of(ARGV[4])
elseif op == "list" then
  local known = groups_key("known")
  local start, count = tonumber(ARGV[4]), tonumber(ARGV[5])
  local out = {redis.call("ZCARD", known)}
  if count > 0 then
    for _, g in ipairs(redis.call("ZRANGE", known, start, start + count - 1)) do
      out[#out + 1] = g
      out[#out + 1] = redis.call("SISMEMBER", groups_key("paused"), g)
      for _, n in ipairs(counts_of(g)) do out[#out + 1] = n end
    end
  end
  return out
elseif op == "ids" then
  local wanted = {}
  for i = 1, #ARGV[5] do wanted[string.sub(ARGV[5], i, i)] = true end
  local out = {}
  for _, id in ipairs(redis.call("ZRANGE", group_key(ARGV[4], ":jobs"), 0, -1)) do
    local state = get("state", id)
    if state and wanted[state] then out[#out + 1] = id end
  end
  return out
end
return redis.error_reply("groups: unknown op " .. tostring(op))
