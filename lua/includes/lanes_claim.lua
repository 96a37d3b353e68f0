-- The claim of the shared lanes' store (lua/lanes-1.lua's `claim`): the in-process dispatch
-- decision (crates/lanemq-core/src/lanes/dispatch.rs over capacity.rs and rate.rs) made over
-- every process's lanes. Loaded between lua/includes/lanes.lua and lua/lanes-1.lua.

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
  -- Idle: it asked for work and got none. (A claim of 0 is a busy process's: were it idle,
  -- the turns would keep leaving it commands it does not come for.)
  if taken == 0 and max_n > 0 then
    redis.call("SADD", IDLE, pid)
  else
    redis.call("SREM", IDLE, pid)
  end
  local reply = {wait or -1}
  for _, v in ipairs(claimed) do reply[#reply + 1] = v end
  return reply
end
