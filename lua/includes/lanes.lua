-- The shared lanes' store (python/lanemq/lanes/_store.py is the contract; lua/README.md,
-- "Shared lanes", the keys): the helpers of lua/includes/lanes_claim.lua and lua/lanes-1.lua,
-- loaded behind this file (crates/lanemq-redis/src/lanes/script.rs). Not composed into the
-- jobs' library: the store is its own script, called with one key, the store's `meta` hash;
-- every other key is built from its name, so it carries the store's hash tag and lives in its
-- Redis Cluster slot.
local META = KEYS[1]
local BASE = string.sub(META, 1, -5)
local PROCS, IDLE, RETRY, ACTIVE, BUCKETS, LETTERS =
  BASE .. "procs", BASE .. "idle", BASE .. "retry", BASE .. "active", BASE .. "buckets",
  BASE .. "letters"

-- The store's clock (the contract: Redis TIME, in milliseconds), read once per call.
local clock = redis.call("TIME")
local NOW = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local LEASE_EXPIRED = "LeaseExpiredError: the process running it stopped renewing its lease"
local CANCELLED = "CancelledError: the command was cancelled before it started"
-- The dead letters kept when no `fail` has said its limit yet (a recovery can fail a command
-- for good before any `fail` ran).
local DEFAULT_LETTER_LIMIT = 1000
-- How long the ids a recovered process lost are kept for its `renew` to hear of them.
local LOST_TTL_MS = 86400000

local function cmd_key(id) return BASE .. "cmd:" .. id end
local function lane_key(lane) return BASE .. "lane:" .. lane end
local function proc_key(kind, pid) return BASE .. kind .. ":" .. pid end

-- The lanes as `setup` stored them: a list of {id, p, min, max, rp, rt, bd, bs}, lane index
-- 0 first (Lua index 1).
local function stored_lanes()
  local text = redis.call("HGET", META, "lanes")
  if not text then
    error({err = "LANEMQ_NO_LANES the store has no lanes yet: call setup first"})
  end
  return cjson.decode(text)
end

-- Wakes a process: its wake list holds at most one token (`wait` BLPOPs it).
local function wake(pid)
  local list = proc_key("wake", pid)
  redis.call("LPUSH", list, "1")
  redis.call("LTRIM", list, 0, 0)
end

local function wake_all()
  for _, pid in ipairs(redis.call("ZRANGE", PROCS, 0, -1)) do
    wake(pid)
  end
end

-- An outcome for a named command's submitter: {id, ok, text} as JSON, and a wake.
local function push_outcome(submitter, id, ok, text)
  redis.call("RPUSH", proc_key("outcomes", submitter), cjson.encode({tonumber(id), ok, text}))
  wake(submitter)
end

-- A dead letter: {id, command type, lane id, error, attempts, failed at (unix ms)}, the
-- newest `limit` kept.
local function push_letter(id, command_type, lane, error, attempts, limit)
  if limit == nil then
    limit = tonumber(redis.call("HGET", META, "letter_limit")) or DEFAULT_LETTER_LIMIT
  end
  if limit <= 0 then
    redis.call("DEL", LETTERS)
    return
  end
  local lanes = stored_lanes()
  local lane_id = lanes[tonumber(lane) + 1].id
  -- (cjson writes 14 significant digits: unix ms are exact until the year 5138)
  redis.call("RPUSH", LETTERS, cjson.encode({tonumber(id), command_type, lane_id, error,
    tonumber(attempts), NOW}))
  redis.call("LTRIM", LETTERS, -limit, -1)
end

local function free_slot(lane)
  redis.call("HINCRBY", ACTIVE, lane, -1)
end

-- A command's fields as a table (nil when it is gone).
local function command(id)
  local flat = redis.call("HGETALL", cmd_key(id))
  if #flat == 0 then return nil end
  local c = {}
  for i = 1, #flat, 2 do c[flat[i]] = flat[i + 1] end
  return c
end

-- Drops the callables `pid` owns that wait (pending or for a retry): only it could run
-- them, and it is gone (expired, or leaving).
local function drop_owned(pid)
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("owned", pid))) do
    local c = command(id)
    if c and c.state == "pending" then
      redis.call("LREM", lane_key(c.lane), 1, id)
    elseif c and c.state == "retry" then
      redis.call("ZREM", RETRY, id)
    end
    redis.call("DEL", cmd_key(id))
  end
end

-- Forgets expired process `pid`: each held named command goes back to the front of its lane
-- once, or else fails for good; each held or pending callable of the process is dropped; the
-- ids it held are kept for its `renew` (`lost:<pid>`).
local function forget_expired(pid)
  local lost = proc_key("lost", pid)
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("held", pid))) do
    local c = command(id)
    if c then
      redis.call("SADD", lost, id)
      free_slot(c.lane)
      if c.name and not c.recovered then
        redis.call("HSET", cmd_key(id), "state", "pending", "recovered", "1")
        redis.call("HDEL", cmd_key(id), "holder")
        redis.call("LPUSH", lane_key(c.lane), id)
      else
        if c.name then
          push_letter(id, c.name, c.lane, LEASE_EXPIRED, c.attempt)
          push_outcome(c.submitter, id, false, LEASE_EXPIRED)
        end
        redis.call("DEL", cmd_key(id))
      end
    end
  end
  drop_owned(pid)
  redis.call("PEXPIRE", lost, LOST_TTL_MS)
  redis.call("DEL", proc_key("held", pid), proc_key("owned", pid), proc_key("names", pid),
    proc_key("wake", pid))
  redis.call("SREM", IDLE, pid)
  redis.call("ZREM", PROCS, pid)
end

-- Recovers the processes whose lease ended at or before now, then wakes every live one.
local function recover()
  local expired = redis.call("ZRANGEBYSCORE", PROCS, "-inf", NOW)
  for _, pid in ipairs(expired) do
    forget_expired(pid)
  end
  if #expired > 0 then wake_all() end
end

-- The retries due now go back to the back of their lanes, earliest first (then lower id).
local function promote_retries()
  local due = redis.call("ZRANGEBYSCORE", RETRY, "-inf", NOW, "WITHSCORES")
  local order = {}
  for i = 1, #due, 2 do
    order[#order + 1] = {tonumber(due[i + 1]), tonumber(due[i]), due[i]}
  end
  table.sort(order, function(a, b)
    if a[1] ~= b[1] then return a[1] < b[1] end
    return a[2] < b[2]
  end)
  for _, entry in ipairs(order) do
    local id = entry[3]
    local lane = redis.call("HGET", cmd_key(id), "lane")
    redis.call("ZREM", RETRY, id)
    if lane then
      redis.call("HSET", cmd_key(id), "state", "pending")
      redis.call("RPUSH", lane_key(lane), id)
    end
  end
end

-- A lane's rate bucket (rate.rs in milliseconds): one millisecond refills `rp` units, a start
-- costs `rt` units, a full bucket holds `rp * rt` (it bursts to `rp` starts). Read refreshed
-- to now; a bucket never written is full.
local function read_bucket(lane, spec)
  local capacity = spec.rp * spec.rt
  local stored = redis.call("HMGET", BUCKETS, lane .. ":units", lane .. ":at")
  local units, at = tonumber(stored[1]), tonumber(stored[2])
  if units == nil then
    return capacity
  end
  if NOW > at then
    units = math.min(capacity, units + (NOW - at) * spec.rp)
  end
  return units
end

local function write_bucket(lane, units)
  redis.call("HSET", BUCKETS, lane .. ":units", units, lane .. ":at", NOW)
end

-- The boost a command that waited `waited` ms has earned (config.rs `boost_for`).
local function boost_for(spec, waited)
  if not spec.bd then return 0 end
  local remaining = 1.0 - (waited / spec.bd)
  local best = 0
  for _, step in ipairs(spec.bs or {}) do
    if remaining <= step[1] and step[2] > best then best = step[2] end
  end
  return best
end
