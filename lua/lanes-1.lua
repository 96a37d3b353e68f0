-- The shared lanes' store: every operation of the contract (python/lanemq/lanes/_store.py) is
-- one call of this script, KEYS[1] the store's `meta` hash, ARGV[1] the operation's name and
-- the rest its arguments (crates/lanemq-redis/src/lanes/ops.rs). An optional argument is
-- "-" for None, or "+" and its text. The helpers, recovery and the rate buckets are
-- lua/includes/lanes.lua's, in front of this file.
local op = ARGV[1]

local function optional(arg)
  if arg == "-" then return nil end
  return string.sub(arg, 2)
end

-- Replaces `pid`'s names with ARGV[from..].
local function write_names(pid, from)
  local names = proc_key("names", pid)
  redis.call("DEL", names)
  for i = from, #ARGV do
    redis.call("SADD", names, ARGV[i])
  end
end

-- ARGV: config, lanes (JSON), global cap ("-" or "+n"). Returns the stored config.
local function setup()
  local stored = redis.call("HGET", META, "config")
  if stored then return stored end
  redis.call("HSET", META, "config", ARGV[2], "lanes", ARGV[3])
  local global = optional(ARGV[4])
  if global then redis.call("HSET", META, "global", global) end
  return ARGV[2]
end

-- ARGV: pid, lease_ms, names... A joined process is idle: it has taken nothing yet.
local function join()
  local pid = ARGV[2]
  redis.call("ZADD", PROCS, NOW + tonumber(ARGV[3]), pid)
  write_names(pid, 4)
  redis.call("SADD", IDLE, pid)
  redis.call("DEL", proc_key("lost", pid))
  return true
end

-- ARGV: pid, lease_ms, names... Returns the ids a recovery took from it since it last looked.
local function renew()
  local pid = ARGV[2]
  -- (`pid` too, if its lease ended: a renewal too late finds its commands gone, as another
  -- process's claim would have made them)
  recover()
  local live = redis.call("ZSCORE", PROCS, pid)
  local lost = {}
  if not live then
    lost = redis.call("SMEMBERS", proc_key("lost", pid))
    redis.call("DEL", proc_key("lost", pid))
    redis.call("SADD", IDLE, pid)
  end
  redis.call("ZADD", PROCS, NOW + tonumber(ARGV[3]), pid)
  write_names(pid, 4)
  local ids = {}
  for i, id in ipairs(lost) do ids[i] = tonumber(id) end
  table.sort(ids)
  return ids
end

-- A held named command given back unfinished (released, or held by a process that leaves):
-- to the front of its lane, its attempt given back too (it did not run to an end; a recovery
-- keeps the attempt, as the command may have run).
local function give_back(id, c)
  redis.call("HSET", cmd_key(id), "state", "pending", "attempt", tonumber(c.attempt) - 1)
  redis.call("HDEL", cmd_key(id), "holder")
  redis.call("LPUSH", lane_key(c.lane), id)
end

-- ARGV: pid. Drops its pending callables, gives back anything it still holds (named: to the
-- front of its lane; callables dropped) and forgets it.
local function leave()
  local pid = ARGV[2]
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("held", pid))) do
    local c = command(id)
    if c then
      free_slot(c.lane)
      if c.name then
        give_back(id, c)
      else
        redis.call("DEL", cmd_key(id))
      end
    end
  end
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("owned", pid))) do
    local c = command(id)
    if c and c.state == "pending" then
      redis.call("LREM", lane_key(c.lane), 1, id)
    elseif c and c.state == "retry" then
      redis.call("ZREM", RETRY, id)
    end
    redis.call("DEL", cmd_key(id))
  end
  redis.call("DEL", proc_key("held", pid), proc_key("owned", pid), proc_key("names", pid),
    proc_key("wake", pid), proc_key("lost", pid), proc_key("outcomes", pid))
  redis.call("SREM", IDLE, pid)
  redis.call("ZREM", PROCS, pid)
  -- (what claims owed it may be another process's to claim now)
  wake_all()
  return true
end

-- ARGV: submitter, lane index, name, owner, payload (optional each). Returns the new id.
local function enqueue()
  local lanes = stored_lanes()
  local lane = tonumber(ARGV[3])
  if lane == nil or lane < 0 or lane >= #lanes or lane % 1 ~= 0 then
    error({err = "LANEMQ_BAD_LANE " .. ARGV[3] .. " " .. #lanes})
  end
  recover()
  local id = redis.call("HINCRBY", META, "id", 1)
  local name, owner, payload = optional(ARGV[4]), optional(ARGV[5]), optional(ARGV[6])
  local fields = {"lane", lane, "submitter", ARGV[2], "state", "pending", "attempt", 0,
    "ready", NOW}
  if name then
    fields[#fields + 1], fields[#fields + 2] = "name", name
  else
    fields[#fields + 1], fields[#fields + 2] = "owner", owner
    redis.call("SADD", proc_key("owned", owner), id)
  end
  if payload then
    fields[#fields + 1], fields[#fields + 2] = "payload", payload
  end
  redis.call("HSET", cmd_key(id), unpack(fields))
  redis.call("RPUSH", lane_key(lane), id)
  wake_all()
  return id
end

-- Whether `pid` holds command `id`; its fields if so.
local function held(pid, id)
  local c = command(id)
  if c and c.state == "running" and c.holder == pid then return c end
  return nil
end

-- Ends a held command: its slot is free and it is no longer `pid`'s.
local function finish(pid, id, c)
  free_slot(c.lane)
  redis.call("SREM", proc_key("held", pid), id)
end

-- ARGV: pid, id, result. A callable's outcome is its owner's to settle: only its slot frees.
local function complete()
  local pid, id = ARGV[2], ARGV[3]
  local c = held(pid, id)
  if not c then return false end
  finish(pid, id, c)
  if c.name then push_outcome(c.submitter, id, true, ARGV[4]) end
  redis.call("DEL", cmd_key(id))
  wake_all()
  return true
end

-- ARGV: pid, id, error, retry_in_ms (optional), command type, letter limit.
local function fail()
  local pid, id, err = ARGV[2], ARGV[3], ARGV[4]
  local c = held(pid, id)
  if not c then return false end
  finish(pid, id, c)
  local retry_in = optional(ARGV[5])
  local limit = tonumber(ARGV[7])
  redis.call("HSET", META, "letter_limit", limit)
  if retry_in then
    local due = NOW + tonumber(retry_in)
    redis.call("HSET", cmd_key(id), "state", "retry", "ready", due)
    redis.call("HDEL", cmd_key(id), "holder")
    redis.call("ZADD", RETRY, due, id)
    if not c.name then redis.call("SADD", proc_key("owned", c.owner), id) end
  else
    push_letter(id, ARGV[6], c.lane, err, c.attempt, limit)
    if c.name then push_outcome(c.submitter, id, false, err) end
    redis.call("DEL", cmd_key(id))
  end
  wake_all()
  return true
end

-- ARGV: pid, id. A named command goes back to the front of its lane; a callable is dropped.
local function release()
  local pid, id = ARGV[2], ARGV[3]
  local c = held(pid, id)
  if not c then return false end
  finish(pid, id, c)
  if c.name then
    give_back(id, c)
  else
    redis.call("DEL", cmd_key(id))
  end
  wake_all()
  return true
end

-- ARGV: id. Only a pending or retry-waiting command is withdrawn.
local function cancel()
  local id = ARGV[2]
  local c = command(id)
  if not c then return false end
  if c.state == "pending" then
    redis.call("LREM", lane_key(c.lane), 1, id)
  elseif c.state == "retry" then
    redis.call("ZREM", RETRY, id)
  else
    return false
  end
  if c.name then
    push_outcome(c.submitter, id, false, CANCELLED)
  else
    redis.call("SREM", proc_key("owned", c.owner), id)
  end
  redis.call("DEL", cmd_key(id))
  wake_all()
  return true
end

-- ARGV: pid. The outcomes for it, oldest first, as JSON texts; taken.
local function outcomes()
  local list = proc_key("outcomes", ARGV[2])
  local taken = redis.call("LRANGE", list, 0, -1)
  redis.call("DEL", list)
  return taken
end

-- Per lane: {pending, active, retrying} (none before `setup`).
local function stats()
  if redis.call("HEXISTS", META, "lanes") == 0 then return {} end
  local lanes = stored_lanes()
  local retrying = {}
  for _, id in ipairs(redis.call("ZRANGE", RETRY, 0, -1)) do
    local lane = redis.call("HGET", cmd_key(id), "lane")
    if lane then retrying[lane] = (retrying[lane] or 0) + 1 end
  end
  local out = {}
  for i = 1, #lanes do
    local lane = tostring(i - 1)
    out[i] = {redis.call("LLEN", lane_key(lane)),
      tonumber(redis.call("HGET", ACTIVE, lane)) or 0, retrying[lane] or 0}
  end
  return out
end

local function dead_letters()
  return redis.call("LRANGE", LETTERS, 0, -1)
end

-- Every key of the store: they all start with its base (the hash tag included), so a SCAN
-- of this node (the slot's master, on a cluster) finds them; glob characters escaped.
local function clear_all()
  local pattern = string.gsub(BASE, "([%*%?%[%]\\])", "\\%1") .. "*"
  local cursor = "0"
  repeat
    local page = redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
    cursor = page[1]
    for _, key in ipairs(page[2]) do
      redis.call("DEL", key)
    end
  until cursor == "0"
  return true
end

-- ARGV: pid, max_n. Recovers, promotes due retries, then dispatches over every process's
-- lanes as one dispatcher would (dispatch.rs, capacity.rs): returns {ms until something timed
-- (-1: nothing), then per claimed command its id, lane, name, payload, attempt, submitter}.
local function claim()
  local pid, max_n = ARGV[2], tonumber(ARGV[3])
  local lanes = stored_lanes()
  recover()
  promote_retries()
  if not redis.call("ZSCORE", PROCS, pid) then
    -- (a process that is not live runs nothing: it joins, or renews, first)
    return {-1}
  end
  -- Who may run what: every live process's names, and those of the idle ones but `pid`.
  local mine, registered, idle_names, live = {}, {}, {}, {}
  for _, other in ipairs(redis.call("ZRANGE", PROCS, 0, -1)) do
    live[other] = true
    local idle = other ~= pid and redis.call("SISMEMBER", IDLE, other) == 1
    for _, name in ipairs(redis.call("SMEMBERS", proc_key("names", other))) do
      registered[name] = true
      if other == pid then mine[name] = true end
      if idle then idle_names[name] = true end
    end
  end
  -- The lanes' counters for this claim: active includes what is owed to other processes
  -- (their slots, for the rest of this claim only); `units` the rate buckets, likewise.
  local n = #lanes
  local global = tonumber(redis.call("HGET", META, "global"))
  local active, units, stored_units, spent, total = {}, {}, {}, {}, 0
  for i = 1, n do
    local lane = i - 1
    active[i] = tonumber(redis.call("HGET", ACTIVE, lane)) or 0
    total = total + active[i]
    spent[i] = 0
    if lanes[i].rp then
      stored_units[i] = read_bucket(lane, lanes[i])
      units[i] = stored_units[i]
    end
  end
  local mine_in_lane = {}
  for i = 1, n do mine_in_lane[i] = 0 end
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("held", pid))) do
    local lane = tonumber(redis.call("HGET", cmd_key(id), "lane"))
    if lane then mine_in_lane[lane + 1] = mine_in_lane[lane + 1] + 1 end
  end

  -- Each lane's pending commands, read a page at a time; `cursor` is the next to look at.
  local PAGE = 100
  local pending, cursor, read_to = {}, {}, {}
  for i = 1, n do pending[i], cursor[i], read_to[i] = {}, 1, 0 end
  local fields = {}
  local function at(i, k)
    while k > read_to[i] do
      local page = redis.call("LRANGE", lane_key(i - 1), read_to[i], read_to[i] + PAGE - 1)
      if #page == 0 then return nil end
      for _, id in ipairs(page) do pending[i][#pending[i] + 1] = id end
      read_to[i] = read_to[i] + #page
    end
    local id = pending[i][k]
    if not fields[id] then
      local f = redis.call("HMGET", cmd_key(id), "name", "owner", "ready")
      fields[id] = {name = f[1] or nil, owner = f[2] or nil, ready = tonumber(f[3]) or NOW}
    end
    return id, fields[id]
  end
  -- The lane's oldest command some live process can run (those nobody can run block nothing).
  local function head(i)
    while true do
      local id, c = at(i, cursor[i])
      if not id then return nil end
      if (c.name and registered[c.name]) or (not c.name and live[c.owner]) then
        return id, c
      end
      cursor[i] = cursor[i] + 1
    end
  end
  local function may_start(i)
    local spec = lanes[i]
    if active[i] >= spec.max then return false end
    if global then
      local reserved = 0
      for j = 1, n do
        if j ~= i then reserved = reserved + math.max(0, (lanes[j].min or 0) - active[j]) end
      end
      if global - total <= reserved then return false end
    end
    return not spec.rp or units[i] >= spec.rt
  end

  local claimed = {}
  local taken = 0
  -- (taken out of their lists after the last page is read: `at` pages by offset)
  local taken_from = {}
  while taken < max_n do
    local best, best_key
    for i = 1, n do
      local id, c = head(i)
      if id and may_start(i) then
        local spec = lanes[i]
        local effective = spec.p - boost_for(spec, math.max(0, NOW - c.ready))
        if not best or effective < best_key[1]
            or (effective == best_key[1] and spec.p < best_key[2]) then
          best, best_key = i, {effective, spec.p}
        end
      end
    end
    if not best then break end
    local i = best
    local id, c = head(i)
    cursor[i] = cursor[i] + 1
    active[i] = active[i] + 1
    total = total + 1
    if lanes[i].rp then units[i] = units[i] - lanes[i].rt end
    local mine_to_run
    if c.name then
      -- Turns: a lane's named command goes to an idle process that can run it, rather than
      -- to one that already holds a command of that lane.
      mine_to_run = mine[c.name] and not (mine_in_lane[i] > 0 and idle_names[c.name])
    else
      mine_to_run = c.owner == pid
    end
    if mine_to_run then
      local lane = i - 1
      local attempt = redis.call("HINCRBY", cmd_key(id), "attempt", 1)
      redis.call("HSET", cmd_key(id), "state", "running", "holder", pid)
      taken_from[#taken_from + 1] = {lane, id}
      redis.call("SADD", proc_key("held", pid), id)
      redis.call("HINCRBY", ACTIVE, lane, 1)
      if not c.name then redis.call("SREM", proc_key("owned", pid), id) end
      spent[i] = spent[i] + 1
      local payload = redis.call("HGET", cmd_key(id), "payload")
      local submitter = redis.call("HGET", cmd_key(id), "submitter")
      mine_in_lane[i] = mine_in_lane[i] + 1
      taken = taken + 1
      for _, v in ipairs({tonumber(id), lane, c.name or false, payload or false, attempt,
          submitter}) do
        claimed[#claimed + 1] = v
      end
    end
  end
  -- The buckets keep the tokens this process spent; what it owed, the owing process spends
  -- when it claims.
  for i = 1, n do
    if spent[i] > 0 and lanes[i].rp then write_bucket(i - 1, stored_units[i] - spent[i] * lanes[i].rt) end
  end

  -- What falls due next: the earliest retry, and each rate-held lane's next token where this
  -- process could run a pending command and the lane has a slot. The search for such a command
  -- stops after SCAN_FOR_MINE commands (a lane full of other processes' work would cost every
  -- claim a read of all of it): past that, the token counts anyway, and the worst it does is
  -- wake this process for a claim that takes nothing.
  local SCAN_FOR_MINE = 1000
  local wait
  local first = redis.call("ZRANGE", RETRY, 0, 0, "WITHSCORES")
  if #first > 0 then wait = math.max(0, tonumber(first[2]) - NOW) end
  for i = 1, n do
    local spec = lanes[i]
    if spec.rp and active[i] < spec.max and units[i] < spec.rt then
      local k = cursor[i]
      while true do
        local id, c = at(i, k)
        if not id then break end
        if (c.name and mine[c.name]) or (not c.name and c.owner == pid)
            or k - cursor[i] >= SCAN_FOR_MINE then
          local token = math.ceil((spec.rt - units[i]) / spec.rp)
          if not wait or token < wait then wait = token end
          break
        end
        k = k + 1
      end
    end
  end
  for _, entry in ipairs(taken_from) do
    redis.call("LREM", lane_key(entry[1]), 1, entry[2])
  end
  if taken == 0 then
    redis.call("SADD", IDLE, pid)
  else
    redis.call("SREM", IDLE, pid)
  end
  local reply = {wait or -1}
  for _, v in ipairs(claimed) do reply[#reply + 1] = v end
  return reply
end

local ops = {setup = setup, join = join, renew = renew, leave = leave, enqueue = enqueue,
  claim = claim, complete = complete, fail = fail, release = release, cancel = cancel,
  outcomes = outcomes, stats = stats, dead_letters = dead_letters, clear_all = clear_all}
local run = ops[op]
if not run then
  error({err = "LANEMQ_BAD_OP " .. tostring(op)})
end
return run()
