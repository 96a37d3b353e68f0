-- remove_orphaned_jobs, one batch: ARGV = now, max_events, pass, cursor, count. Removes the
-- data of jobs that no state set references (left by a crash or a bug: a script that failed
-- half-way, a hand edit), as BullMQ's removeOrphanedJobs does. `pass` is "jobs" (the job
-- hashes, by SCAN of the keys starting with JOB) or "logs" (LOGS, by HSCAN); the client runs
-- "jobs" first, each from `cursor` (about `count` entries a call), so a big queue never holds
-- the server in one long script. Returns {next cursor ("0": that pass is done), how many jobs
-- this batch removed}; it writes no event.
--
-- A job is referenced when its member is in one of the state sets: WAITING under its order
-- (`ord`, else its seq), the others under its seq. Each check is exact, and it runs in the
-- same script as the removal, so a job added, moved or finished between two batches is seen
-- as it is then. In the `state` pass the set its state names is asked first, for the whole
-- batch at once (one ZMSCORE per set; a healthy job is found there); in the logs pass a job
-- that exists was judged in the first one, or is newer than it (and made by a script, so
-- referenced), and is skipped. Only the rest is looked for in every set, one by one.
local pass, cursor, count = ARGV[3], ARGV[4], ARGV[5]
if pass ~= "jobs" and pass ~= "logs" then
  return redis.error_reply("orphans: unknown pass " .. tostring(pass))
end

local SETS = {[WAITING_STATE] = WAITING, [DELAYED_STATE] = DELAYED, [ACTIVE_STATE] = ACTIVE,
  [CHILDREN_STATE] = CHILDREN, [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}
local BY_SEQ = {DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED}

-- The job's member in `set_key`, or nil when its fields cannot make one (orphans are data
-- nothing checked: a seq or ord that is not a number).
local function member_in(set_key, id, seq, ord)
  if set_key == WAITING then
    local order = tonumber(ord or seq or "")
    return order and member(order, id)
  end
  local n = tonumber(seq or "")
  return n and hex(n) .. id
end

-- Whether any state set holds job `id` (the list of waiting jobs of priority 0 too, by a scan:
-- only suspects get here).
local function referenced(id)
  local seq, ord = get("seq", id), get("ord", id)
  for _, set_key in ipairs({WAITING, DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED}) do
    local m = member_in(set_key, id, seq, ord)
    if m and redis.call("ZSCORE", set_key, m) then return true end
    if m and set_key == WAITING and redis.call("LPOS", WAITING0, m) then return true end
  end
  return false
end

-- Of the waiting members in the set `members`, those the list holds are marked found (true):
-- the list read in pages until every one is found, one pass for the whole batch.
local function find_listed(members)
  local left, page, start = 0, 1000, 0
  for _ in pairs(members) do left = left + 1 end
  while left > 0 do
    local listed = redis.call("LRANGE", WAITING0, start, start + page - 1)
    for _, m in ipairs(listed) do
      if members[m] == false then members[m] = true; left = left - 1 end
    end
    if #listed < page then break end
    start = start + page
  end
end

-- The job's hash, its logs and its own flow dependencies (as `delete` does, without the state
-- set it is in none of).
local function forget(id)
  redis.call("DEL", jkey(id))
  redis.call("HDEL", LOGS, id)
  forget_dependencies(id)
end

-- The batch's ids, each once (a scan may return an entry twice).
local ids, seen, page = {}, {}, nil
if pass == "jobs" then
  -- SCAN matches a glob: the characters special to it in the prefix are escaped.
  local pattern = string.gsub(JOB, "[%*%?%[%]\\]", "\\%0") .. "*"
  page = redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", count)
  for _, key in ipairs(page[2]) do
    local id = string.sub(key, #JOB + 1)
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
else
  page = redis.call("HSCAN", LOGS, cursor, "COUNT", count)
  local entries = page[2]
  for i = 1, #entries, 2 do
    local id = entries[i]
    if not seen[id] then seen[id] = true; ids[#ids + 1] = id end
  end
end

-- The ids to look for in every set: in the jobs pass those their state's set does not hold,
-- in the logs pass those without a job.
local suspects = {}
if pass == "jobs" then
  -- Per set: the members to ask for, and the ids (and priorities) they are of.
  local asked = {}
  for _, id in ipairs(ids) do
    local job_fields = fields(id, {"state", "seq", "ord", "prio"})
    local set_key = SETS[tonumber(job_fields[1]) or -1]
    local m = set_key and member_in(set_key, id, job_fields[2], job_fields[3])
    if m then
      local batch = asked[set_key]
      if not batch then batch = {members = {}, ids = {}, prios = {}}; asked[set_key] = batch end
      batch.members[#batch.members + 1] = m
      batch.ids[#batch.ids + 1] = id
      batch.prios[#batch.ids] = job_fields[4]
    else
      suspects[#suspects + 1] = id
    end
  end
  -- Waiting jobs of priority 0 are in the list: looked for there, the rest in WAITING below.
  local waiting = asked[WAITING]
  if waiting then
    local prios, listed, zset = waiting.prios, {}, {members = {}, ids = {}}
    for k, m in ipairs(waiting.members) do
      if prios[k] and prios[k] ~= "0" then
        zset.members[#zset.members + 1] = m; zset.ids[#zset.ids + 1] = waiting.ids[k]
      else
        listed[m] = false
      end
    end
    find_listed(listed)
    for k, m in ipairs(waiting.members) do
      if listed[m] == false then suspects[#suspects + 1] = waiting.ids[k] end
    end
    asked[WAITING] = #zset.members > 0 and zset or nil
  end
  for set_key, batch in pairs(asked) do
    local members, n = batch.members, #batch.members
    for first = 1, n, CHUNK do
      local last = math.min(first + CHUNK - 1, n)
      local scores = redis.call("ZMSCORE", set_key, unpack(members, first, last))
      for k = first, last do
        if not scores[k - first + 1] then suspects[#suspects + 1] = batch.ids[k] end
      end
    end
  end
else
  for _, id in ipairs(ids) do
    if not exists(id) then suspects[#suspects + 1] = id end
  end
end

local removed = 0
for _, id in ipairs(suspects) do
  if not referenced(id) then
    forget(id)
    removed = removed + 1
  end
end
return {page[1], removed}
