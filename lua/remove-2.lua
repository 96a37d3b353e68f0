-- Removing jobs. ARGV = now, max_events, op, then by op:
--   "job", job id          remove, with the job's tree of children: refused while a live lock
--                          holds a job of it, and for a job scheduler's pending occurrence.
--                          Returns {"ok"}, or {"missing"} / {"locked"} / {"refused", message}
--                          (a descendant is locked) / {"scheduled", scheduler key}; events
--                          removed{prev}.
--   "drain", delayed (0/1) every waiting job (and delayed one), except the pending occurrences
--                          of job schedulers. Returns {"ok", count}.
--   "clean", cutoff, limit, state code
--                          up to limit (0 = all) jobs of that state, in the state's order, whose
--                          finish time (creation time when unfinished) is <= cutoff, skipping
--                          live-locked ones and pending occurrences. Returns {"ok", id...}.
-- drain and clean emit cleaned{count} when they removed anything. Removed children's parents
-- hear of it after that (lua/includes/flows.lua); a parent of this queue that a drain or clean
-- leaves with no pending child is deleted (removed{prev}), as in BullMQ.
local now, max_events, op = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local SETS = {[WAITING_STATE] = WAITING, [DELAYED_STATE] = DELAYED, [ACTIVE_STATE] = ACTIVE,
  [CHILDREN_STATE] = CHILDREN, [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}

-- The waiting members a clean takes (a set): off both keys in one pass, before the jobs go.
local unlisted = {}

-- Takes the members in the set `members` off the list (one pass: a copy without them) and off
-- the sorted set, rather than a scan of the list per job.
local function unlist_waiting(members)
  local kept, all = {}, {}
  for m in pairs(members) do all[#all + 1] = m end
  zrem(WAITING, all)
  for _, m in ipairs(redis.call("LRANGE", WAITING0, 0, -1)) do
    if not members[m] then kept[#kept + 1] = m end
  end
  redis.call("DEL", WAITING0)
  chunked("RPUSH", WAITING0, kept, 1)
end

local function cleaned(count)
  if count > 0 then emit("cleaned", nil, "count", tostring(count)) end
end

if op == "job" then
  local id = ARGV[4]
  local key = pending_occurrence_of(id)
  if key then return {"scheduled", key} end
  return {remove_job(id)}
elseif op == "drain" then
  -- The pending occurrences of job schedulers stay, waiting or delayed (as in BullMQ).
  local pending, kept = pending_occurrences(), false
  local doomed = {}
  for _, m in ipairs(redis.call("LRANGE", WAITING0, 0, -1)) do
    if pending[string.sub(m, 15)] then kept = true else doomed[#doomed + 1] = m end
  end
  for _, m in ipairs(redis.call("ZRANGE", WAITING, 0, -1)) do
    if pending[string.sub(m, 15)] then kept = true else doomed[#doomed + 1] = m end
  end
  local waiting = #doomed
  if ARGV[4] == "1" then
    for _, m in ipairs(redis.call("ZRANGE", DELAYED, 0, -1)) do
      if not pending[string.sub(m, 15)] then doomed[#doomed + 1] = m end
    end
  end
  if home() then
    for _, m in ipairs(doomed) do need_chain(opts_of(string.sub(m, 15))) end
  end
  if kept then
    local members = {}
    for i = 1, waiting do members[doomed[i]] = true end
    unlist_waiting(members)
  else
    -- Every waiting job goes: both keys at once, rather than a scan of the list per job;
    -- and the turns with them (each job leaves its group's waiting set below).
    redis.call("DEL", WAITING0, WAITING, groups_key("turns"))
  end
  for i, m in ipairs(doomed) do
    local id = string.sub(m, 15)
    discard(id, tonumber(get("state", id)), i <= waiting)
  end
  cleaned(#doomed)
  settle_removals(true)
  return {"ok", #doomed}
elseif op == "clean" then
  local cutoff, limit, state = ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
  local doomed = {"ok"}
  if state == COMPLETED_STATE or state == FAILED_STATE then
    -- Scored by finish time, and never locked.
    local range = {"ZRANGEBYSCORE", SETS[state], "-inf", cutoff}
    if limit > 0 then range[5], range[6], range[7] = "LIMIT", 0, limit end
    for _, m in ipairs(redis.call(unpack(range))) do doomed[#doomed + 1] = string.sub(m, 15) end
  else
    cutoff = tonumber(cutoff)
    -- (A finished job is never a pending occurrence: those are waiting or delayed.)
    local pending = pending_occurrences()
    local page, start = 1000, 0
    while limit == 0 or #doomed - 1 < limit do
      local members
      if state == WAITING_STATE then members = waiting_range(start, start + page - 1)
      else members = redis.call("ZRANGE", SETS[state], start, start + page - 1) end
      for _, m in ipairs(members) do
        local id = string.sub(m, 15)
        local at = job_member(m) and tonumber(get("finished", id) or get("created", id))
        if at and at <= cutoff and not live_lock(id) and not pending[id] then
          doomed[#doomed + 1] = id
          if state == WAITING_STATE then unlisted[m] = true end
          if #doomed - 1 == limit then break end
        end
      end
      if #members < page then break end
      start = start + page
    end
  end
  if home() then
    for i = 2, #doomed do need_chain(opts_of(doomed[i])) end
  end
  local taken = next(unlisted) ~= nil
  if taken then unlist_waiting(unlisted) end
  for i = 2, #doomed do discard(doomed[i], state, taken) end
  cleaned(#doomed - 1)
  settle_removals(true)
  return doomed
end
return redis.error_reply("remove: unknown op " .. tostring(op))
