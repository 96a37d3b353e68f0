-- add_bulk (and add): ARGV = now, max_events, then 7 values per job: name, data, options JSON,
-- job id ("" for an automatic one), priority, lifo (0/1), delay (ms). Every job was validated by
-- the client before this runs. Returns, per job, {0, job...} when its custom id existed, or
-- {1, id, seq, order} for a new job (the client knows the rest: it sent it).
-- New jobs are written a field at a time for the whole batch (one HSET per field), and their
-- ids, sequence numbers and event ids are reserved with one HINCRBY each.
local now = NOW
ensure_layout()

-- Custom ids that exist already, or repeat an earlier job of this batch, are duplicates.
local custom = {}
for i = 3, #ARGV, 7 do
  if ARGV[i + 3] ~= "" then custom[#custom + 1] = ARGV[i + 3] end
end
local existing, taken = {}, {}
for k, state in ipairs(mget("state", custom)) do
  if state then existing[custom[k]] = true end
end

-- Which jobs are new, and how many automatic ids they need.
local jobs, autos, fresh, events = {}, 0, 0, 0
for i = 3, #ARGV, 7 do
  local id = ARGV[i + 3]
  if id ~= "" and (existing[id] or taken[id]) then
    jobs[#jobs + 1] = {dup = id}
    events = events + 1
  else
    if id == "" then autos = autos + 1 else taken[id] = true end
    jobs[#jobs + 1] = {arg = i, id = id}
    fresh = fresh + 1
    events = events + 2
  end
end

local next_id = autos > 0 and counter("id", autos) - autos + 1 or 0
-- Two sequence numbers per new job: its seq and its place in waiting (to_waiting's order).
local next_seq = fresh > 0 and counter("seq", 2 * fresh) - 2 * fresh + 1 or 0
reserve_events(events)

local columns = {name = {}, data = {}, opts = {}, prio = {}, seq = {}, created = {},
  attempts = {}, stalled = {}, progress = {}, trace = {}, delay = {}, state = {}, ord = {}}
local waiting, delayed = {}, {}
local waiting_state, delayed_state = tostring(WAITING_STATE), tostring(DELAYED_STATE)
local out = {}
for k, entry in ipairs(jobs) do
  if entry.dup then
    emit("duplicated", entry.dup)
  else
    local i = entry.arg
    local id = entry.id
    if id == "" then id = tostring(next_id); next_id = next_id + 1 end
    local seq, order = next_seq, next_seq + 1
    next_seq = next_seq + 2
    local name, delay = ARGV[i], tonumber(ARGV[i + 6])
    for field, value in pairs({name = name, data = ARGV[i + 1], opts = ARGV[i + 2],
        prio = ARGV[i + 4], seq = seq, created = NOW_TEXT, attempts = "0", stalled = "0",
        progress = "0", trace = "[]"}) do
      push2(columns[field], id, value)
    end
    emit("added", id, "name", name)
    if delay > 0 then
      order = seq
      local due = int(now + delay)
      push2(columns.state, id, delayed_state)
      push2(columns.delay, id, due)
      push2(delayed, due, hex(seq) .. id)
      emit("delayed", id, "delay", due)
    else
      if ARGV[i + 5] == "1" then order = -order end
      push2(columns.state, id, waiting_state)
      push2(columns.delay, id, "0")
      push2(waiting, ARGV[i + 4], member(order, id))
      emit("waiting", id)
    end
    push2(columns.ord, id, order)
    out[k] = {1, id, seq, order}
  end
end

for field, pairs_ in pairs(columns) do mset(field, pairs_) end
zadd(DELAYED, delayed)
-- Duplicates are read once every new job is written (the original may be in this batch).
for k, entry in ipairs(jobs) do
  if entry.dup then out[k] = {0, job(entry.dup)} end
end
if #waiting > 0 then
  zadd(WAITING, waiting)
  redis.call("HDEL", META, "drained")
end
-- Any new job wakes idle workers: they claim, or recompute when the next delayed one is due.
if fresh > 0 then wake(0) end
return out
