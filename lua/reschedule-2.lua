-- reschedule: ARGV = now, max_events, job id, due time (ms), "1" to take a waiting job too
-- (delay_job) or "0" (reschedule: BullMQ's changeDelay, delayed jobs only). Makes the job
-- delayed until then (its order and sequence stay). Returns {"ok"}, or {"missing"} /
-- {"state", state code}.
local now, max_events, id, due = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local waiting_too = ARGV[5] == "1"

local state = get("state", id)
if not state then return {"missing"} end
state = tonumber(state)
if state == WAITING_STATE and waiting_too then
  waiting_remove(id)
elseif state == DELAYED_STATE then
  redis.call("ZREM", DELAYED, hex(num("seq", id)) .. id)
else
  return {"state", state}
end
set("state", id, DELAYED_STATE)
set("delay", id, due)
redis.call("ZADD", DELAYED, due, hex(num("seq", id)) .. id)
wake(due)
emit("delayed", id, "delay", due)
return {"ok"}
