-- The shared lanes' store: every operation of the contract (python/lanemq/lanes/_store.py) is
-- one call of this script, KEYS[1] the store's `meta` hash, ARGV[1] the operation's name and
-- the rest its arguments (crates/lanemq-redis/src/lanes/ops.rs). An optional argument is
-- "-" for None, or "+" and its text. The helpers, recovery and the rate buckets are
-- lua/includes/lanes.lua's, the claim lua/includes/lanes_claim.lua's, both in front of this
-- file.
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
  drop_owned(pid)
  redis.call("DEL", proc_key("held", pid), proc_key("owned", pid), proc_key("names", pid),
    proc_key("wake", pid), proc_key("lost", pid), proc_key("outcomes", pid))
  redis.call("SREM", IDLE, pid)
  redis.call("ZREM", PROCS, pid)
  -- (what claims owed it may be another process's to claim now)
  wake_all()
  return true
end

-- Adds a pending command at the back of lane `lane` (checked); returns its id.
local function add_command(submitter, lane, name, owner, payload)
  local id = redis.call("HINCRBY", META, "id", 1)
  local fields = {"lane", lane, "submitter", submitter, "state", "pending", "attempt", 0,
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
  return id
end

-- ARGV: submitter, then per command: lane index, name, owner, payload (optional each).
-- Every lane is checked before anything is written (a script's error undoes nothing), so a
-- bad one refuses the batch; one wake for the whole batch. Returns the new ids, in order.
local function enqueue_many()
  local lanes = stored_lanes()
  for i = 3, #ARGV, 4 do
    local lane = tonumber(ARGV[i])
    if lane == nil or lane < 0 or lane >= #lanes or lane % 1 ~= 0 then
      error({err = "LANEMQ_BAD_LANE " .. ARGV[i] .. " " .. #lanes})
    end
  end
  recover()
  local ids = {}
  for i = 3, #ARGV, 4 do
    ids[#ids + 1] = add_command(ARGV[2], tonumber(ARGV[i]), optional(ARGV[i + 1]),
      optional(ARGV[i + 2]), optional(ARGV[i + 3]))
  end
  wake_all()
  return ids
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

-- Ends command `id` with `result` if `pid` holds it (no wake: the caller wakes once). A
-- callable's outcome is its owner's to settle: only its slot frees.
local function complete_one(pid, id, result)
  local c = held(pid, id)
  if not c then return false end
  finish(pid, id, c)
  if c.name then push_outcome(c.submitter, id, true, result) end
  redis.call("DEL", cmd_key(id))
  return true
end

-- ARGV: pid, then per command: id, result. Returns per command 1 (ended) or 0 (`pid` did
-- not hold it); one wake for the batch when any ended.
local function complete_many()
  local pid = ARGV[2]
  local done, any = {}, false
  for i = 3, #ARGV, 2 do
    local ended = complete_one(pid, ARGV[i], ARGV[i + 1])
    done[#done + 1] = ended and 1 or 0
    any = any or ended
  end
  if any then wake_all() end
  return done
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

-- ARGV: pid. Gives back the wake token a wait took for a caller that no longer waited (its
-- awaitable was cancelled), so the process's next wait sees it.
local function rewake()
  wake(ARGV[2])
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

local ops = {setup = setup, join = join, renew = renew, leave = leave,
  enqueue_many = enqueue_many, claim = claim, complete_many = complete_many, fail = fail,
  release = release, cancel = cancel, outcomes = outcomes, rewake = rewake, stats = stats, dead_letters = dead_letters,
  clear_all = clear_all}
local run = ops[op]
if not run then
  error({err = "LANEMQ_BAD_OP " .. tostring(op)})
end
return run()
