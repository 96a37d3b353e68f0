-- obliterate: ARGV = now, max_events, force (0/1). Pauses the queue first (event paused if it
-- was not). Without force, a queue with active jobs is left so (paused) and {"active", count}
-- is returned: a reply, not an error, so the pause stays. Otherwise every key of the queue is
-- deleted, counters included (as BullMQ does: nothing of the queue is left on the server), so
-- automatic ids and event ids start again from 1. The queue is empty, not paused, with no rate
-- limit and no active cap. Returns {"ok"}.
local now, max_events, force = tonumber(ARGV[1]), ARGV[2], ARGV[3] == "1"

-- Unfinished children of parents in other queues leave them (lua/includes/flows.lua), and so
-- do failed ones (a keep_parent_waiting child is still pending); parents here go with the
-- queue. Found (and the other queues' keys checked) before anything is written.
local orphans = {}
if home() then
  for _, set_key in ipairs({WAITING0, WAITING, DELAYED, ACTIVE, CHILDREN, FAILED}) do
    local ids = {}
    local members = set_key == WAITING0 and redis.call("LRANGE", set_key, 0, -1)
      or redis.call("ZRANGE", set_key, 0, -1)
    for _, m in ipairs(members) do
      if job_member(m) then ids[#ids + 1] = string.sub(m, 15) end
    end
    for i, opts_json in ipairs(opts_all(ids)) do
      local parent = parent_of(opts_json)
      if parent and parent.queue ~= home() then
        need_chain(opts_json)
        orphans[#orphans + 1] = {parent, ids[i]}
      end
    end
  end
end

if redis.call("HGET", META, "paused") ~= "1" then
  redis.call("HSET", META, "paused", "1")
  emit("paused")
end
local active = active_count()
if not force and active > 0 then return {"active", active} end
for _, orphan in ipairs(orphans) do flow_apply(orphan[1], orphan[2], "removed") end
-- This queue's keys only: the blocks after them belong to queues linked by flows. Its events
-- are written first, so that they go too (not left behind in a new stream).
flush_events()
-- Every job's hash: those of the jobs in the state sets (a job is always in one; what a crash
-- or a hand edit left outside them is remove_orphaned_jobs' to find).
for _, set_key in ipairs({WAITING0, WAITING, DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED}) do
  local members = set_key == WAITING0 and redis.call("LRANGE", set_key, 0, -1)
    or redis.call("ZRANGE", set_key, 0, -1)
  local keys = {}
  for _, m in ipairs(members) do
    if job_member(m) then keys[#keys + 1] = jkey(string.sub(m, 15)) end
  end
  for first = 1, #keys, CHUNK do
    redis.call("DEL", unpack(keys, first, math.min(first + CHUNK - 1, #keys)))
  end
end
-- The groups' keys, settings included.
for _, g in ipairs(redis.call("ZRANGE", groups_key("known"), 0, -1)) do
  redis.call("DEL", group_key(g, ":waiting"), group_key(g, ":jobs"))
end
redis.call("DEL", groups_key("known"), groups_key("turns"), groups_key("limits"),
  groups_key("paused"), groups_key("active"), groups_key("rate"), groups_key("rated"))
redis.call("DEL", META, WAITING, WAITING0, DELAYED, ACTIVE, CHILDREN, COMPLETED, FAILED, LOGS,
  EVENTS, MARKER, DEDUP, DEDUP_EXPIRY, SCHEDULERS, SCHEDULERS_NEXT, DEPS, DEPS_VALUES)
-- The cancel requests' stream (cancel-2.lua), built from META's name as the job hashes are.
redis.call("DEL", string.sub(META, 1, -5) .. "cancels")
return {"ok"}
