-- retry_job: ARGV = now, max_events, job id, reset attempts ("1"/"0"). Runs a completed or
-- failed job again: back of its priority in waiting (front when LIFO), with finish and process
-- times, result and failure reason cleared; as BullMQ's job.retry(), the attempts made stay
-- unless reset, and the stalled count stays (lifecycle::retry_job). A deduplicated job takes
-- its dedup key back. Returns {"ok"}, or {"missing"} / {"state", state code} / {"refused",
-- message} (another job holds its key).
local now, max_events, id, reset_attempts = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4] == "1"
local FINISHED = {[COMPLETED_STATE] = {COMPLETED, "completed"}, [FAILED_STATE] = {FAILED, "failed"}}

local state = get("state", id)
if not state then return {"missing"} end
local finished = FINISHED[tonumber(state)]
if not finished then return {"state", state} end
local opts_json = opts_of(id)
need_chain(opts_json)
local refused = dedup_on_retry(id, opts_json)
if refused then return {"refused", refused} end
flow_on_retry(id, opts_json)
redis.call("ZREM", finished[1], hex(num("seq", id)) .. id)
if reset_attempts then set("attempts", id, 0) end
for _, field in ipairs({"finished", "reason", "result", "processed"}) do set(field, id, nil) end
to_waiting(id, false, cjson.decode(opts_json).lifo)
emit("waiting", id, "prev", finished[2])
return {"ok"}
