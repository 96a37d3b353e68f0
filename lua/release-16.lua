-- release: ARGV = now, max_events, job id, token. Gives an active job back to the front of its
-- priority in waiting without using an attempt. Returns {} when released, or {kind, message}
-- with kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local id, token = ARGV[3], ARGV[4]

local refused = check(id, token)
if refused then return refused end
unlock(id)
set("attempts", id, math.max(num("attempts", id) - 1, 0))
to_waiting(id, true)
emit("waiting", id, "prev", "active")
return {}
