-- Helpers for the scripts that create, finish or remove jobs (after common.lua; each script
-- gets those it reaches, see crates/lanemq-redis/src/compose.rs): creating jobs, dedup keys,
-- failing for good, completing, claiming.

-- Creates jobs from specs {name, data, opts (JSON), id ("" = automatic), prio (text), lifo,
-- delay (ms), hold (a flow's parent: waits for its children first)}, validated by the client.
-- A custom id that exists, or repeats an earlier spec, creates nothing: `duplicated` is
-- emitted and {0, job...} returned; a new job gives {1, id, seq, order}, or nothing when
-- `compact` (its caller's client derives them: automatic ids and seqs count up from the first
-- ones, returned second and third, in the specs' order). A job is written with one HSET, and
-- the batch's ids, sequence numbers and event ids are reserved with one HINCRBY each. A new job's order is its seq (negated when
-- LIFO), so `ord` is written only for LIFO jobs (`order_of`).
local function create_jobs(specs, compact)
  -- The layout flag, and what wake() and the drained flag need, in one read: nothing here
  -- changes `paused` or `drained`.
  local meta = redis.call("HMGET", META, "layout", "paused", "drained", "group_turns")
  if meta[1] ~= LAYOUT then ensure_layout() end
  local count, custom, customs = #specs, {}, 0
  for k = 1, count do
    local id = specs[k].id
    if id ~= "" then customs = customs + 1; custom[customs] = id end
  end
  local existing, taken = {}, {}
  if customs > 0 then
    local states = mget("state", custom)
    for k = 1, customs do
      if states[k] then existing[custom[k]] = true end
    end
  end
  local autos, fresh, events = 0, 0, 0
  for k = 1, count do
    local spec = specs[k]
    local id = spec.id
    if id ~= "" and (existing[id] or taken[id]) then
      spec.dup = true
      events = events + 1
    else
      if id == "" then autos = autos + 1 else taken[id] = true end
      fresh = fresh + 1
      events = events + 2
    end
  end
  local next_id = autos > 0 and counter("id", autos) - autos + 1 or 0
  local next_seq = fresh > 0 and counter("seq", fresh) - fresh + 1 or 0
  local first_id, first_seq = next_id, next_seq
  reserve_events(events)

  -- Fields at their defaults (priority, attempts, stalls and delay 0, progress 0, no stack
  -- trace, the order when it is the seq, options "{}") are not written: an absent field reads
  -- as its default, here and in the client's decoding (a smaller hash, and the fields read
  -- most, the state first, are found sooner in its listpack). One HSET per job writes the rest.
  local back, front, scored, delayed, held = {}, {}, {}, {}, {}
  -- Grouped jobs (tables made for the first): {group, priority, member} of each one
  -- waiting, and {group, id} of each.
  local grouped_waiting, grouped = nil, nil
  local w, d, h = 0, 0, 0
  local out = {}
  -- A job's fields beyond the five every job has, the first e of them: one table for the
  -- batch (unpack reads only those), not one a job.
  local extra = {}
  for k = 1, count do
    local spec = specs[k]
    if spec.dup then
      emit("duplicated", spec.id)
    else
      local id = spec.id
      if id == "" then id = string.format("%d", next_id); next_id = next_id + 1 end
      local seq = next_seq
      local order = seq
      next_seq = next_seq + 1
      local state
      local e = 0
      if spec.opts ~= "{}" then extra[1] = "opts"; extra[2] = spec.opts; e = 2 end
      if spec.prio ~= "0" then extra[e + 1] = "prio"; extra[e + 2] = spec.prio; e = e + 2 end
      local g = spec.opts ~= "{}" and group_of(spec.opts)
      if g then
        grouped = grouped or {}
        grouped_waiting = grouped_waiting or {}
        grouped[#grouped + 1] = {g, id}
        emit("added", id, "name", spec.name, "group", g)
      else
        emit("added", id, "name", spec.name)
      end
      if spec.hold then
        state = CHILDREN_TEXT
        h = h + 2
        held[h - 1] = NOW_TEXT; held[h] = hex(seq) .. id
        emit("waiting-children", id)
      elseif spec.delay > 0 then
        local due = int(NOW + spec.delay)
        state = DELAYED_TEXT
        extra[e + 1] = "delay"; extra[e + 2] = due; e = e + 2
        d = d + 2
        delayed[d - 1] = due; delayed[d] = hex(seq) .. id
        emit("delayed", id, "delay", due)
      else
        if spec.lifo then
          order = -seq
          extra[e + 1] = "ord"; extra[e + 2] = string.format("%d", order); e = e + 2
        end
        state = WAITING_TEXT
        w = w + 2
        if g then
          grouped_waiting[#grouped_waiting + 1] = {g, spec.prio, member(order, id)}
        elseif spec.prio == "0" then
          if order < 0 then front[#front + 1] = member(order, id)
          else back[#back + 1] = member(order, id) end
        else
          scored[#scored + 1] = spec.prio; scored[#scored + 1] = member(order, id)
        end
        emit("waiting", id)
      end
      redis.call("HSET", JOB .. id, "state", state, "seq", string.format("%d", seq), "name",
        spec.name, "data", spec.data, "created", NOW_TEXT, unpack(extra, 1, e))
      if not compact then out[k] = {1, id, seq, order} end
    end
  end

  zadd(DELAYED, delayed)
  zadd(CHILDREN, held)
  -- Duplicates are read once every new job is written (the original may be among them).
  if fresh < count then
    for k = 1, count do
      local spec = specs[k]
      if spec.dup then out[k] = {0, job(spec.id)} end
    end
  end
  if w > 0 then
    chunked("RPUSH", WAITING0, back, 1)
    chunked("LPUSH", WAITING0, front, 1)
    zadd(WAITING, scored)
    if meta[3] then redis.call("HDEL", META, "drained") end
    if #back + #front + #scored > 0 then ungrouped_enqueue(meta[4]) end
  end
  -- Each grouped job is recorded in its group (group_job_ids, counts, list_groups), and a
  -- waiting one enters its group's waiting set (the group joins the turns if it can).
  if grouped then
    local known = groups_key("known")
    for i = 1, #grouped do
      local g = grouped[i][1]
      redis.call("ZADD", group_key(g, ":jobs"), "0", grouped[i][2])
      redis.call("ZADD", known, "NX", "0", g)
    end
    for i = 1, #grouped_waiting do
      local entry = grouped_waiting[i]
      group_waiting_add(entry[1], entry[2], entry[3])
    end
  end
  -- New jobs wake idle workers: to claim, or to recompute when the next delayed one is due.
  -- As wake() does, with `paused` as read above.
  -- (Grouped jobs wake one only if their group joins the turns: group_enqueue.)
  local ungrouped = #back + #front + #scored
  if meta[2] ~= "1" and (ungrouped > 0 or d > 0) then
    redis.call("ZADD", MARKER, "LT", ungrouped > 0 and "0" or delayed[1], "w")
  end
  return out, first_id, first_seq
end

-- A spec from a job's options JSON (a keep_last job stored on a dedup key).
local function spec_from(name, data, opts_json)
  local opts = cjson.decode(opts_json)
  local id = opts.job_id
  if id == nil or id == cjson.null then id = "" end
  return {name = name, data = data, opts = opts_json, id = id,
    prio = int(tonumber(opts.priority) or 0), lifo = opts.lifo == true,
    delay = tonumber(opts.delay) or 0}
end

-- Before an add writes anything (add, add_bulk, a flow's nodes of this queue): nil, or
-- {"group_full", group, max_size} when the specs would take a group past its max_size, its
-- jobs waiting or delayed (a flow's parent waits for its children, a custom id that exists
-- creates nothing, a deduplicated node neither: none of them counts). The group's jobs are
-- counted only when all it holds, whatever their state, and the new ones would pass it.
local function groups_room(specs)
  local adding, names = {}, {}
  for k = 1, #specs do
    local spec = specs[k]
    local g = spec.opts ~= "{}" and not spec.hold and not spec.owner and not spec.skipped
      and group_of(spec.opts)
    if g and not (spec.id ~= "" and exists(spec.id)) then
      if not adding[g] then names[#names + 1] = g; adding[g] = 0 end
      adding[g] = adding[g] + 1
    end
  end
  for _, g in ipairs(names) do
    local lim = group_limits(g)
    if lim and lim.ms then
      local jobs = group_key(g, ":jobs")
      if redis.call("ZCARD", jobs) + adding[g] > lim.ms then
        local queued = 0
        for _, id in ipairs(redis.call("ZRANGE", jobs, 0, -1)) do
          local state = get("state", id)
          if state == WAITING_TEXT or state == DELAYED_TEXT then queued = queued + 1 end
        end
        if queued + adding[g] > lim.ms then
          return {"group_full", g, string.format("%d", lim.ms)}
        end
      end
    end
  end
  return nil
end

-------------------------------------------------------------------------------- dedup keys
-- DEDUP maps a dedup id to JSON {owner = job id, exp = expiry (ms, as text; absent = none),
-- next = [name, data, options JSON] (keep_last: added when the owner finishes)}; DEDUP_EXPIRY
-- scores dedup ids by expiry, so keys that expired and mean nothing are purged without a scan.
-- The decisions are crates/lanemq-core/src/jobs/dedup.rs's, which the other backends use.

-- The dedup options of a job's options JSON, or nil (the JSON is decoded only if it has any).
local function dedup_of(opts_json)
  if not opts_json or not string.find(opts_json, '"dedup"', 1, true) then return nil end
  local dedup = cjson.decode(opts_json).dedup
  if type(dedup) ~= "table" then return nil end
  return dedup
end

local function ttl_expiry(dedup)
  local ttl = tonumber(dedup.ttl ~= cjson.null and dedup.ttl or nil)
  if ttl then return int(NOW + ttl) end
  return nil
end

-- The key of `dedup_id` with its owner's state (false when the owner is gone), or nil.
local function key_read(dedup_id)
  local raw = redis.call("HGET", DEDUP, dedup_id)
  if not raw then return nil end
  local key = cjson.decode(raw)
  if key.next == cjson.null then key.next = nil end
  key.state = get("state", key.owner)
  return key
end

local function key_write(dedup_id, owner, exp, next_job)
  redis.call("HSET", DEDUP, dedup_id, cjson.encode({owner = owner, exp = exp, next = next_job}))
  if exp then redis.call("ZADD", DEDUP_EXPIRY, exp, dedup_id)
  else redis.call("ZREM", DEDUP_EXPIRY, dedup_id) end
end

local function key_delete(dedup_id)
  redis.call("HDEL", DEDUP, dedup_id)
  redis.call("ZREM", DEDUP_EXPIRY, dedup_id)
end

local function finished(state)
  state = tonumber(state)
  return state == COMPLETED_STATE or state == FAILED_STATE
end

-- Whether the key turns adds away: until its expiry whatever the owner's state (throttle), or
-- without one while the owner is unfinished; either way only while the owner exists.
local function held(key)
  if not key or not key.state then return false end
  if key.exp then return NOW < tonumber(key.exp) end
  return not finished(key.state)
end

-- Drops up to 100 keys that expired and carry no next job (they mean nothing any more).
local function purge_expired()
  for _, dedup_id in ipairs(redis.call("ZRANGEBYSCORE", DEDUP_EXPIRY, "-inf", NOW_TEXT,
      "LIMIT", 0, 100)) do
    local key = key_read(dedup_id)
    if not key or not key.next then key_delete(dedup_id) end
    redis.call("ZREM", DEDUP_EXPIRY, dedup_id)
  end
end

-- Adds one job with dedup options (dedup.rs on_add): creates it, replaces a delayed owner, or
-- returns the owner ({0, job...}) with `deduplicated` and `debounced` on it.
local function add_deduplicated(spec, dedup)
  if spec.id ~= "" and exists(spec.id) then
    return create_jobs({spec})[1] -- the custom id exists: `duplicated`, nothing else
  end
  purge_expired()
  local key = key_read(dedup.id)
  local fresh = ttl_expiry(dedup)
  if held(key) then
    local exp = key.exp
    if dedup.extend then exp = fresh end
    if tonumber(key.state) == DELAYED_STATE and dedup.replace then
      delete(key.owner)
      emit("removed", key.owner, "prev", "delayed")
      local added = create_jobs({spec})[1]
      key_write(dedup.id, added[2], exp or fresh, nil)
      return added
    end
    local next_job = key.next
    if tonumber(key.state) == ACTIVE_STATE and dedup.keep_last then
      next_job = {spec.name, spec.data, spec.opts}
    end
    key_write(dedup.id, key.owner, exp, next_job)
    if spec.id ~= "" then
      emit("deduplicated", key.owner, "deduplicationId", dedup.id, "deduplicatedJobId", spec.id)
    else
      emit("deduplicated", key.owner, "deduplicationId", dedup.id)
    end
    emit("debounced", key.owner, "debounceId", dedup.id)
    return {0, job(key.owner)}
  end
  local added = create_jobs({spec})[1]
  key_write(dedup.id, added[2], fresh, nil)
  return added
end

-- After job `id` completed or failed for good (dedup.rs on_finish): releases its key unless
-- its ttl still runs, or adds the key's next job, its delay counted from now. A job
-- scheduler's occurrence waits until its own run time instead, at once if that has passed
-- (scheduler.rs requeued_delay); its options JSON is occurrence_opts's,
-- {"job_id":<id>,"delay":N,"scheduler":..., so the first `,"delay":N,"scheduler":` is its own
-- (a raw quote never follows a comma inside a JSON string).
local function dedup_on_finish(id, opts_json)
  local dedup = dedup_of(opts_json)
  if not dedup then return end
  local key = key_read(dedup.id)
  if not key or key.owner ~= id then return end
  if key.next then
    key_delete(dedup.id)
    local spec = spec_from(key.next[1], key.next[2], key.next[3])
    local opts = cjson.decode(spec.opts)
    local run = type(opts.scheduler) == "string" and type(opts.job_id) == "string"
      and string.match(opts.job_id, "^repeat:.*:(%d+)$")
    if run then
      spec.delay = math.max(tonumber(run) - NOW, 0)
      spec.opts = string.gsub(spec.opts, ',"delay":%d+,"scheduler":',
        ',"delay":' .. int(spec.delay) .. ',"scheduler":', 1)
    end
    local added = create_jobs({spec})[1]
    if added[1] == 1 then
      key_write(dedup.id, added[2], ttl_expiry(dedup_of(spec.opts) or dedup), nil)
    end
  elseif not (key.exp and NOW < tonumber(key.exp)) then
    key_delete(dedup.id)
  end
end

-- Before job `id` is removed (remove, clean, drain; not retention): deletes its own key.
local function dedup_on_removal(id)
  local dedup = dedup_of(opts_of(id))
  if not dedup then return end
  local raw = redis.call("HGET", DEDUP, dedup.id)
  if raw and cjson.decode(raw).owner == id then key_delete(dedup.id) end
end

-- Before a finished job is retried by hand (dedup.rs on_retry): it takes its key back, or, if
-- another unfinished job holds it, the retry is refused: returns the message, changing nothing.
local function dedup_on_retry(id, opts_json)
  local dedup = dedup_of(opts_json)
  if not dedup then return nil end
  local key = key_read(dedup.id)
  if key and key.owner ~= id and not (key.exp and NOW >= tonumber(key.exp))
      and key.state and not finished(key.state) then
    return "job " .. quoted(id) .. " cannot be retried: its dedup id " .. quoted(dedup.id) ..
      " is held by job " .. quoted(key.owner)
  end
  key_write(dedup.id, id, ttl_expiry(dedup), nil)
  return nil
end

-------------------------------------------------------------------------------- failing
-- Tells a finished job's parent, if it has one (`flow_on_finish(id, opts_json, outcome,
-- value)`, outcome "completed" or "failed"), and checks before anything is written that the
-- script has the keys of the queues that may reach (`need_chain(opts_json)`): defined by
-- flows.lua, after this file (a script that reaches them gets those definitions).
local flow_on_finish, need_chain

-- Fails an (unlocked) job for good, in the order of what follows a finish (lua/README.md):
-- failed set and fields, events, dedup key, parent (which may fail too, and be counted by the
-- retention below), then retention (lifecycle::finish::fail_for_good and Effects::apply).
-- `reported`: failed by its worker's report (fail-2.lua), whose token the job keeps so that
-- the same report sent again is answered as done; failed otherwise, it keeps none
-- (Job::reported_by).
local function fail_for_good(id, reason, opts, opts_json, reported)
  redis.call("HSET", JOB .. id, "state", FAILED_TEXT, "finished", NOW_TEXT, "reason", reason)
  if not reported then redis.call("HDEL", JOB .. id, "token") end
  redis.call("ZADD", FAILED, NOW_TEXT, hex(num("seq", id)) .. id)
  emit("failed", id, "failedReason", reason)
  local attempts = num("attempts", id)
  if attempts >= (tonumber(opts.attempts) or 1) then
    emit("retries-exhausted", id, "attemptsMade", int(attempts))
  end
  dedup_on_finish(id, opts_json)
  flow_on_finish(id, opts_json, "failed", reason)
  retain(FAILED, opts.remove_on_fail, id)
end

-- How many stack traces a job keeps by default (the newest; constants.rs STACKTRACE_LIMIT);
-- its options' stack_trace_limit overrides it (absent in a job stored before the option).
local STACKTRACE_LIMIT = 10
-- Appends `entry` to job `id`'s stack traces, keeping the newest its `opts` allow; a
-- cancellation's entry (constants.rs CANCELLED_TRACE_PREFIX) stays whatever the limit: it is
-- how Job.wait() tells one (finish.rs).
local function push_trace(id, entry, opts)
  local limit = tonumber(opts.stack_trace_limit) or STACKTRACE_LIMIT
  if limit < 1 and string.sub(entry, 1, 19) == "JobCancelledError: " then limit = 1 end
  local traces = cjson.decode(redis.call("HGET", JOB .. id, "trace") or "[]")
  traces[#traces + 1] = entry
  local kept, first = {}, math.max(#traces - limit + 1, 1)
  for t = first, #traces do kept[#kept + 1] = traces[t] end
  -- (cjson writes an empty table as an object: none kept is written as the empty list)
  redis.call("HSET", JOB .. id, "trace", #kept > 0 and cjson.encode(kept) or "[]")
end

-- Fails an (unlocked) job for good as cancelled (lifecycle/cancel.rs): its stack trace gets
-- "JobCancelledError: <reason>", then fail_for_good with the reason. A job never claimed gets
-- attempts 0 with its trace, as edit-2.lua's does: a claim reads the trace only of a job
-- tried before (claim_jobs), and a retry by hand may claim it again.
local function cancel_for_good(id, reason, opts, opts_json)
  redis.call("HSETNX", JOB .. id, "attempts", "0")
  push_trace(id, "JobCancelledError: " .. reason, opts)
  fail_for_good(id, reason, opts, opts_json)
end

-- Why a job fails for good rather than start again once its starts reached its
-- max_started_attempts (BullMQ's words).
local STARTED_REASON = "job started more than allowable limit"
-- Whether job `id`, with `attempts` made (claims, less those given back on purpose and the
-- stalls: release, move_to_delayed and stall recovery each give one back), may not start
-- again: its starts, the attempts plus the stalls, reached its options' max_started_attempts.
-- Only jobs with that option read their stall count.
local function starts_spent(id, opts, attempts)
  local most = tonumber(opts.max_started_attempts)
  if not most then return false end
  return attempts + num("stalled", id) >= most
end

-------------------------------------------------------------------------------- completing
-- Completes jobs `ids[i]` held by `tokens[i]` with `results[i]` (JSON). Each job is checked on
-- its own; a refused one changes nothing. Returns per job 0 when completed (the client reads
-- any reply that is not a refusal as success: a number costs the reply less than a table), or
-- {kind, message} with kind "missing", "state", "lock" or "pending" (a parent with a child
-- still unprocessed, released early by continue_parent_on_failure: BullMQ's moveToFinished
-- refuses it with -4, after the lock check; lifecycle/finish.rs). A job is read with one
-- HMGET and written with one HSET: its `worker` stays and its `expires` becomes 0, since only
-- an active job's are a lock (decode.rs, `live_lock`), and an HDEL cost a `redis.call` per job,
-- 5-10k instructions of the scripting layer (lua/README.md, "Redis work per job"); a cancel
-- request, read with the rest, is deleted only where there is one. A completed job keeps its
-- `token`: the same completion repeated (its reply lost, the worker sends it again) finds it
-- and is answered 0, changing nothing (Job::reported_by); only that path reads the stored
-- result.
-- The loops count (no ipairs: a C call per step) and append with counters (no push2 call, no
-- # per item): per job, this is most of the script's own work.
-- Its HMGET's fields are written out in the call (constants of the function): unpack() of a
-- table is a C call per job.
-- Whether job `id` has a child in its unprocessed set ("1", flows.lua's UNPROCESSED: that
-- library comes after this one). One ZLEXCOUNT, asked only of a job marked `kids` (flows.lua's
-- dep_put marks a job once it has had an unprocessed child). A parent that had its children
-- before the mark existed (an older queue) completes unchecked, as it did then.
local function has_pending_children(id)
  local low = dep_prefix(id) .. "1"
  return redis.call("ZLEXCOUNT", DEPS, "[" .. low, "(" .. low .. "\255") > 0
end
local function complete_jobs(ids, tokens, results)
  local NOW_B11 = tonumber(NOW_TEXT, 11) or math.huge
  local out, done, seen, opts = {}, {}, {}, {}
  local members, finished, returned, scored, cancelled = {}, {}, {}, {}, {}
  local n = 0
  for i = 1, #ids do
    local id = ids[i]
    local read = redis.call("HMGET", JOB .. id, "state", "token", "expires", "opts", "kids",
      "cancel")
    -- A job named twice in one batch: the second sees it completed, as it would one by one.
    local state = seen[id] and COMPLETED_TEXT or read[1]
    local json = read[4] or "{}"
    opts[i] = json
    -- The usual case first, without a call; anything else is check_values' to judge. The
    -- expiry is compared as a base-11 number with NOW's (NOW_B11): only the claim and the
    -- renewal write it, as digits without leading zeros (int()), and such strings keep their
    -- decimal order in base 11; a base other than 10 parses with strtoul, where tonumber(x)
    -- runs strtod twice (1,200 instructions a job, lua_cost.py).
    local refused
    if not (state == ACTIVE_TEXT and read[2] == tokens[i]
        and (tonumber(read[3] or "0", 11) or 0) > NOW_B11) then
      refused = check_values(id, tokens[i], state, read[2], read[3])
    end
    if not refused and read[5] and not seen[id] and has_pending_children(id) then
      refused = {"pending", id}
    end
    if refused and state == COMPLETED_TEXT and read[2] == tokens[i]
        and (seen[id] or redis.call("HGET", JOB .. id, "result") or "null") == results[i] then
      out[i] = 0
    elseif refused then
      out[i] = refused
    else
      seen[id] = results[i]  -- (what a repeat in this batch compares with: not written yet)
      -- Default options (stored as "{}", an interned string: the test is a pointer compare)
      -- name no parent, dedup key, retention or scheduler: their checks are skipped.
      if json ~= "{}" then need_chain(json) end
      out[i] = 0
      n = n + 1
      done[n] = i
      -- The token is the one the claim stored (checked above), and a claim's token starts
      -- with the job's member prefix, 14 hex digits of its seq, then "." (claim_jobs): the
      -- member comes from it, without a format. A token made before tokens carried it (no
      -- "." there: after an upgrade with jobs in flight) has its member from `seq`.
      local token, member = tokens[i]
      if string.byte(token, 15) == 46 then
        member = string.sub(token, 1, 14) .. id
      else
        member = hex(tonumber(redis.call("HGET", JOB .. id, "seq"))) .. id
      end
      members[n] = member
      scored[2 * n - 1] = NOW_TEXT; scored[2 * n] = member
      finished[n] = id
      returned[n] = results[i]
      cancelled[n] = read[6]
    end
  end

  if n > 0 then
    zrem(ACTIVE, members)
    -- The batch's jobs per group, the groups in the order their first job finished: each
    -- group's count and turn are updated once, after the loop.
    local groups, ended = {}, {}
    for k = 1, n do
      local id, result = finished[k], returned[k]
      local key = JOB .. id
      -- A cancel request leaves active with the job (lua/README.md, Cancellation).
      if cancelled[k] then redis.call("HDEL", key, "cancel") end
      -- A null result is not written (a completed job without one reads as null, decode.rs).
      -- `expires` 0: an older version sharing the queue (lua/README.md) reads a job with a
      -- worker and a future expiry as locked, whatever its state.
      if result ~= "null" then
        redis.call("HSET", key, "state", COMPLETED_TEXT, "finished", NOW_TEXT, "expires", "0",
          "result", result)
      else
        redis.call("HSET", key, "state", COMPLETED_TEXT, "finished", NOW_TEXT, "expires", "0")
      end
      local json = opts[done[k]]
      if json ~= "{}" then
        local g = group_of(json)
        if g then
          if not ended[g] then
            groups[#groups + 1] = g
            ended[g] = 0
          end
          ended[g] = ended[g] + 1
        end
      end
    end
    for i = 1, #groups do group_active_done(groups[i], ended[groups[i]]) end
    zadd(COMPLETED, scored)
    emit_each("completed", finished, n, "returnvalue", returned)
    -- Then, job by job, what follows a finish in the order every backend keeps (lua/README.md):
    -- its dedup key, its parent, its retention last (which may delete it).
    for k = 1, n do
      local i = done[k]
      local json = opts[i]
      if json ~= "{}" then
        local id = finished[k]
        dedup_on_finish(id, json)
        -- As parent_of does: only options naming a parent may have one.
        if string.find(json, '"parent":{', 1, true) then
          flow_on_finish(id, json, "completed", results[i])
        end
        -- Most jobs keep everything (the default, left out of the JSON, or an older job's
        -- explicit keep_all): skip decoding their options.
        if string.find(json, '"remove_on_complete":', 1, true)
            and not string.find(json, '"remove_on_complete":"keep_all"', 1, true) then
          retain(COMPLETED, cjson.decode(json).remove_on_complete, id)
        end
      end
    end
  end
  return out
end

-------------------------------------------------------------------------------- claiming
-- "-1", "-2", ...: the suffix of the n-th token of a claim, formatted once per n (a format
-- costs far more than a lookup, benches/history/5-10.md; in the library the table lasts as long
-- as the library).
local TOKEN_SUFFIXES = {}
local function token_suffix(n)
  local suffix = TOKEN_SUFFIXES[n]
  if not suffix then
    suffix = string.format("-%d", n)
    TOKEN_SUFFIXES[n] = suffix
  end
  return suffix
end

-- Moves the delayed jobs due by NOW to waiting, earliest first (lifecycle::claim::promote_due);
-- returns how many. As `to_waiting` would job by job (each at the back of its priority under a
-- fresh seq, LIFO ones at the front), with the batch's seqs and event ids reserved at once and
-- each end of the list pushed once: a job costs a read and a write of its hash.
local function promote_due()
  local due = redis.call("ZRANGEBYSCORE", DELAYED, "-inf", NOW_TEXT)
  local n = #due
  if n == 0 then return 0 end
  zrem(DELAYED, due)
  ensure_layout()
  local seq = counter("seq", n) - n
  reserve_events(n)
  local back, front, scored, grouped = {}, {}, {}, {}
  for i = 1, n do
    local id = string.sub(due[i], 15)
    local key = JOB .. id
    local f = redis.call("HMGET", key, "prio", "opts")
    seq = seq + 1
    local order = seq
    if f[2] and cjson.decode(f[2]).lifo then order = -seq end
    redis.call("HSET", key, "ord", string.format("%d", order), "state", WAITING_TEXT)
    local prio, m = f[1] or "0", member(order, id)
    local g = f[2] and group_of(f[2])
    if g then
      grouped[#grouped + 1] = {g, prio, m}
    elseif prio ~= "0" then
      scored[#scored + 1] = prio; scored[#scored + 1] = m
    elseif order < 0 then
      front[#front + 1] = m
    else
      back[#back + 1] = m
    end
    emit("waiting", id, "prev", "delayed")
  end
  chunked("RPUSH", WAITING0, back, 1)
  chunked("LPUSH", WAITING0, front, 1)
  zadd(WAITING, scored)
  for i = 1, #grouped do group_waiting_add(grouped[i][1], grouped[i][2], grouped[i][3]) end
  redis.call("HDEL", META, "drained")
  if #grouped < n then
    ungrouped_enqueue()
    wake("0")
  end
  return n
end

-- Produces a job scheduler's next occurrence when a claim starts its pending one: defined by
-- schedulers.lua, which the scripts that claim load after this file.
local scheduler_on_claim

-- What a claim reads of each job ("seq", "attempts", "name", "data", "opts", "created",
-- "delay", written out in claim_jobs' HMGET: no unpack() per job; the client gets all but
-- attempts as they are), and of a job
-- tried before (attempts stored) the fields only such a job may have: edit-2.lua stores
-- attempts 0 with a progress or trace set before the first claim, fail_for_good's reason is
-- cleared or comes with attempts before a job waits again, and stalls and failures follow
-- claims. A first claim does not look for those four (each field absent from a job's hash is
-- a scan of all of it).
local RETRY_READS = {"stalled", "progress", "reason", "trace"}

-- Promotes due delayed jobs, then (unless paused or in a rate-limit wait, and within the rate
-- limit's window and the active cap)
-- moves up to max_jobs from the front of waiting to active, each locked with a fresh token
-- (`seed`-n) until now + lease. Returns only what the client cannot know, in one flat list
-- (`decode::claimed_jobs`): nothing when it claimed none, else how many it claimed, then per
-- job CLAIM_ROW values: {waiting member (the order in hex, then the id), name, data, opts,
-- prio, seq, created, delay, attempts, token}; then, for each job claimed before (attempts
-- stored), its position from 1 and its {stalled, progress, reason, trace}. The state, lock and
-- processed time are the ones this call set. One table for the batch, not one per job, and
-- no values a first attempt cannot have: the FCALL's reply is made value by value, and each
-- table in it is probed for the error and status shapes first (lua/README.md, "Redis work
-- per job").
-- Groups whose rate window ended (due by META `group_rated_next`, which the claim reads with
-- its settings) join the turns again if they are claimable: O(log n) each. Returns whether
-- one did.
local function groups_rate_over()
  local rated = groups_key("rated")
  local over = redis.call("ZRANGEBYSCORE", rated, "-inf", NOW_TEXT)
  zrem(rated, over)
  local joined = false
  for _, g in ipairs(over) do joined = group_enqueue(g) or joined end
  local first = redis.call("ZRANGE", rated, 0, 0, "WITHSCORES")
  if first[2] then redis.call("HSET", META, "group_rated_next", first[2])
  else redis.call("HDEL", META, "group_rated_next") end
  return joined
end

-- Group g's turn: up to `want` of its head jobs, put in `members` and `prios` after position n;
-- returns how many (0 when it cannot give one: it leaves the turns, no job waiting or a limit
-- holds it). The group goes to the back of the turns while it stays claimable. `want` is 1
-- unless g is alone in the turns, where the turns would give it every next turn anyway: its
-- jobs are then taken in one pop, within its concurrency and rate limits, as that many turns
-- in a row would take them (one command a batch instead of seven a job).
local function group_take(g, turns, want, members, prios, n)
  local lim = group_limits(g)
  local start, count
  if lim then
    if lim.c then
      local active = tonumber(redis.call("HGET", groups_key("active"), g) or "0")
      if active >= lim.c then
        redis.call("ZREM", turns, g)
        return 0
      end
      want = math.min(want, lim.c - active)
    end
    if lim.rm then
      start, count = rate_window(g, lim)
      if start and count >= lim.rm then
        redis.call("ZREM", turns, g)
        group_hold(g, start + lim.rd)
        return 0
      end
      want = math.min(want, lim.rm - (count or 0))
    end
  end
  local waiting = group_key(g, ":waiting")
  local popped = redis.call("ZPOPMIN", waiting, want)
  local k = #popped / 2
  if k == 0 then
    redis.call("ZREM", turns, g)
    return 0
  end
  local taken = {}
  for i = 1, k do
    local m = popped[2 * i - 1]
    taken[i] = m
    members[n + i], prios[n + i] = m, popped[2 * i]
  end
  zrem(WAITING, taken)
  local active = redis.call("HINCRBY", groups_key("active"), g, k)
  local more = redis.call("EXISTS", waiting) == 1 and not (lim and lim.c and active >= lim.c)
  if lim and lim.rm then
    if not start then start, count = NOW, 0 end
    count = count + k
    redis.call("HSET", groups_key("rate"), g, string.format("%d %d", start, count))
    if more and count >= lim.rm then
      group_hold(g, start + lim.rd)
      more = false
    end
  end
  if more then turn_add(turns, g) else redis.call("ZREM", turns, g) end
  return k
end

-- The ungrouped jobs' turn: the head ungrouped job (member, priority), or nil; the turn goes
-- to the back while ungrouped jobs wait, else it leaves.
local function ungrouped_take(turns)
  local m, p = redis.call("LPOP", WAITING0), "0"
  if not m then
    local head = redis.call("ZRANGE", WAITING, 0, 0, "WITHSCORES")
    if head[2] and tonumber(head[2]) < GROUP_OFFSET then
      m, p = head[1], head[2]
      redis.call("ZREM", WAITING, m)
    end
  end
  if m and ungrouped_waiting() then turn_add(turns, "") else redis.call("ZREM", turns, "") end
  return m, p
end

-- Up to `allowed` waiting members taken by turns (semantics: the group whose turn it is gives
-- its head job and goes to the back; a group alone in the turns gives at once what its next
-- turns would), with their priorities; `members` and `prios` filled.
local function claim_turns(turns, allowed, members, prios)
  local n = 0
  while n < allowed do
    local head = redis.call("ZRANGE", turns, 0, 1)
    local g = head[1]
    if not g then break end
    if g == "" then
      local m, p = ungrouped_take(turns)
      if m then
        n = n + 1
        members[n], prios[n] = m, p
      end
    else
      n = n + group_take(g, turns, head[2] and 1 or allowed - n, members, prios, n)
    end
  end
  return n
end

-- Whether a claim could take a job now: an ungrouped one waits, or a group is in the turns.
local function claimable_left()
  if redis.call("LLEN", WAITING0) > 0 then return true end
  local head = redis.call("ZRANGE", WAITING, 0, 0, "WITHSCORES")
  if not head[2] then return false end
  return tonumber(head[2]) < GROUP_OFFSET or redis.call("EXISTS", groups_key("turns")) == 1
end

local CLAIM_ROW = 10
local function claim_jobs(worker, lease, max_jobs, seed)
  local now = NOW
  promote_due()
  -- The settings in one read (promotions change none of them).
  local settings = redis.call("HMGET", META, "paused", "rate_max", "max_active", "rate_until",
    "group_rated_next", "group_turns")
  if settings[1] == "1" then return {} end
  if settings[5] and tonumber(settings[5]) <= now and groups_rate_over() then
    settings[6] = "1" -- the turns began again (META `group_turns`)
  end

  local allowed = max_jobs
  local rate_max = tonumber(settings[2] or "0")
  -- When a rate limit holds this claim back: until its end (text), else nil. A manual wait
  -- (queue.rate_limit) holds every claim back until it ends; the window is neither opened nor
  -- counted meanwhile.
  local held_until
  local waits_until = settings[4]
  if waits_until and tonumber(waits_until) > now then
    allowed, held_until = 0, waits_until
  elseif rate_max > 0 then
    local duration = tonumber(redis.call("HGET", META, "rate_duration"))
    local start = tonumber(redis.call("HGET", META, "rate_start") or "0")
    if now >= start + duration then
      redis.call("HSET", META, "rate_start", NOW_TEXT, "rate_count", 0)
    end
    local left = rate_max - tonumber(redis.call("HGET", META, "rate_count") or "0")
    allowed = math.min(allowed, left)
    if left <= 0 then held_until = int(start + duration) end
  end
  if held_until then
    -- A due marker (set by an add or a release meanwhile) would wake an idle worker to claim
    -- nothing: it says when the limit ends instead (GT: unless it is later), and the worker
    -- that pops it recomputes its wait (waits.rs), which ends then.
    redis.call("ZADD", MARKER, "GT", held_until, "w")
  end
  local max_active = tonumber(settings[3] or "0")
  if max_active > 0 then
    allowed = math.min(allowed, max_active - active_count())
  end

  local claimed, taken = {}, 0
  if allowed > 0 then
    -- Priority 0 first (the list), then the sorted set. A waiting member is the job's order
    -- (hex, offset) and id, and a sorted set's score the priority: the replies carry both, so
    -- no field hash is read (each read of a big hash misses the cache, benches/history/5-10.md).
    local ids, members, prio, n = {}, {}, {}, 0
    -- Groups take turns only while META `group_turns` is set (cleared once they are gone).
    local turns = settings[6] and groups_key("turns")
    if turns and redis.call("EXISTS", turns) == 0 then
      redis.call("HDEL", META, "group_turns")
      turns = nil
    end
    if turns then
      -- Groups have claimable jobs: they (and the ungrouped jobs) take turns.
      n = claim_turns(turns, allowed, members, prio)
      for i = 1, n do ids[i] = string.sub(members[i], 15) end
    else
      local listed = redis.call("LPOP", WAITING0, allowed) or {}
      members = listed
      for i = 1, #listed do
        ids[i] = string.sub(listed[i], 15)
        prio[i] = "0"
      end
      n = #listed
      if n < allowed then
        local popped = redis.call("ZPOPMIN", WAITING, allowed - n)
        local back = nil
        for k = 1, #popped / 2 do
          local m, score = popped[2 * k - 1], popped[2 * k]
          if tonumber(score) < GROUP_OFFSET then
            n = n + 1
            members[n] = m
            ids[n] = string.sub(m, 15)
            prio[n] = score
          else
            -- A held group's job (no group is in the turns): it stays.
            back = back or {}
            push2(back, score, m)
          end
        end
        if back then zadd(WAITING, back) end
      end
    end
    if n > 0 then
      -- Text, not Lua numbers: formatting a number for redis.call costs more than the command.
      local until_text = int(now + lease)
      -- A token is the job's member prefix, ".", the claim's seed (the client's random) and
      -- "-<n>": unique per claim and per job of it.
      local dot_seed = "." .. seed
      local active, opts, retried, r = {}, {}, nil, 0
      claimed[1] = n
      for i = 1, n do
        local id = ids[i]
        local key = JOB .. id
        local f = redis.call("HMGET", key, "seq", "attempts", "name", "data", "opts", "created",
          "delay")
        local seq = f[1]
        -- The text itself: string.format converts it with one strtod, tonumber with two.
        local prefix = hex(seq)
        -- A first attempt (no count stored) needs no tonumber or format, both costly in Lua
        -- (benches/history/5-10.md).
        local before, tried_n, tried_text = f[2], 1, "1"
        if before then
          tried_n = tonumber(before) + 1
          tried_text = string.format("%d", tried_n)
          local again = redis.call("HMGET", key, unpack(RETRY_READS))
          retried = retried or {}
          retried[r + 1] = i
          for k = 1, 4 do retried[r + 1 + k] = again[k] end
          r = r + 5
        end
        local token = prefix .. dot_seed .. token_suffix(i)
        redis.call("HSET", key, "state", ACTIVE_TEXT, "attempts", tried_text, "processed",
          NOW_TEXT, "token", token, "worker", worker, "expires", until_text)
        active[2 * i - 1] = until_text; active[2 * i] = prefix .. id
        opts[i] = f[5] or "{}"
        local c = 1 + (i - 1) * CLAIM_ROW
        claimed[c + 1] = members[i]; claimed[c + 2] = f[3]; claimed[c + 3] = f[4]
        claimed[c + 4] = f[5]; claimed[c + 5] = prio[i]; claimed[c + 6] = seq
        claimed[c + 7] = f[6]; claimed[c + 8] = f[7]; claimed[c + 9] = tried_n
        claimed[c + 10] = token
      end
      local c = 1 + n * CLAIM_ROW
      for k = 1, r do claimed[c + k] = retried[k] end
      zadd(ACTIVE, active)
      emit_each("active", ids, n, "prev", nil, "waiting")
      -- Occurrences of job schedulers produce their next ones after the loop, so a claim never
      -- claims the occurrence it produced. Only options naming a scheduler are decoded.
      for i = 1, n do
        local json = opts[i]
        if json ~= "{}" and string.find(json, '"scheduler"', 1, true) then
          local key = cjson.decode(json).scheduler
          if type(key) == "string" then scheduler_on_claim(key, ids[i]) end
        end
      end
    end
    if rate_max > 0 then redis.call("HINCRBY", META, "rate_count", n) end
    taken = n
    -- Jobs left over: wake another idle worker (each wake-up pops the marker for one). As
    -- wake(0) does, without reading again whether the queue is paused: it is not.
    if n > 0 and claimable_left() then
      redis.call("ZADD", MARKER, "LT", "0", "w")
    end
  end
  if taken == 0 and waiting_count() == 0
      and not redis.call("HGET", META, "drained") then
    redis.call("HSET", META, "drained", "1")
    emit("drained")
  end
  return claimed
end
