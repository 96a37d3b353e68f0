-- cancel: ARGV = now, max_events, job id, reason (lifecycle/cancel.rs; the semantics every
-- backend gives are JobCancels's).
--   waiting, delayed, waiting for children: a `cancelled` event, then it fails for good now
--     with the reason (cancel_for_good: a stack trace entry "JobCancelledError: <reason>", then
--     fail_for_good's events and effects). Returns {"failed"}.
--   active: the request is stored with the job (its field `cancel`, which every way out of
--     active drops, and renew-2.lua answers) and pushed to the workers: an entry of the
--     stream `cancels` (built from META's name, so in the queue's slot) whose id is the
--     request's seq, the META counter `cancels`: `<seq>-0`, fields `job` and `reason`. The
--     workers block on it (XREAD, cancels.rs). It keeps about the newest 1,000 requests, and
--     goes a minute after the last one (its expiry): older requests are the renewal's to
--     answer. A `cancelled` event follows. Returns {"requested", seq}; a second cancel sends
--     the request again, with the new reason.
--   completed, failed: nothing changes. Returns {"finished"}.
--   no such job: {"missing"}.
local id, reason = ARGV[3], ARGV[4]
-- A request older than this may be gone (JobCancels::wait_cancels), and this many are kept.
local CANCELS_TTL_MS, CANCELS_KEPT = "60000", "1000"

local f = fields(id, {"state", "opts"})
local state = tonumber(f[1])
if not state then return {"missing"} end
if state == COMPLETED_STATE or state == FAILED_STATE then return {"finished"} end
if state == ACTIVE_STATE then
  redis.call("HSET", JOB .. id, "cancel", reason)
  local seq = counter("cancels", 1)
  local cancels = string.sub(META, 1, -5) .. "cancels"
  redis.call("XADD", cancels, "MAXLEN", "~", CANCELS_KEPT, string.format("%d-0", seq), "job", id,
    "reason", reason)
  redis.call("PEXPIRE", cancels, CANCELS_TTL_MS)
  emit("cancelled", id, "reason", reason)
  return {"requested", seq}
end
local opts_json = f[2] or "{}"
-- (its parent, in another queue maybe, hears of it: checked before anything is written)
need_chain(opts_json)
if state == WAITING_STATE then
  waiting_remove(id)
else
  local set_key = state == DELAYED_STATE and DELAYED or CHILDREN
  redis.call("ZREM", set_key, hex(num("seq", id)) .. id)
end
emit("cancelled", id, "reason", reason)
cancel_for_good(id, reason, cjson.decode(opts_json), opts_json)
return {"failed"}
