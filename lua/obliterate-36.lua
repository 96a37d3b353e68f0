-- obliterate: ARGV = now, max_events, force (0/1). Pauses the queue first (event paused if it
-- was not). Without force, a queue with active jobs is left so (paused) and {"active", count}
-- is returned: a reply, not an error, so the pause stays. Otherwise every key of the queue is
-- deleted, counters included (as BullMQ does: nothing of the queue is left on the server), so
-- automatic ids and event ids start again from 1. The queue is empty, not paused, with no rate
-- limit and no active cap. Returns {"ok"}.
local now, max_events, force = tonumber(ARGV[1]), ARGV[2], ARGV[3] == "1"

if redis.call("HGET", META, "paused") ~= "1" then
  redis.call("HSET", META, "paused", "1")
  emit("paused")
end
local active = redis.call("ZCARD", ACTIVE)
if not force and active > 0 then return {"active", active} end
-- This queue's keys only: the blocks after them belong to queues linked by flows.
redis.call("DEL", unpack(KEYS, 1, BLOCK))
return {"ok"}
