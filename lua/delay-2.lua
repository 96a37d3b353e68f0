-- move_to_delayed: ARGV = now, max_events, job id, token, until (ms). Gives an active job back to
-- the delayed set (due at max(until, now)) without using an attempt. Returns {} when moved, or
-- {kind, message} with kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local id, token, wanted = ARGV[3], ARGV[4], tonumber(ARGV[5])

local refused = check(id, token)
if refused then return refused end
unlock(id)
set("attempts", id, math.max(num("attempts", id) - 1, 0))
local due = math.max(wanted, now)
set("state", id, DELAYED_STATE)
set("delay", id, int(due))
redis.call("ZADD", DELAYED, int(due), hex(num("seq", id)) .. id)
wake(int(due))
emit("delayed", id, "delay", int(wanted))
return {}
