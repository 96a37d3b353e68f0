-- pause / resume: ARGV = now, max_events, "pause" or "resume". Sets or clears META paused
-- ("1"); emits paused / resumed only when that changes (resuming also wakes idle workers).
-- Returns {"ok"}.
local now, max_events, op = tonumber(ARGV[1]), ARGV[2], ARGV[3]

local paused = redis.call("HGET", META, "paused") == "1"
if op == "pause" and not paused then
  redis.call("HSET", META, "paused", "1")
  emit("paused")
elseif op == "resume" and paused then
  redis.call("HDEL", META, "paused")
  emit("resumed")
  wake("0")
end
return {"ok"}
