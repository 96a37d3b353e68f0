-- The claim of the shared lanes' store (lua/lanes-1.lua's `claim`): the in-process dispatch
-- decision (crates/lanemq-core/src/lanes/dispatch.rs over capacity.rs and rate.rs) made over
-- every process's lanes. Loaded between lua/includes/lanes.lua and lua/lanes-1.lua.

-- How many pending ids a claim reads from a lane at a time (a lane may be long).
local PAGE = 100
-- How far behind a rate-held lane's head a claim looks for a command its process can run, to
-- say when that lane's next token comes (see `next_timed`).
local SCAN_FOR_MINE = 1000

-- Who may run what: `live` pids, every live process's names (`registered`), `pid`'s (`mine`),
-- and those of the idle processes but `pid` (`idle_names`, for the turns).
local function runners(pid)
  local who = {live = {}, registered = {}, mine = {}, idle_names = {}}
  for _, other in ipairs(redis.call("ZRANGE", PROCS, 0, -1)) do
    who.live[other] = true
    local idle = other ~= pid and redis.call("SISMEMBER", IDLE, other) == 1
    for _, name in ipairs(redis.call("SMEMBERS", proc_key("names", other))) do
      who.registered[name] = true
      if other == pid then who.mine[name] = true end
      if idle then who.idle_names[name] = true end
    end
  end
  return who
end

-- The lanes' slots and tokens for one claim (capacity.rs over every process's counters):
-- `active` and `units` (the buckets) count what this claim owes to other processes too, for
-- the rest of the claim only; `spent` counts the tokens it took for itself, which are stored.
local function capacity(lanes)
  local cap = {active = {}, units = {}, stored_units = {}, spent = {}, total = 0,
    global = tonumber(redis.call("HGET", META, "global"))}
  for i = 1, #lanes do
    local lane = i - 1
    cap.active[i] = tonumber(redis.call("HGET", ACTIVE, lane)) or 0
    cap.total = cap.total + cap.active[i]
    cap.spent[i] = 0
    if lanes[i].rp then
      cap.stored_units[i] = read_bucket(lane, lanes[i])
      cap.units[i] = cap.stored_units[i]
    end
  end
  -- A slot of its own, a global slot no other lane's unfilled min_concurrency reserves, and a
  -- rate token.
  function cap.may_start(i)
    local spec = lanes[i]
    if cap.active[i] >= spec.max then return false end
    if cap.global then
      local reserved = 0
      for j = 1, #lanes do
        if j ~= i then reserved = reserved + math.max(0, (lanes[j].min or 0) - cap.active[j]) end
      end
      if cap.global - cap.total <= reserved then return false end
    end
    return not spec.rp or cap.units[i] >= spec.rt
  end
  function cap.take(i)
    cap.active[i] = cap.active[i] + 1
    cap.total = cap.total + 1
    if lanes[i].rp then cap.units[i] = cap.units[i] - lanes[i].rt end
  end
  -- The buckets keep the tokens this process spent; what it owed, the owing process spends
  -- when it claims.
  function cap.store_buckets()
    for i = 1, #lanes do
      if cap.spent[i] > 0 and lanes[i].rp then
        write_bucket(i - 1, cap.stored_units[i] - cap.spent[i] * lanes[i].rt)
      end
    end
  end
  return cap
end

-- `at(i, k)`: lane i's k-th pending id (from 1) and the fields the dispatch needs, read a page
-- at a time and kept for the rest of the claim (nil past the end). Pages are read by offset:
-- the claim takes its ids out of the lists only once it read its last page.
local function pending_reader(n)
  local pending, read_to, fields = {}, {}, {}
  for i = 1, n do pending[i], read_to[i] = {}, 0 end
  return function(i, k)
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
end

-- How many commands of each lane `pid` holds (the turns ask).
local function held_per_lane(pid, n)
  local held = {}
  for i = 1, n do held[i] = 0 end
  for _, id in ipairs(redis.call("SMEMBERS", proc_key("held", pid))) do
    local lane = tonumber(redis.call("HGET", cmd_key(id), "lane"))
    if lane then held[lane + 1] = held[lane + 1] + 1 end
  end
  return held
end

-- Claims command `id` of lane `lane` for `pid`; returns its reply fields.
local function take_for(pid, lane, id, c)
  local attempt = redis.call("HINCRBY", cmd_key(id), "attempt", 1)
  redis.call("HSET", cmd_key(id), "state", "running", "holder", pid)
  redis.call("SADD", proc_key("held", pid), id)
  redis.call("HINCRBY", ACTIVE, lane, 1)
  if not c.name then redis.call("SREM", proc_key("owned", pid), id) end
  local stored = redis.call("HMGET", cmd_key(id), "payload", "submitter")
  return {tonumber(id), lane, c.name or false, stored[1] or false, attempt, stored[2]}
end

-- The milliseconds until something timed falls due for `pid` (nil: nothing): the earliest
-- retry, and each rate-held lane's next token where the lane has a slot and `pid` could run
-- one of its pending commands. The search for such a command stops after SCAN_FOR_MINE
-- commands (a lane full of other processes' work would cost every claim a read of all of
-- it): past that, the token counts anyway, and the worst it does is wake `pid` for a claim
-- that takes nothing.
local function next_timed(pid, lanes, cap, at, cursor, who)
  local wait
  local first = redis.call("ZRANGE", RETRY, 0, 0, "WITHSCORES")
  if #first > 0 then wait = math.max(0, tonumber(first[2]) - NOW) end
  for i = 1, #lanes do
    local spec = lanes[i]
    if spec.rp and cap.active[i] < spec.max and cap.units[i] < spec.rt then
      local k = cursor[i]
      while true do
        local id, c = at(i, k)
        if not id then break end
        if (c.name and who.mine[c.name]) or (not c.name and c.owner == pid)
            or k - cursor[i] >= SCAN_FOR_MINE then
          local token = math.ceil((spec.rt - cap.units[i]) / spec.rp)
          if not wait or token < wait then wait = token end
          break
        end
        k = k + 1
      end
    end
  end
  return wait
end

-- ARGV: pid, max_n. Recovers, promotes due retries, then dispatches over every process's
-- lanes as one dispatcher would: returns {ms until something timed (-1: nothing), then per
-- claimed command its id, lane, name, payload, attempt, submitter}.
local function claim()
  local pid, max_n = ARGV[2], tonumber(ARGV[3])
  local lanes = stored_lanes()
  recover()
  promote_retries()
  if not redis.call("ZSCORE", PROCS, pid) then
    -- (a process that is not live runs nothing: it joins, or renews, first)
    return {-1}
  end
  local n = #lanes
  local who, cap, at = runners(pid), capacity(lanes), pending_reader(n)
  local held = held_per_lane(pid, n)
  -- Each lane's next pending command to look at.
  local cursor = {}
  for i = 1, n do cursor[i] = 1 end
  -- The lane's oldest command some live process can run (those nobody can run block nothing).
  local function head(i)
    while true do
      local id, c = at(i, cursor[i])
      if not id then return nil end
      if (c.name and who.registered[c.name]) or (not c.name and who.live[c.owner]) then
        return id, c
      end
      cursor[i] = cursor[i] + 1
    end
  end

  local reply, taken, taken_from = {0}, 0, {}
  while taken < max_n do
    -- dispatch.rs: the lowest (priority - boost, priority, lane) of the lanes that may start.
    local best, best_key
    for i = 1, n do
      local id, c = head(i)
      if id and cap.may_start(i) then
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
    cap.take(i)
    local mine
    if c.name then
      -- Turns: a lane's named command goes to an idle process that can run it rather than to
      -- one that already holds a command of that lane.
      mine = who.mine[c.name] and not (held[i] > 0 and who.idle_names[c.name])
    else
      mine = c.owner == pid
    end
    -- (not mine: owed to the process that can run it, its slot and token taken above)
    if mine then
      for _, field in ipairs(take_for(pid, i - 1, id, c)) do reply[#reply + 1] = field end
      taken_from[#taken_from + 1] = {i - 1, id}
      cap.spent[i] = cap.spent[i] + 1
      held[i] = held[i] + 1
      taken = taken + 1
    end
  end
  cap.store_buckets()
  reply[1] = next_timed(pid, lanes, cap, at, cursor, who) or -1
  for _, entry in ipairs(taken_from) do
    redis.call("LREM", lane_key(entry[1]), 1, entry[2])
  end
  -- Idle: it asked for work and got none. (A claim of 0 is a busy process's: were it idle,
  -- the turns would keep leaving it commands it does not come for.)
  if taken == 0 and max_n > 0 then
    redis.call("SADD", IDLE, pid)
  else
    redis.call("SREM", IDLE, pid)
  end
  return reply
end
