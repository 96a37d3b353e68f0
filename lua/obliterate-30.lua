-- obliterate: ARGV = now, max_events, force (0/1). Pauses the queue first (event paused if it
-- was not). Without force, a queue with active jobs is left so (paused) and {"active", count}
-- is returned: a reply, not an error, so the pause stays. Otherwise every key of the queue is
-- deleted (jobs, logs, events, settings) but the counters in META: ids and event ids keep
-- growing, as on the other backends, so a follower of the stream never sees an id again. The
-- queue is empty, not paused, with no rate limit and no active cap. Returns {"ok"}.
local now, max_events, force = tonumber(ARGV[1]), ARGV[2], ARGV[3] == "1"

if redis.call("HGET", META, "paused") ~= "1" then
  redis.call("HSET", META, "paused", "1")
  emit(now, max_events, "paused")
end
local active = redis.call("ZCARD", ACTIVE)
if not force and active > 0 then return {"active", active} end
local counters = redis.call("HMGET", META, "id", "seq", "event")
redis.call("DEL", unpack(KEYS))
for i, name in ipairs({"id", "seq", "event"}) do
  if counters[i] then redis.call("HSET", META, name, counters[i]) end
end
return {"ok"}
