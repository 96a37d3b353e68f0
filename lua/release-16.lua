-- release: ARGV = now, max_events, job id, token. Gives an active job back to the front of its
-- priority in waiting without using an attempt, also once its lease ran out. Returns {} when
-- released, or {kind, message} with kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local id, token = ARGV[3], ARGV[4]

-- A lease that ran out still gives the job back while its token holds it (stalled recovery
-- did not take it): Job::check_holder. So the expiry is not checked.
local lock = redis.call("HMGET", JOB .. id, "state", "token")
local refused = check_values(id, token, lock[1], lock[2], NOW + 1)
if refused then return refused end
unlock(id)
set("attempts", id, math.max(num("attempts", id) - 1, 0))
to_waiting(id, true)
emit("waiting", id, "prev", "active")
return {}
