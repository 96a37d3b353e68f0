-- Job schedulers (records: lua/includes/schedulers.lua). Rust decides (crates/lanemq-core/src/jobs/
-- scheduler.rs) from what it read and computes the run times; the writes here first check that
-- the record's version `v` (and, for an upsert, the pending occurrence's state) is still what
-- Rust read, and answer {"retry"} otherwise: Rust reads again and decides again. ARGV = now,
-- max_events, op, key, then by op:
--   "get"                     {record JSON or false, state of its pending occurrence or false;
--                             "kept" when it waits on its template's dedup key (state_of)}
--   "list", start, end, asc   per scheduler of ZRANGE start..end: {key, record, state}
--   "remove"                  removes the scheduler and its pending occurrence if it has not
--                             started: {1}, or {0} when there is none
--   "upsert", v, state, keep (0/1), replace (0/1), number, base record JSON, complete (0/1),
--     run times...            keep: {"ok", pending job}. Otherwise removes the pending
--                             occurrence if `replace`, produces occurrence `number` at the first
--                             run time whose id is free (the replaced one's counts), writes the
--                             record (the later run times are its `upcoming`): {"ok", job}; or
--                             {"nofree"} when every time is taken and `complete` (the schedule
--                             has no more), {"more"} when it is not (Rust sends more times)
--   "advance", v, number, complete (0/1), run times...
--                             repairs a stale record (scheduler.rs on_claim decided Advance at
--                             the stale claim's time): as an upsert's placement; {"ok"},
--                             {"more"}, or the scheduler is removed when no time is free
--   "finish", v               removes a stale record whose schedule ended: {"ok"}
--   "upcoming", v, complete (0/1), run times...
--                             a new upcoming list (a top-up): {"ok"}
-- "v" is "" for "no record".
local op, key = ARGV[3], ARGV[4]

-- The key of the template's dedup id, when occurrence `pending` of record `rec` is no job but
-- waits on it (keep_last) for the key's owner to finish: still the scheduler's pending
-- occurrence (lifecycle::schedulers kept_owner); else nil.
local function kept_on(rec, pending)
  local dedup = dedup_of(rec.opts)
  if not dedup then return nil end
  local k = key_read(dedup.id)
  if k and k.next and cjson.decode(k.next[3]).job_id == pending then
    k.id = dedup.id
    return k
  end
  return nil
end

-- A removed scheduler's pending occurrence that waits on its template's dedup key is dropped
-- from the key: added when the owner finishes, it would run once with no scheduler. The owner
-- keeps the key (lifecycle::schedulers drop_waiting_occurrence).
local function drop_waiting_occurrence(rec, pending)
  local k = kept_on(rec, pending)
  if k then key_write(k.id, k.owner, k.exp, nil) end
end

-- The state of the pending occurrence of scheduler `k` (false when there is none); "kept"
-- when it is no job but waits on its template's dedup key (scheduler.rs Current::kept).
local function state_of(k, rec)
  if not rec then return false end
  local pending = occurrence_id(k, rec.next_run)
  local state = get("state", pending)
  if state then return state end
  if kept_on(rec, pending) then return "kept" end
  return false
end

local function times_from(first)
  local times = {}
  for i = first, #ARGV do times[#times + 1] = ARGV[i] end
  return times
end

if op == "get" then
  local raw = redis.call("HGET", SCHEDULERS, key)
  if not raw then return {false, false} end
  return {raw, state_of(key, cjson.decode(raw))}
elseif op == "list" then
  local range = "ZRANGE"
  if ARGV[7] ~= "1" then range = "ZREVRANGE" end
  local out = {}
  for _, k in ipairs(redis.call(range, SCHEDULERS_NEXT, ARGV[5], ARGV[6])) do
    local raw = redis.call("HGET", SCHEDULERS, k)
    if raw then out[#out + 1] = {k, raw, state_of(k, cjson.decode(raw))} end
  end
  return out
elseif op == "remove" then
  local rec = sched_read(key)
  if not rec then return {0} end
  local pending = occurrence_id(key, rec.next_run)
  local state = get("state", pending)
  if state and not_started(state) then remove_occurrence(pending, state)
  elseif not state then drop_waiting_occurrence(rec, pending) end
  sched_delete(key)
  return {1}
end

-- The writes: the version must be the one Rust read.
local rec = sched_read(key)
if ((rec and rec.v) or "") ~= ARGV[5] then return {"retry"} end

if op == "upsert" then
  local state = state_of(key, rec) or ""
  if state ~= ARGV[6] then return {"retry"} end
  local pending = rec and occurrence_id(key, rec.next_run)
  -- A kept occurrence is no job: the answer is its key's owner, as when it was produced; a
  -- new occurrence replaces it on the key (create_occurrence), with nothing to remove.
  if ARGV[7] == "1" then
    if state == "kept" then return {"ok", job(kept_on(rec, pending).owner)} end
    return {"ok", job(pending)}
  end
  local replaced = ARGV[8] == "1" and pending or nil
  local times = times_from(12)
  local i = first_free(key, times, 1, replaced)
  if not i then
    if ARGV[11] == "1" then return {"nofree"} end
    return {"more"}
  end
  if replaced and state ~= "kept" then remove_occurrence(replaced, state) end
  local new = cjson.decode(ARGV[10])
  local id = create_occurrence(key, new, times[i])
  new.count, new.next_run, new.v = ARGV[9], times[i], rec and rec.v
  if not new.every then
    new.upcoming = {unpack(times, i + 1)}
    new.complete = ARGV[11] == "1"
  end
  sched_write(key, new)
  return {"ok", job(id)}
elseif op == "advance" then
  if not rec.stale then return {"retry"} end
  local times = times_from(8)
  local i = first_free(key, times, 1, nil)
  if not i then
    if ARGV[7] ~= "1" then return {"more"} end
    sched_delete(key)
    return {"ok"}
  end
  create_occurrence(key, rec, times[i])
  rec.count, rec.next_run, rec.stale = ARGV[6], times[i], nil
  if not rec.every then
    rec.upcoming = {unpack(times, i + 1)}
    rec.complete = ARGV[7] == "1"
  end
  sched_write(key, rec)
  return {"ok"}
elseif op == "finish" then
  sched_delete(key)
  return {"ok"}
elseif op == "upcoming" then
  rec.upcoming = times_from(7)
  rec.complete = ARGV[6] == "1"
  sched_write(key, rec)
  return {"ok"}
end
return redis.error_reply("schedulers: unknown op " .. tostring(op))
