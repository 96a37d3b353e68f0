-- Edits of one job's fields. ARGV = now, max_events, op, job id, then by op:
--   "data", data                        update_data
--   "progress", progress                update_progress (event progress{data})
--   "trace", trace JSON, has reason (0/1), reason    save_stacktrace
-- Returns {"ok"} or {"missing"}.
local now, max_events, op, id = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]

if not get("state", id) then return {"missing"} end
-- A claim reads progress, trace and reason only for jobs tried before (attempts stored, see
-- claim_jobs): a job that gets one of them before its first claim gets attempts 0 with it.
if op ~= "data" then redis.call("HSETNX", jkey(id), "attempts", "0") end
if op == "data" then
  set("data", id, ARGV[5])
elseif op == "progress" then
  set("progress", id, ARGV[5])
  emit("progress", id, "data", ARGV[5])
elseif op == "trace" then
  set("trace", id, ARGV[5])
  if ARGV[6] == "1" then set("reason", id, ARGV[7]) end
else
  return redis.error_reply("edit: unknown op " .. op)
end
return {"ok"}
