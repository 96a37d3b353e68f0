-- Job schedulers (crates/lanemq-core/src/jobs/scheduler.rs decides; this is its Redis side).
-- Loaded after jobs.lua, by the scripts that reach them: those that claim (claim_jobs calls
-- scheduler_on_claim) and schedulers-2.lua; see crates/lanemq-redis/src/compose.rs.
--
-- SCHEDULERS maps a key to a JSON record; SCHEDULERS_NEXT scores each key by its next_run, so
-- lists come out in (next_run, key) order without decoding anything. Every number in a record
-- is a string: cjson writes numbers with 14 significant digits and reads them as doubles, and
-- counts, limits or ends may not fit either. Lua compares them with tonumber (ms timestamps are
-- exact) but writes back only the strings it was given or `int` of small integers.
--   spec, opts      the ScheduleSpec and the template options, as JSON text (Rust reads them)
--   name, data      the template's name and data (JSON text)
--   occ, prio, lifo what an occurrence is made of: `occ` is the template options' JSON object
--                   without its braces and without job_id, delay and scheduler, which
--                   occurrence_opts puts in front; prio (text) and lifo as create_jobs wants them
--   every           `every` schedules: the interval (ms); the next run is computed here
--   limit, end      the spec's limit and end, for the claim's checks
--   count, next_run occurrences produced, and the run time of the latest (the pending one's id
--                   is repeat:<key>:<next_run>)
--   upcoming        cron (and intervals too long for exact doubles): the schedule's run times
--                   after next_run, computed in Rust (Lua cannot evaluate cron); `complete` when
--                   the schedule has no run after the last of them (its end)
--   stale           the time of a claim that started the pending occurrence but found no usable
--                   upcoming time: no next occurrence yet; Rust produces it (see lua/README.md)
--   v               the record's version, bumped by every write: Rust's guarded writes
--                   (upsert, top-up, repair) name the version they read

local function occurrence_id(key, run) return "repeat:" .. key .. ":" .. run end

local function job_exists(id) return exists(id) end

local function not_started(state)
  state = tonumber(state)
  return state == WAITING_STATE or state == DELAYED_STATE
end

local function sched_read(key)
  local raw = redis.call("HGET", SCHEDULERS, key)
  if not raw then return nil end
  return cjson.decode(raw)
end

local function sched_write(key, rec)
  rec.v = int(tonumber(rec.v or "0") + 1)
  -- cjson writes an empty table as an object: no times means no field.
  if rec.upcoming and #rec.upcoming == 0 then rec.upcoming = nil end
  redis.call("HSET", SCHEDULERS, key, cjson.encode(rec))
  redis.call("ZADD", SCHEDULERS_NEXT, rec.next_run, key)
end

local function sched_delete(key)
  redis.call("HDEL", SCHEDULERS, key)
  redis.call("ZREM", SCHEDULERS_NEXT, key)
end

-- The ids of the schedulers' pending occurrences, as a set: repeat:<key>:<next_run>, read off
-- SCHEDULERS_NEXT's scores. Drain and clean leave them, as BullMQ does.
local function pending_occurrences()
  local pending, scored = {}, redis.call("ZRANGE", SCHEDULERS_NEXT, 0, -1, "WITHSCORES")
  for i = 1, #scored, 2 do
    pending[occurrence_id(scored[i], int(tonumber(scored[i + 1])))] = true
  end
  return pending
end

-- The key of the scheduler whose pending occurrence job `id` is (waiting or delayed, under the
-- id repeat:<key>:<next_run> of a scheduler that exists), else nil
-- (lifecycle::schedulers::is_pending_occurrence).
local function pending_occurrence_of(id)
  if not not_started(get("state", id)) then return nil end
  local key = cjson.decode(opts_of(id)).scheduler
  if type(key) ~= "string" then return nil end
  local rec = sched_read(key)
  if rec and occurrence_id(key, rec.next_run) == id then return key end
  return nil
end

-- The options of the occurrence due at `run` (scheduler.rs occurrence_options): the template's,
-- with job_id, delay and scheduler set. Built as text: a cjson round trip of the template would
-- rewrite its numbers.
local function occurrence_opts(key, rec, id, delay)
  local head = '{"job_id":' .. cjson.encode(id) .. ',"delay":' .. int(delay) ..
    ',"scheduler":' .. cjson.encode(key)
  if rec.occ == "" then return head .. "}" end
  return head .. "," .. rec.occ .. "}"
end

-- Creates the occurrence of `key` due at `run` (text), delayed until then (waiting if due);
-- returns the id of the job that answers for it. With dedup options on the template (keep_last
-- without a ttl: scheduler.rs check), as dedup.rs on_add_occurrence decides: a held key keeps
-- the occurrence as its next job whatever the owner's state (`deduplicated` and `debounced` on
-- the owner, who answers), so that it is added when the owner finishes and the schedule goes
-- on; else it is added and takes the key. (One function: a claim script composed without the
-- library, as crates/lanemq-redis/tests/schedulers.rs composes one, is near Lua's 200 locals.)
local function create_occurrence(key, rec, run)
  local id = occurrence_id(key, run)
  local delay = math.max(tonumber(run) - NOW, 0)
  local spec = {name = rec.name, data = rec.data, opts = occurrence_opts(key, rec, id, delay),
    id = id, prio = rec.prio, lifo = rec.lifo == true, delay = delay}
  local dedup = dedup_of(spec.opts)
  if dedup then
    purge_expired()
    local held_key = key_read(dedup.id)
    if held(held_key) then
      key_write(dedup.id, held_key.owner, held_key.exp, {spec.name, spec.data, spec.opts})
      emit("deduplicated", held_key.owner, "deduplicationId", dedup.id, "deduplicatedJobId", id)
      emit("debounced", held_key.owner, "debounceId", dedup.id)
      return held_key.owner
    end
  end
  create_jobs({spec})
  if dedup then key_write(dedup.id, id, nil, nil) end
  return id
end

-- Removes a pending occurrence as a removal by hand does (a `removed` event).
local function remove_occurrence(id, state)
  dedup_on_removal(id)
  delete(id)
  emit("removed", id, "prev", tonumber(state) == WAITING_STATE and "waiting" or "delayed")
end

-- The first of `times` (texts, in order) whose occurrence id is free (`free_id` counts as
-- free: the occurrence an upsert replaces); its index, or nil.
local function first_free(key, times, from, free_id)
  for i = from, #times do
    local id = occurrence_id(key, times[i])
    if id == free_id or not job_exists(id) then return i end
  end
  return nil
end

-- ScheduleSpec::next for an `every` schedule (every.rs next_slot, then limit and end): the run
-- after `at` (text) as seen now, when `count` runs were produced; nil when the schedule has no
-- more, false when the arithmetic would leave exact doubles (then Rust decides: stale).
local MAX_EXACT = 9007199254740992 -- 2^53
local function every_next(rec, at, count)
  if rec.limit and count >= tonumber(rec.limit) then return nil end
  local every, prev = tonumber(rec.every), tonumber(at)
  if prev + every + math.max(NOW - prev, 0) >= MAX_EXACT then return false end
  local run = prev + every
  if run < NOW then
    -- The missed slots are skipped: the first prev + k * every at or after now.
    run = prev + math.ceil((NOW - prev) / every) * every
    if run < NOW then run = run + every end
  end
  if rec["end"] and run > tonumber(rec["end"]) then return nil end
  return int(run)
end

-- A claim started the pending occurrence but cannot compute the next run: the record keeps its
-- next_run and count, marked with the claim's time; META's `stale_schedulers` tells
-- recover_stalled to look (the claiming client repairs it at once, unless it dies first).
local function mark_stale(key, rec)
  rec.stale = NOW_TEXT
  sched_write(key, rec)
  redis.call("HSET", META, "stale_schedulers", "1")
end

-- scheduler.rs on_claim + place, after a claim started job `id`, an occurrence of `key`: if it
-- was the pending one, produce the next at the first free run time, or remove the scheduler
-- when the schedule has ended. Declared in jobs.lua (claim_jobs calls it).
scheduler_on_claim = function(key, id)
  local rec = sched_read(key)
  -- A stale record's next occurrence is Rust's to produce; any other occurrence (an older one
  -- retried or recovered) produces nothing.
  if not rec or rec.stale or id ~= occurrence_id(key, rec.next_run) then return end
  local count = tonumber(rec.count)
  if rec.limit and count >= tonumber(rec.limit) then
    sched_delete(key)
    return
  end
  local run
  if rec.every then
    run = every_next(rec, rec.next_run, count)
    -- place: a taken id counts as produced; the next run of the grid (count + 1 - 1 runs
    -- before it, as place passes to next).
    while run and job_exists(occurrence_id(key, run)) do run = every_next(rec, run, count) end
    if run == false then return mark_stale(key, rec) end
  else
    -- cron: the first upcoming time after next_run and at or after now (the pattern times
    -- between are missed, skipped), then the first whose id is free.
    local times, prev, i = rec.upcoming or {}, tonumber(rec.next_run), 1
    while times[i] and not (tonumber(times[i]) > prev and tonumber(times[i]) >= NOW) do
      i = i + 1
    end
    i = first_free(key, times, i, nil)
    if not i then
      if rec.complete then run = nil else return mark_stale(key, rec) end
    else
      run = times[i]
      rec.upcoming = {unpack(times, i + 1)}
    end
  end
  if not run then
    sched_delete(key)
    return
  end
  create_occurrence(key, rec, run)
  rec.count = int(count + 1)
  rec.next_run = run
  sched_write(key, rec)
end
