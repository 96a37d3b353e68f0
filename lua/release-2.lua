-- release: ARGV = now, max_events, job id, token. Gives an active job back to the front of its
-- priority in waiting without using an attempt, and without its start time and progress,
-- also once its lease ran out; a job whose cancel was requested (cancel-2.lua) fails for
-- good with the request's reason instead (its attempt counted, as any failure's), as a
-- cancelled waiting job does. Returns {} when released (or so failed), or {kind, message} with
-- kind "missing", "state" or "lock".
local now, max_events = tonumber(ARGV[1]), ARGV[2]
local id, token = ARGV[3], ARGV[4]

-- A lease that ran out still gives the job back while its token holds it (stalled recovery
-- did not take it): Job::check_holder. So the expiry is not checked.
local lock = redis.call("HMGET", JOB .. id, "state", "token", "cancel")
local refused = check_values(id, token, lock[1], lock[2], NOW + 1)
if refused then return refused end
local cancel = lock[3]
if cancel then
  -- (its parent, in another queue maybe, hears of it: checked before anything is written)
  local opts_json = opts_of(id)
  need_chain(opts_json)
  unlock(id)
  cancel_for_good(id, cancel, cjson.decode(opts_json), opts_json)
  return {}
end
unlock(id)
set("attempts", id, math.max(num("attempts", id) - 1, 0))
-- (as if never started: no start time, and no progress of the run given back; Job::forget_run)
set("processed", id, nil)
set("progress", id, nil)
to_waiting(id, true)
emit("waiting", id, "prev", "active")
return {}
