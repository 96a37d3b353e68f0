-- Shared by every lanemq script: a script is loaded with the helpers of this file (and of
-- jobs.lua, flows.lua, schedulers.lua) that it reaches, in front of it (see
-- crates/lanemq-redis/src/compose.rs: keep helpers at the top level).
-- Every script receives its queue's META (`<base>meta`, base `<prefix>:{<queue>}:`) and a key
-- nothing writes (`<base>guard`: with it missing, Redis Cluster runs no call while the queue's
-- slot migrates, keys.rs's GUARD), then, for flows spanning queues, the same two of each queue
-- linked to it (flows.lua). The names below are the keys of the queue the script is working
-- in, built from its META's name (lua/README.md says what each holds): bind() points them at
-- another queue's, and every helper follows (they are upvalues). Built, not sent: 16 keys made
-- each request some 700 bytes, parsed by the server and made Lua values on every call
-- (benches/history/19.md, "One call's cost outside the function"). A built key carries META's
-- hash tag, so it is in the declared keys' slot, all Redis Cluster checks (DESIGN.md's "Keys a
-- script may build").
-- (metrics-2.lua and workers-2.lua get two keys of their own instead, and use none of these.)
local BLOCK = 2
local META, WAITING, DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED, LOGS, EVENTS, MARKER
-- Waiting jobs of priority 0 (the default, claimed first) are a list, `waiting:0` (see
-- `waiting_add`).
local WAITING0
-- A job's fields are one hash, `<base>job:<id>`. JOB is `<base>job:`.
local JOB
-- After the state sets: the dedup keys (jobs.lua), the job schedulers (schedulers.lua) and
-- the flow dependencies (flows.lua).
local DEDUP, DEDUP_EXPIRY, SCHEDULERS, SCHEDULERS_NEXT, DEPS, DEPS_VALUES
local FIELDS = {"name", "data", "opts", "state", "prio", "ord", "seq", "created", "delay",
  "processed", "finished", "attempts", "stalled", "progress", "result", "reason", "trace",
  "token", "worker", "expires"}

-- Points the key names at the queue whose META is KEYS[base + 1] (0: the script's queue).
local function bind(base)
  META = KEYS[base + 1]
  local B = string.sub(META, 1, -5)
  WAITING, DELAYED, ACTIVE, CHILDREN = B .. "waiting", B .. "delayed", B .. "active",
    B .. "children"
  COMPLETED, FAILED, LOGS, EVENTS, MARKER = B .. "completed", B .. "failed", B .. "logs",
    B .. "events", B .. "marker"
  WAITING0 = WAITING .. ":0"
  JOB = B .. "job:"
  DEDUP, DEDUP_EXPIRY, SCHEDULERS, SCHEDULERS_NEXT, DEPS, DEPS_VALUES = B .. "dedup",
    B .. "dedup:expiry", B .. "schedulers", B .. "schedulers:next", B .. "deps",
    B .. "deps:values"
end
bind(0)

-- Every script's ARGV starts with now (ms) and, for those that write events, max_events.
local NOW, NOW_TEXT, MAX_EVENTS = tonumber(ARGV[1]), ARGV[1], ARGV[2]
local MAX_EVENTS_N = tonumber(MAX_EVENTS) or 0

local WAITING_STATE, DELAYED_STATE, ACTIVE_STATE, CHILDREN_STATE, COMPLETED_STATE, FAILED_STATE =
  0, 1, 2, 3, 4, 5
-- The same as text, for redis.call: a Lua number is formatted with %.17g (more instructions
-- than a short HSET, benches/history/5-10.md), and tostring costs as much.
local WAITING_TEXT, DELAYED_TEXT, ACTIVE_TEXT, CHILDREN_TEXT, COMPLETED_TEXT, FAILED_TEXT =
  "0", "1", "2", "3", "4", "5"

-- The helpers from here on, and the script's body after them, run in one function nested in
-- the script (compose.rs): the names above are its upvalues. Making a closure searches the
-- upvalues captured so far for each local it captures (Lua 5.1's luaF_findupval walks them;
-- a step's cost is in benches/history/5-10.md), while an upvalue of the enclosing function is
-- copied: every helper captures the keys, JOB and NOW. Keep only such plain names above (31 of
-- them: a function may have 60 upvalues).
-- compose: nested from here
-- A job's hash (see JOB).
local function jkey(id) return JOB .. id end
local function get(field, id) return redis.call("HGET", JOB .. id, field) end
local function num(field, id) return tonumber(redis.call("HGET", JOB .. id, field) or "0") end
local function set(field, id, value)
  if value == nil or value == false then redis.call("HDEL", JOB .. id, field)
  else redis.call("HSET", JOB .. id, field, value) end
end
-- The values of `names` (a list of field names) of job `id`, in order (false when absent).
local function fields(id, names) return redis.call("HMGET", JOB .. id, unpack(names)) end
-- Whether job `id` exists (every job has a state).
local function exists(id) return redis.call("HEXISTS", JOB .. id, "state") == 1 end

-- Arguments go out in chunks, as unpack() is bounded by Lua's C stack. No closure per call:
-- these run in every claim or completion, and each closure is garbage for the GC.
local CHUNK = 500
-- `command key items...`, once per chunk of at most CHUNK * width items; none for no items.
local function chunked(command, key, items, width)
  local n, step = #items, CHUNK * width
  if n <= step then
    if n > 0 then redis.call(command, key, unpack(items)) end
    return
  end
  for first = 1, n, step do
    redis.call(command, key, unpack(items, first, math.min(first + step - 1, n)))
  end
end
-- The hash's value for each of `ids` (false when absent), in order.
local function hmget(key, ids)
  local n = #ids
  if n == 0 then return {} end
  if n <= CHUNK then return redis.call("HMGET", key, unpack(ids)) end
  local out = {}
  for first = 1, n, CHUNK do
    local last = math.min(first + CHUNK - 1, n)
    for _, v in ipairs(redis.call("HMGET", key, unpack(ids, first, last))) do out[#out + 1] = v end
  end
  return out
end
-- One field of each job of `ids` (false when absent), in order: a read per job. Where a batch
-- needs several fields of each job, `fields` reads them in one.
local function mget(field, ids)
  local out = {}
  for i = 1, #ids do out[i] = redis.call("HGET", JOB .. ids[i], field) end
  return out
end
-- A job's options JSON. Default options, "{}", are not stored (create_jobs): an absent value
-- reads as them. (For a job that does not exist too: callers check its state for that.)
local function opts_of(id) return redis.call("HGET", JOB .. id, "opts") or "{}" end
local function opts_all(ids)
  local all = mget("opts", ids)
  for i = 1, #ids do all[i] = all[i] or "{}" end
  return all
end
-- Appends two items (an id and its value, a score and its member).
local function push2(list, a, b)
  local n = #list
  list[n + 1] = a; list[n + 2] = b
end
-- `pairs_` alternates id, value: one field of each job set, a write per job.
local function mset(field, pairs_)
  for i = 1, #pairs_, 2 do redis.call("HSET", JOB .. pairs_[i], field, pairs_[i + 1]) end
end
local function mdel(field, ids)
  for i = 1, #ids do redis.call("HDEL", JOB .. ids[i], field) end
end
-- `scored` alternates score, member.
local function zadd(key, scored) chunked("ZADD", key, scored, 2) end
local function zrem(key, members) chunked("ZREM", key, members, 1) end

-- `active` holds at most about as many jobs as the workers' concurrency, so it would stay a
-- listpack, where every insert scans the set (a ZADD there cost several times what it costs in
-- a skiplist, benches/history/5-10.md): a long member makes it one for good. This sentinel is
-- scored +inf and no job's member can equal it (those start with hex digits): counts use ZCOUNT
-- up to (+inf, and whatever walks the set's members skips it (job_member).
-- Layouts: "2" had a hash per field (`<base>j:<field>`, id -> value) and every waiting job in
-- WAITING; "3" moved priority 0 to the list WAITING0 (`waiting_add`); "4" keeps each job's
-- fields in its own hash (JOB): a small hash is a listpack, one allocation, where a hash per
-- field held an entry per job in each of five to twenty big tables (memory per job and a cache
-- miss per field: benches/history/12.md). An older queue moves over in one call, which the client
-- makes when it first opens the queue (`layout-2.lua`, backend/ready.rs).
local LAYOUT = "4"
-- Moves layout "3"'s field hashes into job hashes, a field hash at a time, then deletes them.
local function job_hashes_from_fields()
  local base = string.sub(META, 1, -5)
  for _, field in ipairs(FIELDS) do
    local key, cursor = base .. "j:" .. field, "0"
    repeat
      local page = redis.call("HSCAN", key, cursor, "COUNT", 1000)
      cursor = page[2] and page[1] or "0"
      local entries = page[2] or {}
      for i = 1, #entries, 2 do
        local id = entries[i]
        -- "" held the value that kept the field hash a hash table: no job.
        if id ~= "" then redis.call("HSET", JOB .. id, field, entries[i + 1]) end
      end
    until cursor == "0"
    redis.call("DEL", key)
  end
end
-- The META of the queue whose layout this call last found current: a call that puts many jobs
-- into waiting (a claim promoting due delayed jobs) reads it once, not once a job. (A META, not
-- a flag: a flow's call binds other queues' keys, each with its own layout.)
local layout_checked = nil
local function ensure_layout()
  if layout_checked == META then return end
  local layout = redis.call("HGET", META, "layout")
  layout_checked = META
  if layout == LAYOUT then return end
  if layout == "2" then
    while true do
      local first = redis.call("ZRANGEBYSCORE", WAITING, "0", "0", "LIMIT", 0, 500)
      if #first == 0 then break end
      redis.call("RPUSH", WAITING0, unpack(first))
      redis.call("ZREM", WAITING, unpack(first))
    end
  end
  if layout == "2" or layout == "3" then
    job_hashes_from_fields()
  else
    redis.call("ZADD", ACTIVE, "+inf", "~" .. string.rep("-", 256))
  end
  redis.call("HSET", META, "layout", LAYOUT)
end

-- Whether a member of a state set is a job's (not the sentinel of `active`).
local function job_member(m) return string.byte(m, 1) ~= 126 end -- "~"

-- The number of jobs in `active` (its sentinel aside).
local function active_count() return redis.call("ZCOUNT", ACTIVE, "-inf", "(+inf") end

-- Adds n (a whole number) to a counter in META and returns the new value. %d formats an
-- integer directly, cheaper than the %.17g redis.call applies to a Lua number.
local function counter(name, n)
  return redis.call("HINCRBY", META, name, n == 1 and "1" or string.format("%d", n))
end

-- 14 hex digits of a non-negative integer below 2^53 (exact in Lua's doubles; %x formats a C
-- long, 64 bits here).
local function hex(n) return string.format("%014x", n) end

-- Members of the ordered sets: a sortable prefix, then the id. Orders may be negative (LIFO and
-- released jobs go first), so they are offset by 2^52 before encoding.
local ORDER_OFFSET = 4503599627370496
local function member(order, id) return hex(order + ORDER_OFFSET) .. id end

-- A waiting job's order from its stored `ord` and `seq`: `ord`, or its seq where none is
-- written (create_jobs writes one only when it differs: a smaller hash per job).
local function order_of(ord, seq) return tonumber(ord or seq or "0") end

-------------------------------------------------------------------------------- groups
-- Groups (JobOptions.group; lua/README.md, "Groups"). A grouped waiting job is in WAITING,
-- scored GROUP_OFFSET + its priority (above every ungrouped one: priorities are below 2^21),
-- so counts, listings, drain and clean see it as any waiting job; and in its group's sorted
-- set `group:<name>:waiting` (score its priority, the same member), whose head the group
-- gives at its turn. `groups:turns` scores the claimable groups by turn (META `turn`), the
-- ungrouped jobs' turn as the member "" (no group name is empty). Nothing of this is read
-- for ungrouped jobs while no group is in the turns (one EXISTS).
local GROUP_OFFSET = 4294967296
-- The group named in a job's options JSON, or nil (decoded only when the JSON names one).
local function group_of(opts_json)
  if not opts_json or not string.find(opts_json, '"group":"', 1, true) then return nil end
  local g = cjson.decode(opts_json).group
  if type(g) ~= "string" then return nil end
  return g
end
-- A group's own keys (`part` ":waiting" or ":jobs": their ends differ, so no two groups'
-- keys meet) and the keys of all groups (`groups:<part>`), built from META's name.
local function group_key(g, part) return string.sub(META, 1, -5) .. "group:" .. g .. part end
local function groups_key(part) return string.sub(META, 1, -5) .. "groups:" .. part end
-- Whether an ungrouped job waits: in the list, or at the sorted set's head below GROUP_OFFSET.
local function ungrouped_waiting()
  if redis.call("LLEN", WAITING0) > 0 then return true end
  local head = redis.call("ZRANGE", WAITING, 0, 0, "WITHSCORES")
  return head[2] ~= nil and tonumber(head[2]) < GROUP_OFFSET
end
-- Puts `name` at the back of the turns.
local function turn_add(turns, name)
  redis.call("ZADD", turns, counter("turn", 1), name)
end
-- Limits text "concurrency,rate max,rate duration,max_size" (empty: none) as numbers or nil.
local function limit_fields(text)
  if not text then return nil, nil, nil, nil end
  local c, rm, rd, ms = string.match(text, "^([^,]*),([^,]*),([^,]*),([^,]*)$")
  return tonumber(c), tonumber(rm), tonumber(rd), tonumber(ms)
end
-- Group g's limits: its overrides (`groups:limits`), each absent one the default's (META
-- `group_defaults`); nil when neither is set (no limit).
local function group_limits(g)
  local own = redis.call("HGET", groups_key("limits"), g)
  local defaults = redis.call("HGET", META, "group_defaults")
  if not own and not defaults then return nil end
  local c, rm, rd, ms = limit_fields(own)
  local dc, drm, drd, dms = limit_fields(defaults)
  if not rm then rm, rd = drm, drd end
  return {c = c or dc, rm = rm, rd = rd, ms = ms or dms}
end
-- Group g's rate window at NOW: its start and claims so far, or nil when none runs (the next
-- claim starts one, as the queue's own window: lifecycle/claim.rs `allowance`).
local function rate_window(g, lim)
  local raw = redis.call("HGET", groups_key("rate"), g)
  if not raw then return nil, 0 end
  local start, count = string.match(raw, "^(%d+) (%d+)$")
  start, count = tonumber(start), tonumber(count)
  if NOW >= start + lim.rd then return nil, 0 end
  return start, count
end
-- Holds group g out of the turns until its rate window ends (`groups:rated`, by the window's
-- end; META `group_rated_next` is the earliest, read with the claim's settings, so a claim
-- looks at the held groups only when one is due). An idle worker recomputes its wait then.
local function group_hold(g, ends)
  local text = string.format("%d", ends)
  redis.call("ZADD", groups_key("rated"), text, g)
  local next_due = tonumber(redis.call("HGET", META, "group_rated_next") or "")
  if not next_due or ends < next_due then redis.call("HSET", META, "group_rated_next", text) end
  redis.call("ZADD", MARKER, "LT", text, "w")
end
-- Whether group g may give a job now: it has one waiting, is not paused, is below its
-- concurrency and has claims left in its rate window (else it is held until the window ends).
local function group_check(g)
  if redis.call("EXISTS", group_key(g, ":waiting")) == 0 then return false end
  if redis.call("SISMEMBER", groups_key("paused"), g) == 1 then return false end
  local lim = group_limits(g)
  if not lim then return true end
  if lim.c and tonumber(redis.call("HGET", groups_key("active"), g) or "0") >= lim.c then
    return false
  end
  if lim.rm then
    local start, count = rate_window(g, lim)
    if start and count >= lim.rm then group_hold(g, start + lim.rd) return false end
  end
  return true
end
-- Group g joins the back of the turns if it is claimable and not in them (then returns true);
-- into empty turns, the ungrouped jobs' turn goes first when one waits (it was claimable
-- before). Wakes an idle worker, as wake() does.
local function group_enqueue(g)
  local turns = groups_key("turns")
  if redis.call("ZSCORE", turns, g) or not group_check(g) then return end
  if redis.call("EXISTS", turns) == 0 then
    -- META `group_turns`: the turns may exist (set here, where they begin; a claim that
    -- finds them gone clears it), read with what the ungrouped add and claim read anyway.
    redis.call("HSET", META, "group_turns", "1")
    if ungrouped_waiting() then turn_add(turns, "") end
  end
  turn_add(turns, g)
  if redis.call("HGET", META, "paused") ~= "1" then redis.call("ZADD", MARKER, "LT", "0", "w") end
  return true
end
-- An ungrouped job entered waiting: while groups take turns, the ungrouped turn joins them
-- (kept where it is if it is in them). `may` is META `group_turns` when the caller read it
-- (create_jobs), else it is read here: nothing more while no group takes turns.
local function ungrouped_enqueue(may)
  if may == nil then may = redis.call("HGET", META, "group_turns") end
  if not may then return end
  local turns = groups_key("turns")
  if redis.call("EXISTS", turns) == 1 then
    redis.call("ZADD", turns, "NX", counter("turn", 1), "")
  end
end
-- Job member `m` of group g, priority `prio` (text), enters waiting.
local function group_waiting_add(g, prio, m)
  redis.call("ZADD", WAITING, string.format("%d", GROUP_OFFSET + tonumber(prio)), m)
  redis.call("ZADD", group_key(g, ":waiting"), prio, m)
  group_enqueue(g)
end
-- A job of group g left active (finished, retried, released, delayed, stalled, removed): one
-- less against its concurrency, which may make it claimable again.
-- `k` such jobs at once (a batch's completions of the group): one count and one look at the
-- turns for the batch.
local function group_active_done(g, k)
  local key = groups_key("active")
  if redis.call("HINCRBY", key, g, -(k or 1)) <= 0 then redis.call("HDEL", key, g) end
  group_enqueue(g)
end
-- Group g's job `id` is deleted: a group left with no job, no pause and no overrides is no
-- longer listed (list_groups), and its rate window goes.
local function group_job_forget(g, id)
  local jobs = group_key(g, ":jobs")
  redis.call("ZREM", jobs, id)
  if redis.call("EXISTS", jobs) == 1 then return end
  if redis.call("SISMEMBER", groups_key("paused"), g) == 1 then return end
  if redis.call("HEXISTS", groups_key("limits"), g) == 1 then return end
  redis.call("ZREM", groups_key("known"), g)
end

-- Waiting jobs: priority 0 in the list WAITING0, the others in the sorted set WAITING (score the
-- priority), both under the same member, order then id. A job enters waiting only at the back
-- or the front of its priority (lifecycle/mod.rs `to_waiting`: a fresh seq, negated for the
-- front), so the list, pushed at its two ends, keeps the sorted set's order: newest front
-- first, then the back in seq order. A list entry costs a few bytes where a sorted set's costs
-- over a hundred (benches/history/11.md), and a push or pop is O(1); removing one from the middle
-- (remove, reschedule, a new priority) is O(n), as in BullMQ's wait list.
local function waiting_add(prio, order, id)
  if prio == "0" then
    redis.call(order < 0 and "LPUSH" or "RPUSH", WAITING0, member(order, id))
  else
    redis.call("ZADD", WAITING, prio, member(order, id))
  end
end
local function waiting_remove(id)
  ensure_layout() -- a job of layout "2" would be in WAITING
  local f = fields(id, {"prio", "ord", "seq", "opts"}) -- one read of the job's hash
  local prio, m = f[1], member(order_of(f[2], f[3]), id)
  local g = group_of(f[4])
  if g then
    redis.call("ZREM", WAITING, m)
    redis.call("ZREM", group_key(g, ":waiting"), m)
  elseif prio and prio ~= "0" then redis.call("ZREM", WAITING, m)
  else redis.call("LREM", WAITING0, 1, m) end
end
local function waiting_count()
  return redis.call("LLEN", WAITING0) + redis.call("ZCARD", WAITING)
end
-- Members from index `first` to `last` (0-based, inclusive) of all waiting jobs in claim order:
-- the list, then the sorted set.
local function waiting_range(first, last)
  local listed = redis.call("LLEN", WAITING0)
  local out = {}
  if first < listed then out = redis.call("LRANGE", WAITING0, first, math.min(last, listed - 1)) end
  if last >= listed then
    for _, m in ipairs(redis.call("ZRANGE", WAITING, math.max(first - listed, 0), last - listed)) do
      out[#out + 1] = m
    end
  end
  return out
end

-- Event ids are the META counter `event`. A script that knows how many events it is about to
-- write reserves them with one HINCRBY (`reserve_events`); `emit` takes the next reserved id,
-- or reserves one on the spot.
--
-- A call's events go out together, as one stream entry (lua/README.md, `events`): an XADD is a
-- large share of adding or processing a job (benches/history/5-10.md), while one more event in an
-- entry costs its few arguments. The entry's id is `<n>-<k>`, n the id of its last event, k
-- how many it holds; its fields are `ts` (the call's time), then per event `<name> <job id>`
-- (`""` for none: ids are never empty), then the event's own fields (event names and field
-- names differ, as a Rust test checks). Its events' ids are consecutive, so the reader numbers
-- them back from n. (Ranges and trims by event id use n, the id's first part, alone.)
local event_next, event_last = 1, 0
-- The entry being built: its arguments after the id, their count, the id of its last event,
-- how many events it holds.
local entry_args, entry_argc, entry_last, entry_events = {}, 0, 0, 0
-- An entry is written once it holds this many arguments (unpack() is bounded by Lua's C stack).
local ENTRY_ARGS = 1000
local function reserve_events(n)
  if n <= 0 then return end
  event_last = counter("event", n)
  event_next = event_last - n + 1
end

-- Writes the entry being built, if any. Approximate trimming (~, whole nodes) by id: every
-- event has one, so the newest max_events events stay, however many share an entry. A node
-- holds up to 100 entries (4 KB), so the server keeps up to a node more than that, several
-- times a small max_events; readers show only the newest max_events (`read_events` in
-- events.rs). Exact trimming (`=`) walks the oldest node's entries on every write: 78,000
-- instructions more for a single add at max_events 20 (benches/README.md, lua_cost.py). %d:
-- the integer path of sprintf; `n .. "-0"` formats with %.14g, which costs more.
local function flush_events()
  if entry_argc == 0 then return end
  local argc, events = entry_argc, entry_events
  entry_argc, entry_events = 0, 0
  local oldest = entry_last - MAX_EVENTS_N + 1
  redis.call("XADD", EVENTS, "MINID", "~", oldest > 0 and string.format("%d", oldest) or "0",
    string.format("%d-%d", entry_last, events), "ts", NOW_TEXT, unpack(entry_args, 1, argc))
end

-- Returns what it is given, once this call's events are written: every script returns
-- through it (scripts.rs wraps each body).
local function events_flushed(...)
  flush_events()
  return ...
end

local function emit(event, id, key, value, key2, value2)
  if event_next > event_last then reserve_events(1) end
  local n = event_next
  event_next = n + 1
  if MAX_EVENTS_N <= 0 then return end
  -- An entry's ids must follow each other: a gap (ids reserved and left unused) starts another.
  if entry_argc > 0 and n ~= entry_last + 1 then flush_events() end
  local a, c = entry_args, entry_argc
  a[c + 1] = event; a[c + 2] = id or ""
  c = c + 2
  if key then a[c + 1] = key; a[c + 2] = value; c = c + 2 end
  if key2 then a[c + 1] = key2; a[c + 2] = value2; c = c + 2 end
  entry_argc, entry_last, entry_events = c, n, entry_events + 1
  if c >= ENTRY_ARGS then flush_events() end
end

-- n events of one kind, one per job, each with one field: `event ids[k] key values[k]` (or
-- `key value` for all, when `value` is given); their ids reserved at once. What n
-- emit() calls write, without a call per event: a batch's completions and claims emit one
-- event a job (lua/README.md, "Redis work per job").
local function emit_each(event, ids, n, key, values, value)
  reserve_events(n)
  local first = event_next
  event_next = first + n
  if MAX_EVENTS_N <= 0 then return end
  if entry_argc > 0 and first ~= entry_last + 1 then flush_events() end
  local a, c, events = entry_args, entry_argc, entry_events
  for k = 1, n do
    a[c + 1] = event; a[c + 2] = ids[k]; a[c + 3] = key
    a[c + 4] = value or values[k]
    c, events = c + 4, events + 1
    if c >= ENTRY_ARGS then
      entry_argc, entry_last, entry_events = c, first + k - 1, events
      flush_events()
      c, events = 0, 0
    end
  end
  entry_argc, entry_last, entry_events = c, first + n - 1, events
end

-- Wakes idle workers (BZPOPMIN on MARKER); score = when the work is due: a worker popping a due
-- marker claims at once, one popping a later one recomputes its wait. A paused queue wakes
-- nobody (resuming does).
local function wake(at)
  if redis.call("HGET", META, "paused") == "1" then return end
  redis.call("ZADD", MARKER, "LT", at, "w") -- LT: the earliest wake-up wins
end

-- Puts a job at the back of its priority in waiting (front with `front`, or when LIFO).
local function to_waiting(id, front, lifo)
  local seq = counter("seq", 1)
  local order = seq
  if front or lifo then order = -seq end
  set("ord", id, string.format("%d", order))
  set("state", id, WAITING_TEXT)
  ensure_layout()
  local f = fields(id, {"prio", "opts"})
  local g = group_of(f[2])
  redis.call("HDEL", META, "drained")
  -- A grouped job wakes a worker only if its group joins the turns (group_enqueue).
  if g then group_waiting_add(g, f[1] or "0", member(order, id))
  else
    waiting_add(f[1] or "0", order, id)
    ungrouped_enqueue()
    wake("0")
  end
end

-- A job as the client reads it: the id, then every field in FIELDS order.
local function job(id)
  local out = redis.call("HMGET", JOB .. id, unpack(FIELDS))
  table.insert(out, 1, id)
  return out
end


-- A whole number as digits (tostring would switch to an exponent past 14 digits).
local function int(n) return string.format("%.0f", n) end

-- The id as Rust's {:?} shows it (the memory store's messages).
local function quoted(id)
  local escaped = string.gsub(id, "[\\\"\n\r\t]",
    {["\\"] = "\\\\", ["\""] = "\\\"", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t"})
  return "\"" .. escaped .. "\""
end

-- nil when `token` holds the live lock of job `id`, else {kind, message} (Job::check_lock),
-- from the job's stored state, token and lock expiry (false when absent).
local function check_values(id, token, state, held, expires)
  if not state then return {"missing", "job " .. quoted(id) .. " not found"} end
  if tonumber(state) ~= ACTIVE_STATE then return {"state", state} end
  if held ~= token then
    return {"lock", "job " .. quoted(id) .. " is locked by another token (its lease was lost)"}
  end
  expires = tonumber(expires or "0")
  if expires <= NOW then
    return {"lock", "job " .. quoted(id) .. ": the lock expired at " .. int(expires) ..
      " (now " .. int(NOW) .. ")"}
  end
  return nil
end

local LOCK_READS = {"state", "token", "expires"}
-- renew-2.lua's one read of a job: the lock check's fields, its member's seq, and a cancel
-- request stored with it (cancel-2.lua).
local RENEW_READS = {"state", "token", "expires", "seq", "cancel"}
local function check(id, token)
  local lock = redis.call("HMGET", JOB .. id, unpack(LOCK_READS))
  return check_values(id, token, lock[1], lock[2], lock[3])
end

-- Takes an active job out of the active set and drops its lock, and any cancel request stored
-- with it (cancel-2.lua: a request lasts while the job is active).
local function unlock(id)
  local f = fields(id, {"seq", "opts"})
  redis.call("ZREM", ACTIVE, hex(tonumber(f[1] or "0")) .. id)
  redis.call("HDEL", JOB .. id, "token", "worker", "expires", "cancel")
  local g = group_of(f[2])
  if g then group_active_done(g) end
end

-- Flow dependencies are keyed by their parent's prefix: the id's length (8 hex digits), then
-- the id, so no parent's prefix starts another's (see flows.lua).
local function dep_prefix(parent) return string.format("%08x", #parent) .. parent end

-- A job's own dependencies (as a flow's parent) go with it; its pending children then run on
-- their own. DEPS members are prefix .. bucket (one character) .. child key.
local function forget_dependencies(id)
  local prefix = dep_prefix(id)
  local members = redis.call("ZRANGEBYLEX", DEPS, "[" .. prefix, "(" .. prefix .. "\255")
  if #members == 0 then return end
  zrem(DEPS, members)
  local fields = {}
  for i, m in ipairs(members) do fields[i] = prefix .. string.sub(m, #prefix + 2) end
  chunked("HDEL", DEPS_VALUES, fields, 1)
end

-- Deletes job `id` and its data; `unlisted`: its state set no longer holds it (a drain or clean
-- took many waiting jobs off the list at once, sparing a scan of the list per job).
local function delete(id, unlisted)
  local f = fields(id, {"state", "seq", "opts", "ord"})
  local state, seq = tonumber(f[1]), tonumber(f[2] or "0")
  local sets = {[WAITING_STATE] = WAITING, [DELAYED_STATE] = DELAYED, [ACTIVE_STATE] = ACTIVE,
    [CHILDREN_STATE] = CHILDREN, [COMPLETED_STATE] = COMPLETED, [FAILED_STATE] = FAILED}
  local g = group_of(f[3])
  if unlisted then -- nothing to take out but the group's own waiting set
    if g and state == WAITING_STATE then
      redis.call("ZREM", group_key(g, ":waiting"), member(order_of(f[4], f[2]), id))
    end
  elseif state == WAITING_STATE then waiting_remove(id)
  elseif sets[state] then redis.call("ZREM", sets[state], hex(seq) .. id) end
  if g then
    if state == ACTIVE_STATE then group_active_done(g) end
    group_job_forget(g, id)
  end
  redis.call("DEL", JOB .. id)
  redis.call("HDEL", LOGS, id)
  forget_dependencies(id)
end

-- Applies a retention policy (remove_on_complete / remove_on_fail) to a finished set.
local function retain(set_key, policy, just_finished)
  if policy == "keep_all" or policy == nil then return end
  if policy == "remove_all" then delete(just_finished) return end
  local keep = policy.keep
  local limit = (keep.limit ~= cjson.null and keep.limit) or math.huge
  local doomed = {}
  if keep.count ~= cjson.null and keep.count then
    local over = redis.call("ZCARD", set_key) - keep.count
    if over > 0 then doomed = redis.call("ZRANGE", set_key, 0, math.min(over, limit) - 1) end
  end
  if keep.age ~= cjson.null and keep.age then
    -- Finished at or before NOW - age (as BullMQ: a job exactly that old goes).
    for _, m in ipairs(redis.call("ZRANGEBYSCORE", set_key, "-inf", NOW - keep.age)) do
      doomed[#doomed + 1] = m
    end
  end
  local seen, removed = {}, 0
  for _, m in ipairs(doomed) do
    if removed >= limit then break end
    if not seen[m] then
      seen[m] = true
      removed = removed + 1
      delete(string.sub(m, 15))
    end
  end
end
